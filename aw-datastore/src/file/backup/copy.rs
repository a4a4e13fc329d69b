//! Backups: online, consistent copies of the database that count only once verified.
//!
//! A backup is written by a connection of its own ([`BackupSource`]), not by the worker:
//! in WAL mode a reader sees one committed snapshot while the worker goes on writing, so a
//! backup of a year never delays a heartbeat (a copy on the worker's connection would hold
//! it for the whole copy). The source connection is opened with the worker's, while the
//! password is at hand, so that the password can still be wiped once the file is open.
//!
//! The copy is written to a dot-named temporary file in the target's folder — `VACUUM INTO`
//! for a plain database; for an encrypted one `sqlcipher_export` into a database attached
//! with the main database's key, so the backup stays encrypted — then checked with
//! `PRAGMA integrity_check` (every page; `quick_check` skips the index contents) and its
//! schema version, synced, and only then renamed to its name. A failed backup leaves no
//! file under a backup's name.

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::error::{DatastoreError, Result};
use crate::file::encryption::{self, DbPassword};
use crate::file::names::remove_if_there;
use crate::store::schema::SCHEMA_VERSION;

/// A connection of its own to a database, for taking backups of it.
pub struct BackupSource {
    conn: Connection,
    path: PathBuf,
    encrypted: bool,
}

impl std::fmt::Debug for BackupSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupSource")
            .field("path", &self.path)
            .field("encrypted", &self.encrypted)
            .finish()
    }
}

impl BackupSource {
    /// Opens a connection to the database at `path` for backups, unlocked with `password`
    /// (an encrypted database). The server gets its source from
    /// [`crate::Datastore::take_backup_source`]; this is for a database no server runs on.
    pub fn open(path: &Path, password: Option<&DbPassword>) -> Result<BackupSource> {
        // READ_WRITE | CREATE: the flags ATTACH creates the copy with (the database itself
        // is only read).
        if !path.exists() {
            return Err(DatastoreError::Sql(
                format!("no database at '{}'", path.display()).into(),
            ));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| DatastoreError::sqlite("open", path, &e))?;
        encryption::unlock(&conn, password, path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Ok(BackupSource {
            conn,
            path: path.to_path_buf(),
            encrypted: password.is_some(),
        })
    }

    /// The connection, for other reads of the whole file that must not hold the worker
    /// (`file/space.rs`).
    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The database this source copies.
    pub fn database(&self) -> &Path {
        &self.path
    }

    /// Writes a verified backup to `target` (see the module docs); returns its size.
    pub fn write(&self, target: &Path) -> Result<u64> {
        write_verified(&self.conn, self.encrypted, target)
    }
}

/// Checks the backup at `path` as [`BackupSource::write`] checked it when it was written:
/// every page (`integrity_check`) and the schema version. For `aw-server restore`.
pub fn verify_backup(path: &Path, password: Option<&DbPassword>) -> Result<()> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| DatastoreError::sqlite("open", path, &e))?;
    encryption::unlock(&conn, password, path)?;
    check(&conn, "main", path, Some(SCHEMA_VERSION))
}

/// Copies the database at `source` into `target` through SQLite, verified as a backup is
/// (see the module docs): what `source`'s WAL holds comes along, which a copy of the file
/// alone would leave behind (a database copied as it lay after a kill, or the file a
/// restore kept aside, holds its last commits there). Returns the copy's size. For
/// `aw-server restore`, which then puts the copy in place. `source` is opened as
/// [`BackupSource::open`] opens a database, so SQLite may fold its WAL into it when the
/// connection closes: its contents stay as they were.
pub fn copy_verified(source: &Path, password: Option<&DbPassword>, target: &Path) -> Result<u64> {
    BackupSource::open(source, password)?.write(target)
}

/// Copies the database of `conn` into `target` by way of a temporary file, verified.
pub(crate) fn write_verified(conn: &Connection, encrypted: bool, target: &Path) -> Result<u64> {
    write_checked(conn, encrypted, target, Some(SCHEMA_VERSION))
}

/// [`write_verified`] for a database of an older schema version (before a migration).
pub(crate) fn write_unchecked_version(
    conn: &Connection,
    encrypted: bool,
    target: &Path,
) -> Result<u64> {
    write_checked(conn, encrypted, target, None)
}

fn write_checked(
    conn: &Connection,
    encrypted: bool,
    target: &Path,
    version: Option<i64>,
) -> Result<u64> {
    let io = |what: &str, e: std::io::Error| {
        DatastoreError::io(&format!("write the backup's {what} for"), target, &e)
    };
    let folder = target.parent().ok_or_else(|| {
        let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path has no folder");
        DatastoreError::io("write the backup", target, &e)
    })?;
    std::fs::create_dir_all(folder).map_err(|e| io("folder", e))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = folder.join(format!(".{name}.partial"));
    remove_if_there(&temp).map_err(|e| io("temporary file", e))?;
    // Made empty with the database's mode before SQLite writes the copy into it (both
    // `VACUUM INTO` and an attached export take an empty file): a copy SQLite created under
    // the umask would be readable by others until its mode was set.
    if let Some(db) = conn.path().filter(|p| !p.is_empty()) {
        crate::file::create_file(&temp, Path::new(db)).map_err(|e| io("temporary file", e))?;
    }
    let copied = copy(conn, encrypted, &temp).and_then(|()| {
        conn.execute("ATTACH DATABASE ?1 AS checked", [path_text(&temp)?])?;
        let checked = check(conn, "checked", &temp, version);
        conn.execute_batch("DETACH DATABASE checked")?;
        checked
    });
    if let Err(e) = copied {
        let _ = remove_if_there(&temp);
        return Err(e);
    }
    let size = File::open(&temp)
        .and_then(|f| {
            f.sync_all()?;
            f.metadata()
        })
        .map_err(|e| io("file", e))?
        .len();
    std::fs::rename(&temp, target).map_err(|e| io("file", e))?;
    let _ = aw_platform::disk::sync_folder(folder);
    Ok(size)
}

/// Writes the consistent copy (one read transaction) into the new file `temp`.
fn copy(conn: &Connection, encrypted: bool, temp: &Path) -> Result<()> {
    let temp = path_text(temp)?;
    if encrypted {
        // Attached without a KEY clause, the copy takes the main database's key.
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        conn.execute("ATTACH DATABASE ?1 AS copy", [temp])?;
        let exported = conn
            .query_row("SELECT sqlcipher_export('copy')", [], |_| Ok(()))
            .and_then(|()| conn.execute_batch(&format!("PRAGMA copy.user_version = {version}")));
        conn.execute_batch("DETACH DATABASE copy")?;
        exported?;
    } else {
        conn.execute("VACUUM INTO ?1", [temp])?;
    }
    Ok(())
}

/// `integrity_check` and (when given) the schema version of the database attached as
/// `schema`.
fn check(conn: &Connection, schema: &str, path: &Path, expected: Option<i64>) -> Result<()> {
    let verdict: String = conn.query_row(&format!("PRAGMA {schema}.integrity_check"), [], |r| {
        r.get(0)
    })?;
    if verdict != "ok" {
        return Err(DatastoreError::Sql(
            format!(
                "the backup '{}' failed its integrity check: {verdict}",
                path.display()
            )
            .into(),
        ));
    }
    let version: i64 =
        conn.query_row(&format!("PRAGMA {schema}.user_version"), [], |r| r.get(0))?;
    match expected {
        Some(expected) if version != expected => Err(DatastoreError::Sql(
            format!(
                "the backup '{}' has schema version {version}, not {expected}",
                path.display()
            )
            .into(),
        )),
        _ => Ok(()),
    }
}

fn path_text(path: &Path) -> Result<&str> {
    path.to_str().ok_or_else(|| {
        let e = std::io::Error::new(std::io::ErrorKind::InvalidInput, "the name is not UTF-8");
        DatastoreError::io("name", path, &e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_is_a_verified_copy_and_a_damaged_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let store = crate::Datastore::open(&db).unwrap();
        store
            .create_bucket(&aw_models::Bucket::new("b", "t", "c", "h"))
            .wait()
            .unwrap();
        store.force_commit().wait().unwrap();
        let source = BackupSource::open(&db, None).unwrap();
        let target = dir.path().join("backups/one.db");
        let size = source.write(&target).unwrap();
        assert_eq!(size, std::fs::metadata(&target).unwrap().len());
        verify_backup(&target, None).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path().join("backups"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["one.db"], "no temporary file is left");

        let mut bytes = std::fs::read(&target).unwrap();
        let len = bytes.len();
        for b in &mut bytes[len / 2..] {
            *b = 0x33;
        }
        std::fs::write(&target, bytes).unwrap();
        assert!(verify_backup(&target, None).is_err());
    }
}
