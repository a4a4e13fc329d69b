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
//! **Before a scrub.** A scrub must empty the WAL, with a `TRUNCATE` checkpoint on the
//! worker's connection in its turn; after a privacy run that copy is the whole rewrite
//! (390 ms of heartbeats unanswered on the generated year). So the scrub first asks this
//! thread to copy what is committed ([`Checkpointer::copy_then`]) while the worker goes
//! on serving, and its own checkpoint copies only what was committed since.
//!
//! **Before a rewrite's commit.** A rewrite of stored history (a privacy run, a merge, a
//! whole-history deletion) runs in steps inside one transaction; SQLite spills its pages
//! into the WAL as they leave the page cache, unsynced, and the `COMMIT` at its end
//! (`synchronous=FULL`) syncs the WAL: every spilled page reaches the disk in the worker's
//! turn. So after each of its steps the worker asks this thread to sync the WAL file
//! ([`Checkpointer::presync`]; an fsync flushes the file whichever descriptor asks), and
//! the commit's sync has only the last step's pages left. Frames not yet committed are
//! ignored by SQLite's recovery, synced or not.
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

/// Where the thread says a copy asked for is done (the worker's reply channel, filled here).
type Reply<T> = tokio::sync::oneshot::Sender<Result<T>>;

/// The WAL's pages that make a checkpoint due: SQLite's `wal_autocheckpoint` default.
const PAGES: u32 = 1000;

/// Why the thread is woken.
enum Wake {
    /// Commits left [`PAGES`] or more in the WAL.
    Due,
    /// A rewrite in progress spilled pages into the WAL: they are synced to the disk now,
    /// so that its commit's own sync finds little left ("Before a rewrite's commit").
    Sync,
    /// A scrub waits for what is committed to be copied: answered once it is.
    Copy(Reply<()>),
}

/// The checkpointing thread, woken after commits; see the module docs.
pub(crate) struct Checkpointer {
    wake: Option<SyncSender<Wake>>,
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
        // Room for a due checkpoint and a scrub's, so a scrub's never waits for a slot.
        let (wake, woken) = sync_channel::<Wake>(2);
        let wal = crate::file::names::with_suffix(db, "-wal");
        let caught_up = Arc::new(AtomicBool::new(false));
        let flag = caught_up.clone();
        let gate = Arc::new(Mutex::new(()));
        let held = gate.clone();
        let thread = std::thread::Builder::new()
            .name("aw-checkpoint".into())
            .spawn(move || {
                while let Ok(why) = woken.recv() {
                    if let Wake::Sync = why {
                        if let Err(e) = std::fs::File::open(&wal).and_then(|f| f.sync_data()) {
                            log::debug!("The WAL could not be synced ahead of a commit: {e}");
                        }
                        continue;
                    }
                    let checkpointing = held.lock().unwrap_or_else(PoisonError::into_inner);
                    flag.store(checkpoint(&conn), Ordering::Release);
                    drop(checkpointing);
                    if let Wake::Copy(reply) = why {
                        // Copied or not, the scrub's own checkpoint is the one that counts.
                        let _ = reply.send(Ok(()));
                    }
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
            let _ = wake.try_send(Wake::Due);
        }
    }

    /// Syncs the WAL file to the disk on this thread, unless a wake-up is pending already:
    /// see "Before a rewrite's commit".
    pub(crate) fn presync(&self) {
        if let Some(wake) = &self.wake {
            let _ = wake.try_send(Wake::Sync);
        }
    }

    /// Copies every committed frame into the database on this thread, then answers
    /// `reply` (the worker is not waited for, nor made to wait): see "Before a scrub".
    pub(crate) fn copy_then(&self, reply: Reply<()>) {
        match &self.wake {
            // Blocks only while two wake-ups are pending, which the thread is taking.
            Some(wake) => {
                if let Err(std::sync::mpsc::SendError(Wake::Copy(reply))) =
                    wake.send(Wake::Copy(reply))
                {
                    let _ = reply.send(Ok(()));
                }
            }
            None => {
                let _ = reply.send(Ok(()));
            }
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
