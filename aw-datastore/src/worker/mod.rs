//! The worker thread: owns the only connection, runs requests in arrival order, and
//! group-commits.
//!
//! Commit policy. Writes accumulate in one open `IMMEDIATE` transaction which is committed
//! when any of these holds after a request:
//! * a bucket was created, deleted, renamed or merged, an import ended, a range was
//!   deleted or the privacy rules were applied to the past (the requests whose
//!   [`request::Kind::commit`] is `Now` in the table of `request.rs`), or a force-commit or close
//!   was asked for;
//! * more than [`MAX_UNCOMMITTED_EVENTS`] events or heartbeats were written;
//! * the batch of uncommitted changes holds more than [`schedule::MAX_BATCH_BYTES`] (an
//!   import);
//! * the transaction is older than [`COMMIT_INTERVAL`] and holds a write;
//! * the worker has been idle for [`IDLE_COMMIT_DELAY`] with a write pending (the
//!   reference only checks after a request, so an idle server sat on uncommitted data; ours
//!   does not).
//!
//! The store's operations only record the rows they changed; which requests count or commit
//! at once is the request table's ([`request::Kind::commit`]), applied by [`schedule::note_changes`].
//!
//! Callers are answered as soon as their request ran, before the commit (reads see the open
//! transaction, so the API is read-your-writes); `ForceCommit` and `Close` are answered only
//! after the commit succeeded. If SQLite drops the transaction (a failed statement or
//! commit), the writes already answered are applied again (`group_commit.rs`): one failing
//! request never loses another's acknowledged write.
//!
//! One file per concept: `thread.rs` (start and stop), `run.rs` (the loop), `request.rs`
//! (the messages and the request table), `reply.rs` (where answers go), `schedule.rs` (what to do next), `handoff.rs`
//! (polling or sleeping between handle and worker), `group_commit.rs` (the one
//! transaction), `batch.rs` (its writes, sealed in the journal), `job.rs` (long requests in
//! steps), `rewrite.rs` and `fence.rs` (rewrites of history and what waits for them),
//! `live_salvage.rs` (a salvage while serving), `shared.rs` (what handles read).

mod asked;
pub(crate) mod batch;
mod control;
#[cfg(test)]
mod damage_tests;
mod fence;
mod group_commit;
pub(crate) mod handoff;
mod job;
mod kind;
mod live_salvage;
mod reply;
mod request;
mod rewrite;
mod run;
pub(crate) mod schedule;
mod shared;
mod sync_request;
mod thread;

pub(crate) use control::Control;
pub(crate) use reply::{Reply, RowSink};
pub(crate) use request::{CompactionAsked, EventRead, Message, Request, Rules, RulesAsked};
pub use schedule::{COMMIT_INTERVAL, IDLE_COMMIT_DELAY, MAX_UNCOMMITTED_EVENTS};
pub(crate) use shared::Shared;
pub(crate) use sync_request::SyncRequest;
pub(crate) use thread::start;
