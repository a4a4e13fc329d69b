//! The cross-process lock of a database: an advisory `flock` on `<database>.lock`, a file
//! that is never replaced (a lock on the database file itself would move with it when a
//! restore or a salvage puts another file in its place, and a second server could then
//! take the new file while the first still writes the old one).

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::{DatastoreError, Result};
use crate::files::with_suffix;

/// `<database>.lock`.
pub(crate) fn lock_path(db: &Path) -> PathBuf {
    with_suffix(db, ".lock")
}

/// The lock, as far as it could be taken.
#[derive(Debug)]
pub(crate) enum Lock {
    /// Held until this file is closed: no other server of ours can open the database.
    Held {
        /// Open for as long as the lock is to be held (closing it releases the lock).
        _file: File,
    },
    /// `flock` failed with an error (a network file system without locks, say): the
    /// server may still serve, but replaces no file, since it cannot know that nobody else
    /// has the database open.
    Unavailable(String),
}

impl Lock {
    /// Takes the lock of `db`, or fails with [`DatastoreError::Locked`] when another
    /// process holds it. The lock file gets the database's mode.
    pub(crate) fn take(db: &Path) -> Result<Lock> {
        let path = lock_path(db);
        let file = match super::modes::create_file(&path, db) {
            Ok(file) => file,
            Err(e) => return Ok(Lock::unavailable(&path, &e)),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(DatastoreError::Locked(db.display().to_string()))
            }
            Err(TryLockError::Error(e)) => return Ok(Lock::unavailable(&path, &e)),
        }
        // A server of an earlier version locks the database file itself: it must not be
        // running either. (Checked, not kept: that lock would move with the file.)
        if let Ok(old) = File::open(db) {
            if let Err(TryLockError::WouldBlock) = old.try_lock() {
                return Err(DatastoreError::Locked(db.display().to_string()));
            }
        }
        Ok(Lock::Held { _file: file })
    }

    fn unavailable(path: &Path, e: &std::io::Error) -> Lock {
        log::warn!(
            "Cannot lock {} ({e}): serving without the lock, so no file will be replaced \
             (no salvage, no restore) while this server runs",
            path.display()
        );
        Lock::Unavailable(e.to_string())
    }

    /// `Ok` when files may be replaced: the lock is held.
    pub(crate) fn may_replace(&self, what: &str) -> Result<()> {
        match self {
            Lock::Held { .. } => Ok(()),
            Lock::Unavailable(why) => Err(DatastoreError::Unavailable(format!(
                "cannot {what}: the database's lock could not be taken ({why}), so another \
                 process may have it open"
            ))),
        }
    }
}
