//! An open peer file: how it is opened as data and checked before anything is read (the
//! hardened connection, the schema checks), and the errors and time limit every read of it
//! shares. What is read from it is in `contents`.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rusqlite::config::DbConfig;
use rusqlite::limits::Limit;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::{ReadGuard, MAX_FILE_BYTES, MAX_VALUE_BYTES};
use crate::error::{Result, SyncError};

/// The only schema version read: the datastore's, which is the reference's (5).
use aw_datastore::SCHEMA_VERSION;

/// Virtual-machine steps between two checks of the stop flag and the clock: tens of
/// microseconds of work, so a stop is seen at once and the checks cost nothing measurable.
const PROGRESS_STEPS: i32 = 1000;

/// The columns a peer's tables must have (more are allowed; the reference's older files
/// have `data_deprecated`).
const BUCKET_COLUMNS: [&str; 7] = [
    "id", "name", "type", "client", "hostname", "created", "data",
];
const EVENT_COLUMNS: [&str; 5] = ["id", "bucketrow", "starttime", "endtime", "data"];

/// An open peer file.
pub struct PeerFile {
    path: PathBuf,
    /// The read-only, hardened connection (see `harden`).
    pub(super) conn: Connection,
    guard: ReadGuard,
    deadline: Instant,
    untimed_events: u64,
}

/// Lowers SQLite's limits, turns off everything in a schema that could run, and installs
/// the progress handler that ends a statement at a stop or at the deadline.
fn harden(conn: &mut Connection, guard: &ReadGuard, deadline: Instant) -> rusqlite::Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_VIEW, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)?;
    let value_limit = i32::try_from(MAX_VALUE_BYTES + 1024).unwrap_or(i32::MAX);
    for (limit, value) in [
        (Limit::SQLITE_LIMIT_LENGTH, value_limit),
        (Limit::SQLITE_LIMIT_SQL_LENGTH, 100_000),
        (Limit::SQLITE_LIMIT_COLUMN, 200),
        (Limit::SQLITE_LIMIT_EXPR_DEPTH, 100),
        (Limit::SQLITE_LIMIT_COMPOUND_SELECT, 4),
        (Limit::SQLITE_LIMIT_FUNCTION_ARG, 8),
        (Limit::SQLITE_LIMIT_ATTACHED, 0),
        (Limit::SQLITE_LIMIT_TRIGGER_DEPTH, 1),
        (Limit::SQLITE_LIMIT_WORKER_THREADS, 0),
    ] {
        conn.set_limit(limit, value)?;
    }
    let stop = Arc::clone(&guard.stop);
    conn.progress_handler(
        PROGRESS_STEPS,
        Some(move || stop.load(Ordering::Relaxed) || Instant::now() >= deadline),
    )
}

impl PeerFile {
    /// Opens the file with the default `ReadGuard` (for listing and tests).
    pub fn open(path: &Path, check_pages: bool) -> Result<PeerFile> {
        PeerFile::open_guarded(path, check_pages, ReadGuard::default())
    }

    /// Opens the file read-only, as data (see the module docs), and checks that it is a
    /// complete version-5 database with plain `buckets` and `events` tables; `check_pages`
    /// also reads every page (`PRAGMA quick_check`) and counts the events whose times or id
    /// are not integers (they are never read, see [`PeerFile::unreadable_events`]).
    pub fn open_guarded(path: &Path, check_pages: bool, guard: ReadGuard) -> Result<PeerFile> {
        let bad = |reason: String| SyncError::BadPeer {
            path: path.to_path_buf(),
            reason,
        };
        let meta = std::fs::symlink_metadata(path).map_err(SyncError::io("cannot read", path))?;
        if !meta.file_type().is_file() {
            return Err(bad(
                "not a regular file (a link, a folder or a device)".into()
            ));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(bad(format!(
                "{} bytes, more than the {MAX_FILE_BYTES} bytes a peer file may have",
                meta.len()
            )));
        }
        let uri = format!(
            "file:{}?mode=ro&immutable=1",
            uri_path(path).ok_or_else(|| bad("the path is not valid UTF-8".into()))?
        );
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let mut conn = Connection::open_with_flags(&uri, flags).map_err(|e| bad(e.to_string()))?;
        let deadline = Instant::now() + guard.time_limit;
        harden(&mut conn, &guard, deadline)
            .map_err(|e| bad(format!("cannot be opened safely ({e})")))?;
        let mut file = PeerFile {
            path: path.to_path_buf(),
            conn,
            guard,
            deadline,
            untimed_events: 0,
        };
        let version: i64 = file
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| file.sql_error("not a database", e))?;
        if version != SCHEMA_VERSION {
            return Err(file.bad(format!(
                "schema version {version}, only version {SCHEMA_VERSION} is read"
            )));
        }
        file.check_table("buckets", &BUCKET_COLUMNS)?;
        file.check_table("events", &EVENT_COLUMNS)?;
        if check_pages {
            let verdict: String = file
                .conn
                .query_row("PRAGMA quick_check", [], |r| r.get(0))
                .map_err(|e| file.sql_error("damaged", e))?;
            if verdict != "ok" {
                return Err(file.bad(format!("damaged ({verdict})")));
            }
            file.untimed_events = file
                .conn
                .query_row(
                    "SELECT count(*) FROM events WHERE typeof(id) != 'integer'
                       OR typeof(starttime) != 'integer' OR typeof(endtime) != 'integer'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .map(|n| n.max(0) as u64)
                .map_err(|e| file.sql_error("unreadable", e))?;
        }
        Ok(file)
    }

    /// Checks that `table` is a plain table (not a view or virtual table) with `columns`
    /// and no generated or hidden column, so that reading it evaluates nothing of the file.
    pub(super) fn check_table(&self, table: &str, columns: &[&str]) -> Result<()> {
        let found: Option<(String, String)> = self
            .conn
            .query_row(
                "SELECT type, coalesce(sql, '') FROM sqlite_schema WHERE name = ?1 COLLATE NOCASE",
                [table],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.sql_error("unreadable schema", e))?;
        let Some((kind, sql)) = found else {
            return Err(self.bad(format!("it has no '{table}' table")));
        };
        if kind != "table" {
            return Err(self.bad(format!("'{table}' is a {kind}, not a table")));
        }
        let words: Vec<String> = sql
            .split_whitespace()
            .take(2)
            .map(str::to_ascii_uppercase)
            .collect();
        if words.get(1).is_some_and(|w| w == "VIRTUAL") {
            return Err(self.bad(format!("'{table}' is a virtual table")));
        }
        let mut stmt = self
            .conn
            .prepare(&format!("PRAGMA table_xinfo(\"{table}\")"))
            .map_err(|e| self.sql_error("unreadable schema", e))?;
        let listed = stmt
            .query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, i64>(6)?)))
            .map_err(|e| self.sql_error("unreadable schema", e))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.sql_error("unreadable schema", e))?;
        if let Some((name, _)) = listed.iter().find(|(_, hidden)| *hidden != 0) {
            return Err(self.bad(format!(
                "'{table}' has a generated or hidden column '{name}'"
            )));
        }
        for column in columns {
            if !listed
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case(column))
            {
                return Err(self.bad(format!("'{table}' has no column '{column}'")));
            }
        }
        Ok(())
    }

    /// The error that makes this file bad, saying why.
    pub(super) fn bad(&self, reason: impl std::fmt::Display) -> SyncError {
        SyncError::BadPeer {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }

    /// The error for a failed statement: an interruption is the stop or the time limit,
    /// anything else makes the file bad (`what`: what the failure says about the file).
    pub(super) fn sql_error(&self, what: &str, e: rusqlite::Error) -> SyncError {
        if e.sqlite_error_code() == Some(ErrorCode::OperationInterrupted) {
            return self.time_error();
        }
        self.bad(format!("{what} ({e})"))
    }

    fn time_error(&self) -> SyncError {
        if self.guard.stop.load(Ordering::Relaxed) {
            SyncError::Stopped
        } else {
            SyncError::PeerTimeLimit {
                path: self.path.clone(),
                seconds: self.guard.time_limit.as_secs(),
            }
        }
    }

    /// Ends the read once the pass must stop or this peer's time is up (checked between
    /// pages; inside a statement the progress handler does it).
    pub fn check_time(&self) -> Result<()> {
        if self.guard.stop.load(Ordering::Relaxed) || Instant::now() >= self.deadline {
            Err(self.time_error())
        } else {
            Ok(())
        }
    }

    /// Events whose id or times are not integers, found by the last page check: they
    /// cannot be placed in time and are never read.
    pub fn unreadable_events(&self) -> u64 {
        self.untimed_events
    }
}

/// The path as a URI path: `?`, `#` and `%` escaped (the rest is taken literally).
fn uri_path(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            '%' => out.push_str("%25"),
            c => out.push(c),
        }
    }
    Some(out)
}
