//! What the worker shares with the handles: the state they read without a round trip, and
//! what the file's life leaves for them to take.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};

use crate::file::derived::Slot;
use crate::file::{BackupSource, SalvageReport};
use crate::store::Published;
use crate::worker::handoff::Handoff;

/// The state the worker shares with every handle.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The buckets and write listeners the store publishes (`store/published.rs`).
    pub published: Arc<Published>,
    /// The worker's turns as handles may read them.
    pub turns: Turns,
    /// Whether the worker polls its queue, and how many callers wait (`handoff.rs`).
    pub handoff: Handoff,
    /// What the file's life leaves for callers to take.
    pub left: Left,
    /// The worker thread, joined by [`crate::Datastore::close`].
    pub thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The worker's turns, counted for status and for tests that must know its order.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    /// Cleared when the worker stops, so snapshot reads then fail like every other call.
    pub alive: AtomicBool,
    /// Long requests (reads and imports run in steps) the worker has in progress: for
    /// status, and for tests that must know a long job is under way.
    pub jobs_in_progress: AtomicUsize,
    /// Requests the worker took while a long job was unfinished: the worker's own record
    /// that it answers between a job's steps (see [`crate::Datastore::requests_between_steps`]).
    pub requests_between_steps: AtomicU64,
    /// The bytes of the journal that hold records (its header and what is not committed
    /// yet), as of the last turn: for the storage report.
    pub journal_used: AtomicU64,
}

/// What the file's life leaves for callers to take, each behind its own lock (taken once,
/// or rarely).
#[derive(Debug, Default)]
pub(crate) struct Left {
    /// The connection for backups opened with the database, until it is taken (a new one
    /// after a salvage).
    pub backup_source: Mutex<Option<BackupSource>>,
    /// What the last salvage while serving brought back (`live_salvage.rs`).
    pub salvaged: Mutex<Option<SalvageReport>>,
    /// The derived state kept beside the database between runs (`file/derived.rs`).
    pub derived: Mutex<Slot>,
}
