//! What each message to the worker is, as far as its decisions go: the vocabulary of the
//! request table (`request.rs`), read by the hand-off, the commit policy, the write gate
//! and the fence.

use crate::worker::schedule::Commit;

/// What a message is, as far as the worker's decisions go (see the module docs).
#[derive(Clone, Copy)]
pub(crate) struct Kind<'a> {
    /// Answered in microseconds (unless the worker is busy): only for these may the caller
    /// poll for the answer, and the worker poll its queue afterwards (`handoff.rs`).
    pub quick: bool,
    /// Writes to the database: refused while acknowledged writes wait to be applied again
    /// (`group_commit.rs`).
    pub writes: bool,
    /// What its changes mean for the commit (`schedule.rs`).
    pub commit: Commit,
    /// What it reads or writes, as far as a rewrite is concerned (`fence.rs`).
    pub touches: Touches<'a>,
    /// Whether it waits while the privacy rules are applied to the past (`fence.rs`).
    pub waits_for_privacy_run: bool,
    /// Whether it is a rewrite of stored history, run in steps, all or nothing
    /// (`rewrite.rs`), and what it holds back while it runs.
    pub rewrite: Option<Holds>,
}

impl Kind<'_> {
    /// The kind a row of the table declares.
    pub(crate) fn of(row: Row<'_>) -> Kind<'_> {
        let (quick, writes, commit, touches, waits_for_privacy_run, rewrite) = row;
        Kind {
            quick,
            writes,
            commit,
            touches,
            waits_for_privacy_run,
            rewrite,
        }
    }
}

/// What a message reads or writes, as far as a rewrite is concerned.
#[derive(Clone, Copy)]
pub(crate) enum Touches<'a> {
    /// No bucket (settings, the worker itself).
    Nothing,
    /// One bucket, or two (a rename's new id, a merge's target).
    Buckets(&'a str, Option<&'a str>),
    /// These buckets.
    List(&'a [String]),
    /// Every bucket, or the commit (an import, a privacy run, a commit, a scrub).
    Everything,
}

/// What a rewrite holds back while it runs (`fence.rs`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// The requests that touch its buckets (a range deletion, a merge).
    ItsBuckets,
    /// The requests the privacy rules' run holds (a range deletion's scope is its buckets;
    /// this one's is every event, judged by the rules).
    History,
}

/// A row of the request table: quick, writes, commit, touches, waits for a privacy run,
/// rewrite (see [`Kind`]).
pub(crate) type Row<'a> = (bool, bool, Commit, Touches<'a>, bool, Option<Holds>);

/// A request that touches one bucket.
pub(crate) fn one(bucket: &str) -> Touches<'_> {
    Touches::Buckets(bucket, None)
}
