//! The cross-process lock of a database: an advisory `flock` on `<database>.lock`, a file
//! that is never replaced (a lock on the database file itself would move with it when a
//! restore or a salvage puts another file in its place, and a second server could then
//! take the new file while the first still writes the old one).
//!
//! Where `flock` fails with an error (a file system without locks), a server still runs,
//! but two must never run on one database: the second would apply and append to the
//! first's journal of acknowledged writes. So the claim falls back to an owner file,
//! `<database>.owner`, made whole in one step (linked into place) with the process id, its
//! start time and boot; a second start finds it naming a live process and is refused like
//! one that meets the lock. (One left by a process that died is taken over.) Files are
//! still not replaced under that weaker claim.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::{DatastoreError, Result};
use crate::file::names::with_suffix;

/// `<database>.lock`, the file whose `flock` says a server runs on the database.
pub fn lock_file(db: &Path) -> PathBuf {
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

/// What an owner file says of process `pid`: its id, its start time and the boot it runs
/// in (`/proc`; `-` where there is none), so a reused process id, or the same id and time
/// after a reboot, never reads as the owner.
fn process_identity(pid: u32) -> String {
    let started = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // The fields after the command name, which is in parentheses.
            let rest = stat.get(stat.rfind(')')? + 2..)?.to_string();
            rest.split_whitespace().nth(19).map(str::to_string)
        })
        .unwrap_or_else(|| "-".into());
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|b| b.trim().to_string())
        .unwrap_or_else(|_| "-".into());
    format!("{pid} {started} {boot}\n")
}

/// Whether the process an owner file names (`held`) still runs: with `/proc`, the same id,
/// start time and boot; elsewhere, a process of that id exists.
fn is_alive(held: &str) -> bool {
    let Some(pid) = held
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse::<u32>().ok())
    else {
        return false;
    };
    if Path::new("/proc/self/stat").exists() {
        Path::new(&format!("/proc/{pid}/stat")).exists() && process_identity(pid) == held
    } else {
        aw_platform::process::is_running(pid).unwrap_or(true)
    }
}

impl OwnerFile {
    /// Makes the owner file of `db`, taking over one whose process is gone; fails with
    /// [`DatastoreError::Locked`] when a live process holds it. The file appears whole: it
    /// is written under a name of this process's own, then linked to its place (a link
    /// never replaces a file, so of two starts one wins, and nobody reads it half written).
    fn take(db: &Path) -> Result<std::io::Result<OwnerFile>> {
        let path = with_suffix(db, ".owner");
        let text = process_identity(std::process::id());
        let mine = with_suffix(&path, &format!(".{}", std::process::id()));
        let written = std::fs::write(&mine, &text)
            .and_then(|()| super::modes::match_database(&mine, db))
            .and_then(|()| std::fs::File::open(&mine)?.sync_all());
        if let Err(e) = written {
            let _ = std::fs::remove_file(&mine);
            return Ok(Err(e));
        }
        let mut outcome = Ok(Err(std::io::ErrorKind::AlreadyExists.into()));
        for _ in 0..3 {
            match std::fs::hard_link(&mine, &path) {
                Ok(()) => {
                    outcome = Ok(Ok(OwnerFile {
                        path: path.clone(),
                        text: text.clone(),
                    }));
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let held = std::fs::read_to_string(&path).unwrap_or_default();
                    if is_alive(&held) {
                        outcome = Err(DatastoreError::Locked(db.display().to_string()));
                        break;
                    }
                    // Left by a process that is gone: moved aside (one start wins the
                    // rename), checked to be the very file judged, then dropped.
                    let stale = with_suffix(&path, &format!(".stale-{}", std::process::id()));
                    if std::fs::rename(&path, &stale).is_ok() {
                        if std::fs::read_to_string(&stale).is_ok_and(|t| t != held) {
                            // Another start's fresh file: put back, and look again.
                            let _ = std::fs::hard_link(&stale, &path);
                        }
                        let _ = std::fs::remove_file(&stale);
                    }
                }
                Err(e) => {
                    outcome = Ok(Err(e));
                    break;
                }
            }
        }
        let _ = std::fs::remove_file(&mine);
        outcome
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
        let path = lock_file(db);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The owner file refuses a second claim while its process lives, is taken over when
    /// the process it names is gone, and goes with its owner.
    #[test]
    fn an_owner_file_keeps_a_second_claim_away_until_its_process_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let owner = OwnerFile::take(&db).unwrap().unwrap();
        assert!(matches!(
            OwnerFile::take(&db),
            Err(DatastoreError::Locked(_))
        ));
        drop(owner);
        assert!(!with_suffix(&db, ".owner").exists());
        // Left by a process that has exited.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        std::fs::write(with_suffix(&db, ".owner"), process_identity(dead)).unwrap();
        let owner = OwnerFile::take(&db).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(with_suffix(&db, ".owner")).unwrap(),
            process_identity(std::process::id())
        );
        drop(owner);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert!(
            left.is_empty(),
            "nothing left beside the database: {left:?}"
        );
    }
}
