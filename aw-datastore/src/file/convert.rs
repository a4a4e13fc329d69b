//! Moving a database between plain and encrypted: [`convert`] writes an encrypted copy of
//! a plain database or a plain copy of an encrypted one (`sqlcipher_export`), verifies it
//! against the original (integrity check, schema version, row counts and sums), and only
//! then puts it in the original's place; on any failure the original is untouched.

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

use crate::error::{DatastoreError, Result};
use crate::file::database_file::DatabaseFile;
use crate::file::encryption::{unlock, DbPassword, AVAILABLE};
use crate::file::names::with_suffix;

/// Which way [`convert`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// A plain database becomes an encrypted one.
    Encrypt,
    /// An encrypted database becomes a plain one.
    Decrypt,
}

/// What a conversion copied (and verified).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Converted {
    /// Buckets in the database.
    pub buckets: i64,
    /// Events in the database.
    pub events: i64,
}

/// Encrypts the plain database at `path` with `password`, or decrypts it (`Direction`), in
/// place: the new file is written beside it, verified against it, and only then renamed over
/// it. The server must not be running on the file (its lock is taken). Nothing of the
/// original changes if any step fails.
pub fn convert(path: &Path, password: &DbPassword, direction: Direction) -> Result<Converted> {
    if !AVAILABLE {
        return Err(DatastoreError::Encryption(
            "this build has no database encryption (build with the `encryption` feature)".into(),
        ));
    }
    if !path.exists() {
        return Err(DatastoreError::Sql(
            format!("no database at '{}'", path.display()).into(),
        ));
    }
    let file = DatabaseFile::claim(path)?;
    file.require_lock("convert the database")?;
    let (source_key, target_key) = match direction {
        Direction::Encrypt => (None, Some(password)),
        Direction::Decrypt => (Some(password), None),
    };
    // Writes the last run acknowledged but did not commit go in first: the converted file
    // could not read a journal written under the other encryption.
    file.apply_held_writes(source_key)?;
    let target = sibling(path, "converting");
    remove_with_side_files(&target)?;
    let expected = export(path, source_key, &target, target_key)?;
    verify(&target, target_key, &expected)?;
    if with_suffix(path, "-wal")
        .metadata()
        .is_ok_and(|m| m.len() > 0)
    {
        let _ = remove_with_side_files(&target);
        return Err(DatastoreError::Sql(
            format!(
                "'{}' still has a write-ahead log; the original is unchanged",
                path.display()
            )
            .into(),
        ));
    }
    file.replace_discarding(&target).map_err(|e| {
        DatastoreError::Sql(
            format!(
                "cannot put the converted copy in place of '{}': {e}",
                path.display()
            )
            .into(),
        )
    })?;
    if let Err(e) = file.forget_side_state() {
        log::warn!(
            "Cannot remove the old side files of '{}': {e}",
            path.display()
        );
    }
    drop(file);
    Ok(Converted {
        buckets: expected.buckets,
        events: expected.events,
    })
}

/// Writes the database at `path` (opened with `source_key`) into `target` under
/// `target_key`; returns what the copy must hold.
fn export(
    path: &Path,
    source_key: Option<&DbPassword>,
    target: &Path,
    target_key: Option<&DbPassword>,
) -> Result<Fingerprint> {
    // CREATE: the connection's flags are the ones ATTACH creates the copy with.
    let source = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
    )?;
    unlock(&source, source_key, path)?;
    // Everything in the WAL goes into the main file first: the copy reads one file, and
    // no WAL of the original may be left to be applied to the new file.
    source.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    let expected = fingerprint(&source)?;
    let version: i64 = source.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    source.execute(
        "ATTACH DATABASE ?1 AS target KEY ?2",
        (
            target.to_string_lossy().as_ref(),
            target_key.map_or("", DbPassword::as_str),
        ),
    )?;
    source.query_row("SELECT sqlcipher_export('target')", [], |_| Ok(()))?;
    // `sqlcipher_export` copies the schema and rows, not the schema version.
    source.execute_batch(&format!("PRAGMA target.user_version = {version}"))?;
    source.execute_batch("DETACH DATABASE target")?;
    source.close().map_err(|(_, e)| DatastoreError::from(e))?;
    Ok(expected)
}

/// Checks the copy at `target` as the server will open it (with `target_key`): intact,
/// and holding what the original held; removes it when it is not.
fn verify(target: &Path, target_key: Option<&DbPassword>, expected: &Fingerprint) -> Result<()> {
    let copy = Connection::open_with_flags(target, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    unlock(&copy, target_key, target)?;
    let check: String = copy.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    let found = fingerprint(&copy)?;
    if check == "ok" && found == *expected {
        return Ok(());
    }
    drop(copy);
    let _ = remove_with_side_files(target);
    Err(DatastoreError::Sql(
        format!(
            "the converted copy does not match the original (integrity {check}, \
             {found:?} vs {expected:?}); the original is unchanged"
        )
        .into(),
    ))
}

/// What must come out of a copy unchanged.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fingerprint {
    buckets: i64,
    events: i64,
    settings: i64,
    event_sum: f64,
    data_bytes: f64,
    version: i64,
}

fn fingerprint(conn: &Connection) -> Result<Fingerprint> {
    let count = |table: &str| -> Result<i64> {
        // A new file may not have every table yet.
        let exists: i64 = conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )?;
        if exists == 0 {
            return Ok(0);
        }
        Ok(conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?)
    };
    let (events, event_sum, data_bytes) = if count("events")? > 0 {
        conn.query_row(
            "SELECT count(*), total(id + starttime % 1000003 + endtime % 1000033),
                    total(length(data)) FROM events",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?
    } else {
        (0, 0.0, 0.0)
    };
    Ok(Fingerprint {
        buckets: count("buckets")?,
        events,
        settings: count("key_value")?,
        event_sum,
        data_bytes,
        version: conn.query_row("PRAGMA user_version", [], |r| r.get(0))?,
    })
}

/// `path` with `.{what}` added to its file name.
fn sibling(path: &Path, what: &str) -> PathBuf {
    with_suffix(path, &format!(".{what}"))
}

/// Removes a database file and its journal side files, if they exist.
fn remove_with_side_files(path: &Path) -> Result<()> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        match std::fs::remove_file(with_suffix(path, suffix)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(DatastoreError::Sql(
                    format!(
                        "cannot remove '{}': {e}",
                        with_suffix(path, suffix).display()
                    )
                    .into(),
                ))
            }
        }
    }
    Ok(())
}
