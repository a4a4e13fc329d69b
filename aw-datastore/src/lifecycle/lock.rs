//! The cross-process lock of a database: an advisory `flock` on `<database>.lock`, a file
//! that is never replaced (a lock on the database file itself would move with it when a
//! restore or a salvage puts another file in its place, and a second server could then
//! take the new file while the first still writes the old one).
//!
//! Where `flock` fails with an error (a file system without locks), a server still runs,
//! but two must never run on one database: the second would apply and append to the
//! first's journal of acknowledged writes. So the claim falls back to an owner file,
//! `<database>.owner`, made exclusively (`O_EXCL`) with the process id and its start time;
//! a second start finds it naming a live process and is refused like one that meets the
//! lock. (One left by a process that died is taken over.) Files are still not replaced
//! under that weaker claim.

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
    /// has the database open. `owner` is the owner file that keeps a second server of
    /// ours away meanwhile (see the module docs), if it could be made.
    Unavailable {
        /// Why `flock` failed.
        why: String,
        /// Held for as long as the claim (removed when dropped).
        _owner: Option<OwnerFile>,
    },
}

/// `<database>.owner`, made exclusively by the process that serves the database where
/// `flock` fails; removed when dropped.
#[derive(Debug)]
pub(crate) struct OwnerFile {
    path: PathBuf,
    /// What this process wrote into it.
    text: String,
}

/// This process's id and start time (`/proc/self/stat`; `0` where there is none): a
/// process id alone may be reused after a crash.
fn process_identity(pid: u32) -> String {
    let started = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // The fields after the command name, which is in parentheses.
            let rest = stat.get(stat.rfind(')')? + 2..)?.to_string();
            rest.split_whitespace().nth(19).map(str::to_string)
        })
        .unwrap_or_else(|| "0".into());
    format!("{pid} {started}\n")
}

/// Whether the process an owner file names (`held`) still runs: the same id with the same
/// start time. Where the system does not tell (no `/proc`), a process is taken as gone, so
/// a crash never leaves a database that no server can open.
fn is_alive(held: &str) -> bool {
    let Some(pid) = held
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse::<u32>().ok())
    else {
        return false;
    };
    Path::new("/proc/self/stat").exists() && process_identity(pid) == held
}

impl OwnerFile {
    /// Makes the owner file of `db`, taking over one whose process is gone; fails with
    /// [`DatastoreError::Locked`] when a live process holds it.
    fn take(db: &Path) -> Result<std::io::Result<OwnerFile>> {
        let path = with_suffix(db, ".owner");
        let text = process_identity(std::process::id());
        for _ in 0..2 {
            let made = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path);
            match made {
                Ok(mut file) => {
                    use std::io::Write;
                    let _ = super::modes::match_database(&path, db);
                    return Ok(file
                        .write_all(text.as_bytes())
                        .and_then(|()| file.sync_all())
                        .map(|()| OwnerFile {
                            path: path.clone(),
                            text: text.clone(),
                        }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let held = std::fs::read_to_string(&path).unwrap_or_default();
                    if is_alive(&held) {
                        return Err(DatastoreError::Locked(db.display().to_string()));
                    }
                    // Left by a process that is gone.
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Err(std::io::ErrorKind::AlreadyExists.into()))
    }
}

impl Drop for OwnerFile {
    fn drop(&mut self) {
        if std::fs::read_to_string(&self.path).is_ok_and(|t| t == self.text) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Lock {
    /// Takes the lock of `db`, or fails with [`DatastoreError::Locked`] when another
    /// process holds it. The lock file gets the database's mode.
    pub(crate) fn take(db: &Path) -> Result<Lock> {
        let path = lock_path(db);
        let file = match super::modes::create_file(&path, db) {
            Ok(file) => file,
            Err(e) => return Lock::unavailable(db, &path, &e),
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(DatastoreError::Locked(db.display().to_string()))
            }
            Err(TryLockError::Error(e)) => return Lock::unavailable(db, &path, &e),
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

    /// Without `flock`: the owner file keeps a second server away (or this start is
    /// refused, when a live one holds it).
    fn unavailable(db: &Path, path: &Path, e: &std::io::Error) -> Result<Lock> {
        let owner = match OwnerFile::take(db)? {
            Ok(owner) => Some(owner),
            Err(owner_error) => {
                log::error!(
                    "Cannot make {} either ({owner_error}): nothing keeps a second server \
                     off this database while this one runs",
                    with_suffix(db, ".owner").display()
                );
                None
            }
        };
        log::warn!(
            "Cannot lock {} ({e}): serving without the lock, so no file will be replaced \
             (no salvage, no restore) while this server runs",
            path.display()
        );
        Ok(Lock::Unavailable {
            why: e.to_string(),
            _owner: owner,
        })
    }

    /// `Ok` when files may be replaced: the lock is held.
    pub(crate) fn may_replace(&self, what: &str) -> Result<()> {
        match self {
            Lock::Held { .. } => Ok(()),
            Lock::Unavailable { why, .. } => Err(DatastoreError::Unavailable(format!(
                "cannot {what}: the database's lock could not be taken ({why}), so another \
                 process may have it open"
            ))),
        }
    }
}
