//! The requests that rewrite stored history: a range deleted, buckets compacted, the
//! privacy rules applied to the past, and the scrub that removes what a rewrite left readable beside the file.

use aw_models::timestamp;
use chrono::{DateTime, Utc};

use crate::error::{DatastoreError, Result};
use crate::handle::{Answer, Datastore};
use crate::store::{Compaction, PrivacyReport, RangeDeletion, Reclaimed};
use crate::worker::{CompactionAsked, Control, Request, Rules, RulesAsked};

impl Datastore {
    /// Deletes what lies in `[start, end)` of each of `buckets`, all or nothing: events
    /// inside are deleted, events across an edge are cut at it (see
    /// `store/range_delete.rs`); with `dry_run`, nothing changes and the answer says what
    /// would. The next heartbeat never extends an event this cut. Fails with
    /// [`DatastoreError::InvalidEvent`] unless `start < end`, and with
    /// [`DatastoreError::NoSuchBucket`] (changing nothing) when one is missing. With
    /// `expect` (what a preview counted, deleted and cut), any other count fails with
    /// [`DatastoreError::Changed`] and changes nothing: what the user saw is what goes.
    pub fn delete_range(
        &self,
        buckets: &[String],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        dry_run: bool,
        expect: Option<u64>,
    ) -> Answer<RangeDeletion> {
        let (lo, hi) = (
            timestamp::to_ns_saturating(&start),
            timestamp::to_ns_saturating(&end),
        );
        if lo >= hi {
            return Answer::ready(DatastoreError::InvalidEvent(
                "the range is empty: start must be before end".into(),
            ));
        }
        self.ask(|reply| Request::DeleteRange {
            buckets: buckets.to_vec(),
            lo,
            hi,
            dry_run,
            expect,
            reply,
        })
    }

    /// Compacts `buckets` (`store/compaction.rs`): merges the events `flood` would join and
    /// removes duplicates, all or nothing, so that what the queries make of them does not
    /// change; with `dry_run`, nothing changes and the answer says what would. Fails with
    /// [`DatastoreError::NoSuchBucket`] (changing nothing) when one is missing, and with
    /// [`DatastoreError::Changed`] when `expect` (the events a preview said would go) is
    /// not what would go now. The caller picks the buckets: only those whose every query
    /// floods them (`FLOODED_TYPES`).
    pub fn compact(
        &self,
        buckets: &[String],
        dry_run: bool,
        expect: Option<u64>,
    ) -> Answer<Compaction> {
        self.ask(|reply| {
            Request::Compact(CompactionAsked {
                buckets: buckets.to_vec(),
                dry_run,
                expect,
                reply,
            })
        })
    }

    /// Applies the enabled rules of the `privacy_filters` setting to every stored event
    /// (dropping or redacting, all or nothing), or with `dry_run` only counts; answers per
    /// rule what it did (see `store/privacy.rs`: on the past, a pattern that cannot be evaluated
    /// counts as no match).
    pub fn apply_privacy_to_past(&self, dry_run: bool) -> Answer<PrivacyReport> {
        self.ask(|reply| {
            Request::ApplyRules(RulesAsked {
                rules: Rules::Privacy,
                dry_run,
                reply,
            })
        })
    }

    /// Applies the enabled rules of the `retention_rules` setting (`store/retention.rs`) to
    /// every stored event, as [`Datastore::apply_privacy_to_past`] the privacy rules, with
    /// the ages counted from `now`. With `expect` (one count per rule of the setting, as a
    /// preview counted; a rule past its end may change nothing), a rule that would change
    /// more events fails the run with
    /// [`DatastoreError::Changed`], nothing changed; so does a rule that would delete every
    /// event of a bucket without `all_of_bucket` (a dry run names such buckets instead).
    /// An invalid setting fails with [`DatastoreError::InvalidEvent`].
    pub fn apply_retention(
        &self,
        now: DateTime<Utc>,
        dry_run: bool,
        expect: Option<Vec<u64>>,
    ) -> Answer<PrivacyReport> {
        let now = timestamp::to_ns_saturating(&now);
        self.ask(|reply| {
            Request::ApplyRules(RulesAsked {
                rules: Rules::Retention { now, expect },
                dry_run,
                reply,
            })
        })
    }

    /// Gives the free pages inside the file back to the file system (`store/reclaim.rs`):
    /// moved in steps between other requests, committed, then the WAL copied into the file
    /// and truncated ([`Datastore::scrub`]), when the file becomes shorter. A file not in
    /// `auto_vacuum=INCREMENTAL` mode answers `incremental: false` and is left as it is.
    pub async fn reclaim_space(&self) -> Result<Reclaimed> {
        let reclaimed = self.ask(Request::ReclaimSpace).await?;
        if reclaimed.incremental && reclaimed.pages_after < reclaimed.pages_before {
            self.scrub().await?;
        }
        Ok(reclaimed)
    }

    /// Commits, checkpoints the WAL into the file and truncates it, and zeroes the journal
    /// of acknowledged writes: after a rewrite that removed text (the privacy rules), none
    /// of it stays readable beside the database.
    ///
    /// In two requests: the first has the WAL copied into the file off the worker's turn
    /// (`file/checkpointer.rs`), so that the second's checkpoint, which empties the WAL in
    /// the worker's turn, holds heartbeats only for what was committed in between.
    pub async fn scrub(&self) -> Result<()> {
        self.ask(Control::CopyWal).await?;
        self.ask(Control::Scrub).await
    }

    /// [`Datastore::scrub`] for a thread outside an async runtime (it blocks until done).
    pub fn scrub_blocking(&self) -> Result<()> {
        self.ask(Control::CopyWal).wait()?;
        self.ask(Control::Scrub).wait()
    }
}
