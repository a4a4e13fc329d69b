//! Opening a database file: pragmas, migrations (with a backup before), repairs, the
//! journal's held writes, and whether the Python server's database is to be imported (the
//! import itself is an ordinary import request to the worker, see `handle/opening.rs`). The caller
//! owns the file and holds its lock (`file/`).

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{DatastoreError, Result};
use crate::file::backup::{self, BackupSource};
use crate::file::derived::Found;
use crate::file::encryption::{self, DbPassword};
use crate::file::{sync_folder_of, Journal};
use crate::store::schema;
use crate::store::Change;
use crate::store::{Published, Store};

/// How to open a datastore.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// The Python aw-server database to import from when this database is new.
    pub legacy_import: Option<PathBuf>,
    /// Caps the database file at this many pages (SQLite's `max_page_count`): writes past it
    /// fail as on a full disk. For tests of that failure; `None` in normal use.
    pub max_page_count: Option<u64>,
    /// The password of an encrypted database (builds with the `encryption` feature; see
    /// `file/encryption.rs`).
    pub password: Option<DbPassword>,
    /// Also open a [`BackupSource`] with the key while it is at hand (taken with
    /// [`crate::Datastore::take_backup_source`]).
    pub backup_source: bool,
    /// Where the backup taken before a schema migration goes; `None`: `backups` beside
    /// the database.
    pub backup_folder: Option<PathBuf>,
    /// When a request meets a damaged page, salvage the file at once and go on with the
    /// salvaged copy (`worker/live_salvage.rs`, [`crate::file::salvage()`]). For an encrypted database this
    /// keeps the password in the worker's memory while it runs: reopening the salvaged
    /// copy needs it.
    pub salvage_on_damage: bool,
    /// Faults a test switches on while the datastore runs (`file/faults.rs`); none by default.
    pub faults: crate::Faults,
}

/// What opening a database gives the worker.
pub(crate) struct Opened {
    pub store: Store,
    /// The journal, for the worker's batch (`None` when not recovering: a salvage while
    /// serving reopens without, the worker keeps its own).
    pub journal: Option<Journal>,
    /// The acknowledged writes of the last run that could not be committed yet.
    pub held: Vec<Change>,
    /// The Python server's database to import, if this file was just created and that one
    /// exists.
    pub legacy: Option<PathBuf>,
    /// A connection for backups, when asked for.
    pub backup_source: Option<BackupSource>,
    /// What the open found for the state kept beside the database (`file/derived.rs`).
    pub derived: crate::file::derived::Found,
}

/// Makes a file created under [`crate::store::schema::Durability::Creating`] durable (the database, its WAL and
/// the folder's entries for both) and turns `synchronous=FULL` on: from here on it is like
/// any other open file.
///
/// SQLite syncs its own files here: with `synchronous=FULL` a checkpoint syncs the WAL,
/// copies it into the database and syncs that. The database file is never opened through
/// a descriptor of ours while the connection is open: on POSIX, closing *any* descriptor of
/// a file drops every lock the process holds on it, SQLite's included, and another
/// program's clean close (`sqlite3 db 'select …'`) would then take the database as
/// unused and delete the live WAL, with every write committed since.
pub(crate) fn finish_creation(conn: &Connection, path: &std::path::Path) -> Result<()> {
    conn.execute_batch("PRAGMA synchronous=FULL;")?;
    let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(FULL)", [], |r| r.get(0))?;
    if busy != 0 {
        // Another program reads the new file already: its WAL is synced by the first
        // commit (`synchronous=FULL`), and nothing was acknowledged before that.
        log::warn!(
            "The new database {} could not be checkpointed at once",
            path.display()
        );
    }
    sync_folder_of(path)
        .map_err(|e| DatastoreError::io("sync the folder of the new database", path, &e))?;
    Ok(())
}

/// Takes a verified backup before a schema migration (the file as it was, whatever the
/// migration then does), into the backup folder.
fn backup_before_migration(
    conn: &Connection,
    path: &Path,
    options: &OpenOptions,
    found: i64,
) -> Result<()> {
    let folder = options.backup_folder.clone().unwrap_or_else(|| {
        path.parent()
            .unwrap_or(Path::new("."))
            .join(crate::file::backup::BACKUP_FOLDER)
    });
    let target = crate::file::backup::migration_target(&folder, path, found)?;
    // The copy's own check expects the current version: this one is older by design.
    backup::write_unchecked_version(conn, options.password.is_some(), &target)?;
    let _ = crate::file::match_database(&target, path);
    log::info!(
        "Backed up {} (schema version {found}) to {} before migrating it",
        path.display(),
        target.display()
    );
    Ok(())
}

/// Opens a connection to the file, unlocked (the key before any other statement touches
/// the file) and configured.
fn connect(
    path: &Path,
    options: &OpenOptions,
    durability: schema::Durability,
) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )
    .map_err(|e| DatastoreError::sqlite("open", path, &e))?;
    encryption::unlock(&conn, options.password.as_ref(), path)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    schema::configure_as(&conn, durability)?;
    if let Some(pages) = options.max_page_count {
        conn.pragma_update(
            None,
            "max_page_count",
            i64::try_from(pages).unwrap_or(i64::MAX),
        )?;
    }
    Ok(conn)
}

/// The Python server's database to import, when this file was just made (schema version
/// `found` 0) and that one exists.
fn legacy_to_import(options: &OpenOptions, found: i64) -> Option<PathBuf> {
    match options.legacy_import.as_deref() {
        Some(legacy) if found == 0 && legacy.exists() => Some(legacy.to_path_buf()),
        Some(legacy) if found == 0 => {
            log::info!(
                "No aw-server (Python) database at {}, nothing to import",
                legacy.display()
            );
            None
        }
        _ => None,
    }
}

/// The journal number of the state kept beside `path` if it may be used (`kept`, found
/// valid for the files as they were), with what changed since; what each commit changed
/// up to it is forgotten (all of it when there is no such state, whose files go).
fn kept_state(
    conn: &rusqlite::Connection,
    path: &Path,
    kept: Option<u64>,
) -> Result<(Option<u64>, Vec<crate::store::Changed>)> {
    use crate::store::touch_log;
    let changed = match kept {
        Some(seq) => Some(touch_log::changed_since(conn, seq)?),
        None => {
            crate::file::derived::discard(path);
            None
        }
    };
    touch_log::forget(conn, kept)?;
    Ok((kept, changed.unwrap_or_default()))
}

/// The store over `conn`, its WAL checkpointed off the worker's turn
/// (`file/checkpointer.rs`).
fn checkpointed_store(
    conn: rusqlite::Connection,
    path: &Path,
    options: &OpenOptions,
    published: Arc<Published>,
) -> Result<Store> {
    let mut store = Store::new(conn, published)?;
    let checkpointer =
        crate::file::checkpointer::Checkpointer::start(path, options.password.as_ref())?;
    store.checkpoint_with(checkpointer)?;
    Ok(store)
}

/// Opens the file, configures, migrates and loads the store; with `recover`, applies the
/// journal's held writes (`file/recovery.rs`) and opens it for the worker (a salvage
/// while serving reopens without: the worker keeps its journal).
pub(crate) fn open_store(
    path: &Path,
    options: &OpenOptions,
    published: Arc<Published>,
    recover: bool,
) -> Result<Opened> {
    // A file that does not exist yet (or is empty) holds nothing to lose: it is created
    // with its syncs deferred to one round at the end (`schema::Durability::Creating`).
    let durability = match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => schema::Durability::Full,
        Ok(_) => schema::Durability::Creating,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => schema::Durability::Creating,
        Err(_) => schema::Durability::Full,
    };
    // Before SQLite touches the file or its WAL: the derived state kept by the last run is
    // valid only for the files exactly as its stop or its last commit left them.
    let kept = (recover && durability == schema::Durability::Full)
        .then(|| crate::file::derived::fingerprint(path))
        .flatten()
        .and_then(|now| crate::file::derived::examine(path, now));
    let mut conn = connect(path, options, durability)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > 0 && version < schema::SCHEMA_VERSION {
        backup_before_migration(&conn, path, options, version)?;
    }
    let found = schema::migrate(&mut conn, crate::file::create_marker).map_err(|e| match e {
        DatastoreError::Busy(_) => DatastoreError::Locked(path.display().to_string()),
        other => other,
    })?;
    if durability == schema::Durability::Creating {
        finish_creation(&conn, path)?;
    }
    schema::repair_id_sequence(&mut conn)?;
    schema::ensure_own_tables(&conn)?;
    let (journal, held, derived) = if recover {
        let recovered = crate::file::recover(&conn, path, options.password.is_some())?;
        // A migration changed the file in ways no journal number tells; writes held for
        // later will be applied without telling what they change.
        let known = found == schema::SCHEMA_VERSION && recovered.held.is_empty();
        let (valid, changed) = kept_state(&conn, path, kept.filter(|_| known))?;
        let mut journal = recovered.journal;
        journal.set_faults(options.faults.clone());
        (
            Some(journal),
            recovered.held,
            Found {
                valid,
                changed,
                cipher: recovered.derived_cipher,
                data_version: conn.query_row("PRAGMA data_version", [], |r| r.get(0)).ok(),
            },
        )
    } else {
        crate::file::marker(&conn)?;
        (None, Vec::new(), Found::default())
    };
    let store = checkpointed_store(conn, path, options, published)?;
    let legacy = legacy_to_import(options, found);
    let backup_source = if options.backup_source {
        Some(BackupSource::open(path, options.password.as_ref())?)
    } else {
        None
    };
    Ok(Opened {
        store,
        journal,
        held,
        // An import is about to write (`handle/opening.rs`): nothing kept can be valid.
        derived: if legacy.is_some() {
            Found {
                valid: None,
                ..derived
            }
        } else {
            derived
        },
        legacy,
        backup_source,
    })
}
