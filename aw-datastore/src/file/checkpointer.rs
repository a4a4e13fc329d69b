//! The WAL copied into the database off the worker's turn: a thread of its own, with a
//! connection of its own, checkpoints after each commit.
//!
//! SQLite checkpoints automatically inside the `COMMIT` that grows the WAL past 1000
//! pages, on the committing connection: on the worker, whose turn it then holds (60 of the
//! 89 ms a whole-history deletion's commit took, during which no heartbeat is answered).
//! So the worker's connection has `wal_autocheckpoint=0`, and after a commit that leaves
//! 1000 pages or more in the WAL (SQLite's WAL hook says how many) it wakes this thread,
//! which runs `PRAGMA wal_checkpoint(PASSIVE)`: it copies every committed
//! frame into the database without waiting for, or blocking, the worker's writes.
//!
//! **The WAL's restart.** A checkpoint copies frames but does not make the WAL shorter:
//! SQLite starts writing it from its beginning again only when a writer begins a write
//! with every frame copied and its own read begun after that copy. The worker begins its
//! next transaction right after each commit, before the copy, so it would never see it
//! happen and the WAL would grow without end. So this thread says when a checkpoint
//! copied everything ([`Checkpointer::take_caught_up`]), and the worker, at a quiet moment
//! with nothing written since its commit, ends and begins its (empty) transaction again
//! (`GroupCommit::refresh`): its next write then restarts the WAL.
//!
//! Dropped (its connection closed) before the worker's connection closes, so the worker's
//! stays the last one, whose close copies the WAL and removes it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use rusqlite::Connection;

use crate::error::Result;
use crate::file::DbPassword;

/// The WAL's pages that make a checkpoint due: SQLite's `wal_autocheckpoint` default.
const PAGES: u32 = 1000;

/// The checkpointing thread, woken after commits; see the module docs.
pub(crate) struct Checkpointer {
    wake: Option<SyncSender<()>>,
    /// Held by the thread while it checkpoints, and by whoever must checkpoint on its own
    /// ([`Checkpointer::hold`]).
    gate: Arc<Mutex<()>>,
    /// The last checkpoint copied every frame, and nothing was committed since.
    caught_up: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Checkpointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpointer")
            .field("caught_up", &self.caught_up.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Checkpointer {
    /// Opens a connection to `db` (unlocked with `password`) and starts the thread.
    pub(crate) fn start(db: &Path, password: Option<&DbPassword>) -> Result<Checkpointer> {
        let conn = Connection::open(db)?;
        crate::file::encryption::unlock(&conn, password, db)?;
        conn.busy_timeout(std::time::Duration::from_secs(2))?;
        let (wake, woken) = sync_channel::<()>(1);
        let caught_up = Arc::new(AtomicBool::new(false));
        let flag = caught_up.clone();
        let gate = Arc::new(Mutex::new(()));
        let held = gate.clone();
        let thread = std::thread::Builder::new()
            .name("aw-checkpoint".into())
            .spawn(move || {
                while woken.recv().is_ok() {
                    let _checkpointing = held.lock().unwrap_or_else(PoisonError::into_inner);
                    flag.store(checkpoint(&conn), Ordering::Release);
                }
            })
            .map_err(|e| crate::error::DatastoreError::io("start the checkpoint thread", db, &e))?;
        Ok(Checkpointer {
            wake: Some(wake),
            gate,
            caught_up,
            thread: Some(thread),
        })
    }

    /// After a commit that left `pages` in the WAL: the new frames are not copied yet;
    /// the thread copies them once there are [`PAGES`] (as SQLite's own automatic
    /// checkpoint would: a commit every 100 events must not cost a checkpoint each).
    pub(crate) fn committed(&self, pages: u32) {
        self.caught_up.store(false, Ordering::Release);
        if pages < PAGES {
            return;
        }
        if let Some(wake) = &self.wake {
            // Full: a checkpoint is due already, and copies these frames too.
            let _ = wake.try_send(());
        }
    }

    /// Keeps the thread from checkpointing until the guard is dropped (and waits for a
    /// checkpoint in progress): a `TRUNCATE` checkpoint of the worker's, which must empty
    /// the WAL (the scrub after a privacy run), fails while another one runs.
    pub(crate) fn hold(&self) -> MutexGuard<'_, ()> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the last checkpoint copied every frame committed (then a read begun now
    /// lets the next write restart the WAL); once per checkpoint.
    pub(crate) fn take_caught_up(&self) -> bool {
        self.caught_up.swap(false, Ordering::AcqRel)
    }
}

/// One passive checkpoint; whether it copied every frame in the WAL.
fn checkpoint(conn: &Connection) -> bool {
    let result = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, i64>(2)?,
        ))
    });
    match result {
        Ok((busy, frames, copied)) => busy == 0 && frames == copied,
        Err(e) => {
            log::warn!("A checkpoint of the WAL failed: {e}");
            false
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // The thread ends when its channel closes, its connection with it.
        self.wake = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
