//! Opening a database file: the cross-process lock, pragmas, migrations, repairs, and
//! whether the Python server's database is to be imported (the import itself is an
//! ordinary import request to the worker, see `lib.rs`).

use rusqlite::{Connection, OpenFlags};
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::encryption::{self, DbPassword};
use crate::error::{DatastoreError, Result};
use crate::schema;
use crate::shared::Shared;
use crate::store::Store;

/// How to open a datastore.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// The Python aw-server database to import from when this database is new.
    pub legacy_import: Option<PathBuf>,
    /// Caps the database file at this many pages (SQLite's `max_page_count`): writes past it
    /// fail as on a full disk. For tests of that failure; `None` in normal use.
    pub max_page_count: Option<u64>,
    /// The password of an encrypted database (builds with the `encryption` feature; see
    /// `encryption.rs`).
    pub password: Option<DbPassword>,
}

/// Takes the advisory lock on the database file itself: SQLite's own locks would let a
/// second server (or a conversion) interleave transactions with ours; this makes it fail at
/// once instead. The lock lasts as long as the returned file is open.
pub(crate) fn lock(path: &Path) -> Result<File> {
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

/// Opens the file, takes the cross-process lock, configures, migrates and loads the store.
/// Also returns the Python server's database to import, if this file was just created and
/// that one exists.
pub(crate) fn open_store(
    path: &Path,
    options: &OpenOptions,
    shared: Arc<Shared>,
) -> Result<(Store, File, Option<PathBuf>)> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| DatastoreError::Sql(format!("cannot open '{}': {e}", path.display())))?;
    // The key (if any) before any other statement touches the file.
    encryption::unlock(&conn, options.password.as_ref(), path)?;
    let lock = lock(path)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    schema::configure(&conn)?;
    if let Some(pages) = options.max_page_count {
        conn.pragma_update(
            None,
            "max_page_count",
            i64::try_from(pages).unwrap_or(i64::MAX),
        )?;
    }
    let found = schema::migrate(&mut conn).map_err(|e| match e {
        DatastoreError::Sql(m) if m.contains("locked") || m.contains("busy") => {
            DatastoreError::Locked(path.display().to_string())
        }
        other => other,
    })?;
    schema::repair_id_sequence(&mut conn)?;
    schema::ensure_long_events_index(&conn)?;
    let store = Store::new(conn, shared)?;
    let legacy = match options.legacy_import.as_deref() {
        Some(legacy) if found == 0 && legacy.exists() => Some(legacy.to_path_buf()),
        Some(legacy) if found == 0 => {
            log::info!(
                "No aw-server (Python) database at {}, nothing to import",
                legacy.display()
            );
            None
        }
        _ => None,
    };
    Ok((store, lock, legacy))
}
