//! The database operations, run on the worker thread against its one connection.
//!
//! `Store` owns the connection and the in-memory state that mirrors the database: the bucket
//! cache (with event count and time span per bucket) and the last-heartbeat cache. Every
//! write updates the mirror in the same call and records its row-level change in the batch
//! (`worker/batch.rs`), and [`Store::reload`] rebuilds the mirror from disk after SQLite dropped a
//! transaction, so the mirror never disagrees with what a read returns.
//!
//! One file per concern: `state.rs` has the state, startup (`reload`) and shared helpers;
//! `buckets.rs`, `events.rs`, `heartbeat.rs`, `key_value.rs`, `merge.rs`,
//! `range_delete.rs`, `privacy_past.rs`, `compaction.rs` (with its plan, `compaction_plan.rs`) and `reclaim.rs` (free pages given back) the operations; `day_digest.rs`, `day_mirror.rs`
//! and `pulled_day.rs` what sync asks of a store; `range_read.rs` the event reads;
//! `change.rs` the row-level changes every write records; `schema.rs` the tables and their
//! migrations; `privacy.rs` the rules (and `retention.rs` the retention rules compiled into
//! them, `privacy_report.rs` what a run over the history reports); `published.rs` and `write_listeners.rs` what the
//! store tells the rest of the process, and `touch_log.rs` what it keeps of that in the file.

mod buckets;
pub(crate) mod change;
pub(crate) mod compaction;
pub(crate) mod compaction_plan;
mod created;
pub(crate) mod day_digest;
mod day_mirror;
mod events;
mod heartbeat;
mod key_value;
mod merge;
#[cfg(test)]
pub(crate) mod plan_tests;
pub(crate) mod privacy;
mod privacy_past;
mod privacy_report;
mod published;
mod pulled_day;
mod range_delete;
pub(crate) mod range_read;
mod reclaim;
pub(crate) mod retention;
pub(crate) mod schema;
mod state;
pub(crate) mod touch_log;
pub(crate) mod write_listeners;

pub(crate) use aw_models::raw_event::TextRows;
pub(crate) use buckets::ImportBucket;
pub(crate) use change::Change;
pub(crate) use compaction::CompactionRun;
pub use compaction::{BucketCompaction, Compaction, FLOODED_TYPES};
pub use compaction_plan::FLOOD_GAP_NS;
pub use created::created_from_text;
pub use day_digest::{day_of, day_span, DayDigest, DayDigests, DAY_NS};
pub use day_mirror::MirroredDay;
pub use merge::Merge;
pub(crate) use merge::MergeRun;
pub use privacy::{PrivacyReport, PrivacySample, RuleReport, PRIVACY_FILTERS_KEY};
pub(crate) use privacy_past::PrivacyRun;
pub(crate) use published::{BucketMap, Published};
pub use pulled_day::{PulledDay, PulledDayApplied};
pub use range_delete::RangeDeletion;
pub(crate) use range_delete::RangeDeletionRun;
pub(crate) use range_read::RangeRead;
pub(crate) use reclaim::pragma;
pub use reclaim::Reclaimed;
pub use retention::{check_retention_rules, local_rule_cutoffs, RETENTION_RULES_KEY};
pub(crate) use state::Store;
pub use touch_log::Changed;
pub use write_listeners::{Touched, WriteListener};
