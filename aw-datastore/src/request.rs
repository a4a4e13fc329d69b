//! The messages the handle sends to the worker thread.

use aw_models::Bucket;
use tokio::sync::oneshot;

use crate::error::{DatastoreError, Result};
use crate::new_event::NewEvent;
use crate::schedule::Commit;
use aw_models::raw_event::{EventRows, RawEvent, TextRows};

/// Where the worker sends a reply; the caller awaits or blocks on the other end.
pub(crate) type Reply<T> = oneshot::Sender<Result<T>>;

/// Where the rows of an event read go.
pub(crate) enum RowSink {
    /// All of them in one answer.
    Whole(Reply<EventRows>),
    /// Each step's rows as soon as they are read, with their data texts as stored, so the
    /// caller works on them while the rest are read; the channel closes after the last (an
    /// error ends it).
    Texts(crossbeam_channel::Sender<Result<TextRows>>),
}

impl RowSink {
    /// Ends the read with `error` (a caller that went away is no error).
    pub(crate) fn fail(self, error: DatastoreError) {
        match self {
            RowSink::Whole(reply) => {
                let _ = reply.send(Err(error));
            }
            RowSink::Texts(parts) => {
                let _ = parts.send(Err(error));
            }
        }
    }
}

/// One operation for the worker, with the channel its answer goes back on.
pub(crate) enum Request {
    /// Creates the bucket and inserts its events (ids ignored) in one step.
    CreateBucket(Box<Bucket>, Vec<NewEvent>, Reply<()>),
    /// Creates missing buckets; merges events into existing ones, skipping duplicates.
    Import(Vec<(Bucket, Vec<NewEvent>)>, Reply<()>),
    DeleteBucket(String, Reply<()>),
    InsertEvents(String, Vec<NewEvent>, Reply<Vec<RawEvent>>),
    Heartbeat(String, NewEvent, i64, Reply<RawEvent>),
    GetEvents {
        bucket: String,
        start: Option<i64>,
        end: Option<i64>,
        limit: Option<u64>,
        clip: bool,
        reply: RowSink,
    },
    GetEvent(String, i64, Reply<RawEvent>),
    /// Applies the privacy rules to the stored history (or, dry, counts what they would do).
    ApplyPrivacy {
        /// Only count.
        dry_run: bool,
        /// The answer.
        reply: Reply<crate::PrivacyReport>,
    },
    /// Removes what a rewrite left readable beside the database: commits, checkpoints the
    /// WAL into the file and truncates it, and wipes the journal.
    Scrub(Reply<()>),
    /// Replaces one event of a bucket (never inserts).
    ReplaceEvent(String, i64, NewEvent, Reply<RawEvent>),
    /// Renames a bucket and/or moves it to another host.
    RenameBucket {
        /// The bucket.
        bucket: String,
        /// Its new id.
        name: Option<String>,
        /// Its new host.
        hostname: Option<String>,
        /// The answer.
        reply: Reply<()>,
    },
    /// Moves every event of `from` into `into` and deletes `from`.
    MergeBuckets {
        /// The bucket merged away.
        from: String,
        /// The bucket that stays.
        into: String,
        /// The answer.
        reply: Reply<crate::Merge>,
    },
    /// Deletes events of a bucket by id; answers the ids that were not the bucket's events.
    DeleteEvents(String, Vec<i64>, Reply<Vec<i64>>),
    /// Deletes (or with `dry_run` counts) what lies in `[lo, hi)` of some buckets, all or
    /// nothing.
    DeleteRange {
        /// The buckets.
        buckets: Vec<String>,
        /// Start of the range (ns).
        lo: i64,
        /// End of the range (ns), after `lo`.
        hi: i64,
        /// Only count.
        dry_run: bool,
        /// The number of events it must change (deleted and cut), as a preview said: any
        /// other number ends it with [`DatastoreError::Changed`], nothing changed.
        expect: Option<u64>,
        /// The answer.
        reply: Reply<crate::RangeDeletion>,
    },
    CountEvents(String, Option<i64>, Option<i64>, Reply<u64>),
    GetKeyValue(String, Reply<String>),
    SetKeyValue(String, String, Reply<()>),
    DeleteKeyValue(String, Reply<()>),
    GetKeyValues(String, Reply<Vec<(String, String)>>),
    /// Answered once everything before it is committed.
    ForceCommit(Reply<()>),
    /// Commit and stop; answered after the final commit.
    Close(Reply<()>),
    /// Holds the worker between two turns: answered at once, then nothing runs until the
    /// receiver's sender is dropped ([`crate::WorkerHold`]). The files are then as a kill
    /// at this instant would leave them.
    Hold(Reply<()>, crossbeam_channel::Receiver<()>),
}

/// Reads and inserts of at most this many events are quick requests.
const QUICK_ROWS: usize = 200;

impl Request {
    /// Whether the worker answers this request in microseconds (unless it is busy): a
    /// heartbeat, a small insert or read, a setting. Only for these may the caller poll for
    /// the answer, and the worker poll its queue afterwards (`handoff.rs`), since clients
    /// send them back to back. (A count over a time range walks the range: milliseconds for
    /// a month, so it is not quick.)
    pub(crate) fn is_quick(&self) -> bool {
        match self {
            Request::Heartbeat(..)
            | Request::GetEvent(..)
            | Request::GetKeyValue(..)
            | Request::SetKeyValue(..)
            | Request::DeleteKeyValue(..) => true,
            Request::InsertEvents(_, events, _) => events.len() <= QUICK_ROWS,
            Request::DeleteEvents(_, ids, _) => ids.len() <= QUICK_ROWS,
            Request::GetEvents { limit, .. } => limit.is_some_and(|l| l <= QUICK_ROWS as u64),
            Request::ReplaceEvent(..) => true,
            Request::CreateBucket(..)
            | Request::DeleteRange { .. }
            | Request::RenameBucket { .. }
            | Request::MergeBuckets { .. }
            | Request::ApplyPrivacy { .. }
            | Request::Scrub(..)
            | Request::CountEvents(..)
            | Request::Import(..)
            | Request::DeleteBucket(..)
            | Request::GetKeyValues(..)
            | Request::ForceCommit(..)
            | Request::Close(..)
            | Request::Hold(..) => false,
        }
    }
}

impl Request {
    /// What the request's changes mean for the commit (the policy is in `schedule.rs`).
    pub(crate) fn commit(&self) -> Commit {
        match self {
            Request::Heartbeat(..) | Request::InsertEvents(..) => Commit::Counted,
            Request::CreateBucket(..)
            | Request::DeleteBucket(..)
            | Request::Import(..)
            | Request::DeleteRange { .. }
            | Request::RenameBucket { .. }
            | Request::MergeBuckets { .. }
            | Request::ApplyPrivacy { .. } => Commit::Now,
            Request::Scrub(..) => Commit::Later,
            Request::ReplaceEvent(..) => Commit::Later,
            Request::DeleteEvents(..)
            | Request::SetKeyValue(..)
            | Request::DeleteKeyValue(..)
            | Request::GetEvents { .. }
            | Request::GetEvent(..)
            | Request::CountEvents(..)
            | Request::GetKeyValue(..)
            | Request::GetKeyValues(..)
            | Request::ForceCommit(..)
            | Request::Close(..)
            | Request::Hold(..) => Commit::Later,
        }
    }

    /// Whether the request writes to the database (and so must wait while acknowledged
    /// writes are not in a transaction: see `group_commit.rs`).
    pub(crate) fn is_write(&self) -> bool {
        match self {
            Request::CreateBucket(..)
            | Request::Import(..)
            | Request::DeleteBucket(..)
            | Request::InsertEvents(..)
            | Request::Heartbeat(..)
            | Request::DeleteEvents(..)
            | Request::SetKeyValue(..)
            | Request::DeleteKeyValue(..) => true,
            Request::DeleteRange { dry_run, .. } => !dry_run,
            Request::ApplyPrivacy { dry_run, .. } => !dry_run,
            Request::ReplaceEvent(..)
            | Request::RenameBucket { .. }
            | Request::MergeBuckets { .. }
            | Request::Scrub(..) => true,
            Request::GetEvents { .. }
            | Request::GetEvent(..)
            | Request::CountEvents(..)
            | Request::GetKeyValue(..)
            | Request::GetKeyValues(..)
            | Request::ForceCommit(..)
            | Request::Close(..)
            | Request::Hold(..) => false,
        }
    }

    /// Answers the request with `error` without running it (a caller that went away is no
    /// error).
    pub(crate) fn refuse(self, error: DatastoreError) {
        match self {
            Request::CreateBucket(_, _, r)
            | Request::Import(_, r)
            | Request::DeleteBucket(_, r)
            | Request::SetKeyValue(_, _, r)
            | Request::DeleteKeyValue(_, r)
            | Request::ForceCommit(r)
            | Request::Close(r)
            | Request::Hold(r, _) => {
                let _ = r.send(Err(error));
            }
            Request::InsertEvents(_, _, r) => {
                let _ = r.send(Err(error));
            }
            Request::DeleteRange { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Request::DeleteEvents(_, _, r) => {
                let _ = r.send(Err(error));
            }
            Request::ReplaceEvent(_, _, _, r) => {
                let _ = r.send(Err(error));
            }
            Request::RenameBucket { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Request::MergeBuckets { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Request::ApplyPrivacy { reply, .. } => {
                let _ = reply.send(Err(error));
            }
            Request::Scrub(reply) => {
                let _ = reply.send(Err(error));
            }
            Request::Heartbeat(_, _, _, r) | Request::GetEvent(_, _, r) => {
                let _ = r.send(Err(error));
            }
            Request::GetEvents { reply, .. } => reply.fail(error),
            Request::CountEvents(_, _, _, r) => {
                let _ = r.send(Err(error));
            }
            Request::GetKeyValue(_, r) => {
                let _ = r.send(Err(error));
            }
            Request::GetKeyValues(_, r) => {
                let _ = r.send(Err(error));
            }
        }
    }
}
