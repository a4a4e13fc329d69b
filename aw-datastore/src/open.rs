//! Opening a database file: the cross-process lock, pragmas, migrations, repairs, and the
//! one-time import of the Python server's database.

use rusqlite::{Connection, OpenFlags};
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{DatastoreError, Result};
use crate::shared::Shared;
use crate::store::Store;
use crate::{legacy_import, schema};

/// How to open a datastore.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// The Python aw-server database to import from when this database is new.
    pub legacy_import: Option<PathBuf>,
    /// Caps the database file at this many pages (SQLite's `max_page_count`): writes past it
    /// fail as on a full disk. For tests of that failure; `None` in normal use.
    pub max_page_count: Option<u64>,
}

/// Opens the file, takes the cross-process lock, configures, migrates and loads the store.
pub(crate) fn open_store(
    path: &Path,
    options: &OpenOptions,
    shared: Arc<Shared>,
) -> Result<(Store, File)> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| DatastoreError::Sql(format!("cannot open '{}': {e}", path.display())))?;
    // An advisory lock on the file itself: SQLite's own locks would let a second server
    // interleave transactions with ours; this makes it fail at startup instead.
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
    let mut store = Store::new(conn, shared)?;
    if found == 0 {
        if let Some(legacy) = options.legacy_import.as_deref() {
            if legacy.exists() {
                log::info!(
                    "Importing the aw-server (Python) database {}",
                    legacy.display()
                );
                store.conn().execute_batch("BEGIN IMMEDIATE")?;
                match legacy_import::import(&mut store, legacy) {
                    Ok(n) => {
                        store.conn().execute_batch("COMMIT")?;
                        log::info!("Legacy import done: {n} events");
                    }
                    Err(e) => {
                        let _ = store.conn().execute_batch("ROLLBACK");
                        store.reload()?;
                        log::error!("Legacy import failed, starting with an empty database: {e}");
                    }
                }
                store.batch.clear();
            } else {
                log::info!(
                    "No aw-server (Python) database at {}, nothing to import",
                    legacy.display()
                );
            }
        }
    }
    Ok((store, lock))
}
