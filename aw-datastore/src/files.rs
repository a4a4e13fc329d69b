//! A database's files: the names of its side files (`-wal`, `-shm`, `.pending.json`,
//! `.damaged`, …), the time stamp in the names of files kept aside, the cross-process lock
//! on the file, and how a database is replaced by another file while the one it replaces is
//! kept.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::{DatastoreError, Result};

/// How a time is written in file names (no `:`, which some file systems refuse).
pub const FILE_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%SZ";

/// `path` with `suffix` added to its file name (`sqlite.db` → `sqlite.db-wal`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// Takes the advisory lock on the database file itself: SQLite's own locks would let a
/// second server (or a conversion) interleave transactions with ours; this makes it fail at
/// once instead. The lock lasts as long as the returned file is open.
pub fn lock(path: &Path) -> Result<File> {
    let lock = File::open(path)
        .map_err(|e| DatastoreError::Sql(format!("cannot open '{}': {e}", path.display())))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(DatastoreError::Locked(path.display().to_string()))
        }
        Err(TryLockError::Error(e)) => {
            log::warn!(
                "Could not lock '{}' ({e}); continuing without the lock",
                path.display()
            )
        }
    }
    Ok(lock)
}

/// Puts `incoming` in place of the database `db`. The current file and its `-wal` and
/// `-shm` are renamed to `<db>.<tag>-<time>` (with `-2`, `-3`… if that exists: a file kept
/// aside never replaces another), never deleted. Nothing may hold `db` open. Returns where
/// the current file went (`None` when there was none).
pub fn replace_database(db: &Path, incoming: &Path, tag: &str) -> std::io::Result<Option<PathBuf>> {
    let kept = if db.exists() {
        let stamp = chrono::Utc::now().format(FILE_TIME_FORMAT);
        let mut aside = with_suffix(db, &format!(".{tag}-{stamp}"));
        let mut n = 2;
        while aside.exists() {
            aside = with_suffix(db, &format!(".{tag}-{stamp}-{n}"));
            n += 1;
        }
        std::fs::rename(db, &aside)?;
        for side in ["-wal", "-shm"] {
            let from = with_suffix(db, side);
            if from.exists() {
                std::fs::rename(&from, with_suffix(&aside, side))?;
            }
        }
        Some(aside)
    } else {
        None
    };
    std::fs::rename(incoming, db)?;
    if let Some(dir) = db.parent().and_then(|d| std::fs::File::open(d).ok()) {
        let _ = dir.sync_all();
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_database_and_its_wal_are_kept_aside_never_over_another() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut kept = Vec::new();
        for round in 0..2 {
            std::fs::write(&db, format!("old {round}")).unwrap();
            std::fs::write(with_suffix(&db, "-wal"), format!("wal {round}")).unwrap();
            let incoming = dir.path().join("new.db");
            std::fs::write(&incoming, "new").unwrap();
            let aside = replace_database(&db, &incoming, "replaced")
                .unwrap()
                .unwrap();
            assert_eq!(
                std::fs::read_to_string(&aside).unwrap(),
                format!("old {round}")
            );
            assert_eq!(
                std::fs::read_to_string(with_suffix(&aside, "-wal")).unwrap(),
                format!("wal {round}")
            );
            assert_eq!(std::fs::read_to_string(&db).unwrap(), "new");
            kept.push(aside);
        }
        assert_ne!(kept[0], kept[1], "the second is kept beside the first");
    }
}
