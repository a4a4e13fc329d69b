//! Reading another device's sync file: as data, never as code (HAZARDS 19).
//!
//! Any device that can write to the shared folder can put any file there: a damaged copy,
//! a transfer cut short, or a file crafted to hurt the reader (an `events` *view* running an
//! endless recursive query, rows of 200 MB strings, wrong-typed columns). So a peer file is
//! opened in a way that runs nothing of it and bounds what reading it can cost:
//!
//! - read-only and immutable (`mode=ro&immutable=1`): SQLite writes nothing, takes no locks,
//!   creates no side files, and never follows a symbolic link to the file (`NOFOLLOW`);
//! - `trusted_schema` off and defensive mode on, and `buckets` and `events` must be plain
//!   tables with the reference's columns and no generated ones: no view, trigger, virtual
//!   table or schema function of the file is ever evaluated;
//! - SQLite's limits are lowered ([`MAX_VALUE_BYTES`] per value, short SQL, shallow
//!   expressions), and a file over [`MAX_FILE_BYTES`] is not opened;
//! - a progress handler interrupts any statement once the pass is asked to stop or the
//!   peer's time in this pass ([`ReadGuard`]) is up; the next pass resumes where it stopped;
//! - a page holds at most [`PAGE_BYTES`] of event data, so a pass's memory stays flat
//!   whatever the file holds;
//! - a single event that cannot be synced (data over [`MAX_VALUE_BYTES`], not a JSON
//!   object, nested deeper than JSON parsing allows, times that are not integers) is
//!   skipped and reported, not the whole peer; a bucket row likewise.
//!
//! The value limit is a choice the spec leaves open: the server accepts an event of up to
//! 1000 MB over HTTP, but a pass that kept memory bounded could not carry one. Events over
//! [`MAX_VALUE_BYTES`] of data (no watcher writes one: a window title is a few hundred bytes)
//! are not synced in either direction, and our own push skips them too, so a file this
//! crate writes never has a row a reader refuses.
//!
//! The reference opened peers read-write, which flipped journal modes, ran migrations and
//! left `-wal`/`-shm` files in folders it does not own (SYNC.md §6 #5). A file that is not a
//! complete version-5 ActivityWatch database (a transfer cut short, a damaged copy, another
//! version) fails [`PeerFile::open`] and is skipped, so it is never imported half.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aw_models::{timestamp, Bucket, Event};
use rusqlite::config::DbConfig;
use rusqlite::limits::Limit;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde_json::{Map, Value};

use crate::error::{Result, SyncError};

/// The only schema version read: the datastore's, which is the reference's (5).
use aw_datastore::SCHEMA_VERSION;

/// The largest text a peer value may have: an event's or a bucket's data, a bucket's id.
/// Larger values are skipped and reported (see the module docs for why 8 MiB).
pub const MAX_VALUE_BYTES: usize = 8 << 20;

/// Event data read into one page at most (at least one event is always read): a page's
/// text, its parsed form and its copy in the server together stay well under 100 MB.
pub const PAGE_BYTES: usize = 8 << 20;

/// The largest peer file opened: far above a decade of a busy user's data (about 200 bytes
/// an event), far below what would let a crafted file stall a pass for long.
pub const MAX_FILE_BYTES: u64 = 16 << 30;

/// How long one pass may read one peer by default, before it moves on to the next; a
/// large honest peer takes several passes, each resuming where the last stopped.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(120);

/// Virtual-machine steps between two checks of the stop flag and the clock: tens of
/// microseconds of work, so a stop is seen at once and the checks cost nothing measurable.
const PROGRESS_STEPS: i32 = 1000;

/// The columns a peer's tables must have (more are allowed; the reference's older files
/// have `data_deprecated`).
const BUCKET_COLUMNS: [&str; 7] = [
    "id", "name", "type", "client", "hostname", "created", "data",
];
const EVENT_COLUMNS: [&str; 5] = ["id", "bucketrow", "starttime", "endtime", "data"];

/// When reading a peer must stop: the pass's stop flag, and this peer's time limit.
#[derive(Clone, Debug)]
pub struct ReadGuard {
    /// Set when the process or the server is stopping.
    pub stop: Arc<AtomicBool>,
    /// The time this peer may be read in one pass, from its opening.
    pub time_limit: Duration,
}

impl Default for ReadGuard {
    fn default() -> ReadGuard {
        ReadGuard {
            stop: Arc::new(AtomicBool::new(false)),
            time_limit: DEFAULT_TIME_LIMIT,
        }
    }
}

/// An open peer file.
pub struct PeerFile {
    path: PathBuf,
    conn: Connection,
    guard: ReadGuard,
    deadline: Instant,
    untimed_events: u64,
}

/// A bucket of a peer file.
pub struct PeerBucket {
    /// Its row id in the file (the events' `bucketrow`).
    pub row: i64,
    /// The bucket, without events.
    pub bucket: Bucket,
}

/// Where a page read stopped: the last event's start, end and id, in the order events are
/// read (start ascending; at one start, end and id descending: the index's own order read
/// backwards, so pages never sort).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageCursor {
    /// The last event's start (ns).
    pub start: i64,
    /// Its end (ns).
    pub end: i64,
    /// Its row id in the peer file.
    pub id: i64,
}

impl PageCursor {
    /// Before every event that starts at `from` or later.
    pub fn at(from: i64) -> PageCursor {
        PageCursor {
            start: from,
            end: i64::MAX,
            id: i64::MAX,
        }
    }
}

/// A page of a bucket's events.
#[derive(Debug, Default)]
pub struct Page {
    /// The events that can be synced, in read order.
    pub events: Vec<Event>,
    /// Rows passed over, by row id, with the reason.
    pub skipped: Vec<(i64, String)>,
    /// Whether more rows may follow (the page stopped at its row or byte limit).
    pub more: bool,
}

/// `column` as text of at most [`MAX_VALUE_BYTES`] (bound as `?1`), else NULL; the value
/// itself is never loaded when it is not text or too long (`octet_length` reads only its
/// header).
fn text_or_null(column: &str) -> String {
    format!(
        "CASE WHEN typeof({column}) = 'text' AND octet_length({column}) <= ?1 THEN {column} END"
    )
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
    /// Opens the file with the default [`ReadGuard`] (for listing and tests).
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
    fn check_table(&self, table: &str, columns: &[&str]) -> Result<()> {
        let found: Option<(String, String)> = self
            .conn
            .query_row(
                "SELECT type, coalesce(sql, '') FROM sqlite_schema WHERE name = ?1 COLLATE NOCASE",
                [table],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(e),
            })
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

    fn bad(&self, reason: impl std::fmt::Display) -> SyncError {
        SyncError::BadPeer {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }

    /// The error for a failed statement: an interruption is the stop or the time limit,
    /// anything else makes the file bad (`what`: what the failure says about the file).
    fn sql_error(&self, what: &str, e: rusqlite::Error) -> SyncError {
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

    /// The row ids of the file's buckets, in order.
    pub fn bucket_rows(&self) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM buckets WHERE typeof(id) = 'integer' ORDER BY id")
            .map_err(|e| self.sql_error("unreadable", e))?;
        let rows = stmt
            .query_map([], |r| r.get::<_, i64>(0))
            .map_err(|e| self.sql_error("unreadable", e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.sql_error("unreadable", e))
    }

    /// The bucket at row `row`; an error names what in it cannot be synced.
    pub fn bucket(&self, row: i64) -> Result<PeerBucket> {
        let columns = ["name", "type", "client", "hostname", "created", "data"];
        let sql = format!(
            "SELECT {}, typeof(data) FROM buckets WHERE id = ?2",
            columns.map(text_or_null).join(", ")
        );
        let max = i64::try_from(MAX_VALUE_BYTES).unwrap_or(i64::MAX);
        let values = self
            .conn
            .query_row(&sql, rusqlite::params![max, row], |r| {
                let mut values = Vec::with_capacity(columns.len());
                for i in 0..columns.len() {
                    values.push(r.get::<_, Option<String>>(i)?);
                }
                Ok((values, r.get::<_, String>(columns.len())?))
            })
            .map_err(|e| self.sql_error(&format!("bucket row {row} unreadable"), e))?;
        let (mut values, data_type) = values;
        let mut take = |i: usize| -> Result<String> {
            values[i].take().ok_or_else(|| {
                self.bad(format!(
                    "bucket row {row}: '{}' is not text of at most {MAX_VALUE_BYTES} bytes",
                    columns[i]
                ))
            })
        };
        let (id, kind, client, hostname, created) =
            (take(0)?, take(1)?, take(2)?, take(3)?, take(4)?);
        let data = match (take(5), data_type.as_str()) {
            (Ok(text), _) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => map,
                _ => {
                    return Err(
                        self.bad(format!("bucket '{id}' has data that is not a JSON object"))
                    )
                }
            },
            // Files of older versions may have none.
            (Err(_), "null") => Map::new(),
            (Err(e), _) => return Err(e),
        };
        let mut bucket = Bucket::new(&id, &kind, &client, &hostname);
        // Unreadable: none (the destination then uses its own time).
        bucket.created = aw_datastore::created_from_text(created.trim());
        bucket.data = data;
        Ok(PeerBucket { row, bucket })
    }

    /// Every bucket of the file; the first one that cannot be read fails the call.
    pub fn buckets(&self) -> Result<Vec<PeerBucket>> {
        self.bucket_rows()?
            .into_iter()
            .map(|row| self.bucket(row))
            .collect()
    }

    /// The next page of the bucket's events after `cursor`, unclipped: at most `limit`
    /// rows and about [`PAGE_BYTES`] of data. The cursor moves past every row read,
    /// skipped ones included.
    pub fn events_after(
        &self,
        bucket_row: i64,
        cursor: &mut PageCursor,
        limit: usize,
    ) -> Result<Page> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT id, starttime, endtime, {}, typeof(data), octet_length(data)
                 FROM events
                 WHERE bucketrow = ?2 AND starttime >= ?3
                   AND (starttime > ?3 OR endtime < ?4 OR (endtime = ?4 AND id < ?5))
                   AND typeof(starttime) = 'integer' AND typeof(endtime) = 'integer'
                   AND typeof(id) = 'integer'
                 ORDER BY starttime ASC, endtime DESC, id DESC LIMIT ?6",
                text_or_null("data")
            ))
            .map_err(|e| self.sql_error("unreadable", e))?;
        let max = i64::try_from(MAX_VALUE_BYTES).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(
                rusqlite::params![
                    max,
                    bucket_row,
                    cursor.start,
                    cursor.end,
                    cursor.id,
                    i64::try_from(limit).unwrap_or(i64::MAX)
                ],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, Option<String>>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, i64>(5)?,
                    ))
                },
            )
            .map_err(|e| self.sql_error("unreadable", e))?;
        let mut page = Page::default();
        let (mut seen, mut bytes) = (0usize, 0usize);
        for row in rows {
            let (id, start, end, data, data_type, length) =
                row.map_err(|e| self.sql_error("unreadable", e))?;
            *cursor = PageCursor { start, end, id };
            seen += 1;
            let parsed = match data {
                None if data_type != "text" => Err(format!("data is {data_type}, not text")),
                None => Err(format!(
                    "data is {length} bytes, more than the {MAX_VALUE_BYTES} a synced event may have"
                )),
                Some(text) => {
                    bytes += text.len();
                    serde_json::from_str::<Map<String, Value>>(&text)
                        .map_err(|e| format!("data is not a JSON object ({e})"))
                }
            };
            match parsed {
                Ok(data) => page.events.push(Event::new(
                    timestamp::from_ns(start),
                    chrono::Duration::nanoseconds(end.saturating_sub(start)),
                    data,
                )),
                Err(reason) => page.skipped.push((id, reason)),
            }
            if bytes >= PAGE_BYTES {
                page.more = true;
                return Ok(page);
            }
        }
        page.more = seen == limit;
        Ok(page)
    }

    /// The start and end of the bucket's event with row id `id`, if it is still there.
    pub fn extent_of(&self, bucket_row: i64, id: i64) -> Result<Option<(i64, i64)>> {
        self.conn
            .query_row(
                "SELECT starttime, endtime FROM events WHERE id = ?1 AND bucketrow = ?2
                   AND typeof(starttime) = 'integer' AND typeof(endtime) = 'integer'",
                [id, bucket_row],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(self.sql_error("unreadable", e)),
            })
    }

    /// Number of events of the bucket.
    pub fn count(&self, bucket_row: i64) -> Result<u64> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM events WHERE bucketrow = ?1",
                [bucket_row],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.sql_error("unreadable", e))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's version-5 tables, with `events` built by `events_sql`.
    fn crafted(dir: &Path, events_sql: &str, fill: &str) -> PathBuf {
        let path = dir.join("test.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE buckets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE NOT NULL,
                type TEXT NOT NULL, client TEXT NOT NULL, hostname TEXT NOT NULL,
                created TEXT NOT NULL, data TEXT NOT NULL DEFAULT '{{}}');
             INSERT INTO buckets (name, type, client, hostname, created)
                VALUES ('aw-watcher-window_x', 'currentwindow', 'w', 'x', '2026-01-01T00:00:00Z');
             {events_sql};
             {fill};
             PRAGMA user_version = 5;"
        ))
        .unwrap();
        path
    }

    const PLAIN_EVENTS: &str = "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT,
        bucketrow INTEGER NOT NULL, starttime INTEGER NOT NULL, endtime INTEGER NOT NULL,
        data TEXT NOT NULL)";

    fn reason(result: Result<PeerFile>) -> String {
        match result {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        }
    }

    fn all_events(file: &PeerFile) -> (Vec<Event>, Vec<(i64, String)>) {
        let mut cursor = PageCursor::at(i64::MIN);
        let (mut events, mut skipped) = (Vec::new(), Vec::new());
        loop {
            let page = file.events_after(1, &mut cursor, 5000).unwrap();
            events.extend(page.events);
            skipped.extend(page.skipped);
            if !page.more {
                return (events, skipped);
            }
        }
    }

    #[test]
    fn an_endless_view_is_refused_before_anything_of_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = crafted(
            dir.path(),
            "CREATE VIEW events AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
             SELECT i AS id, 1 AS bucketrow, i AS starttime, i AS endtime, '{}' AS data FROM n",
            "SELECT 1",
        );
        let started = Instant::now();
        let text = reason(PeerFile::open(&path, true));
        assert!(text.contains("'events' is a view"), "{text}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn generated_columns_virtual_tables_and_missing_columns_are_refused() {
        for (sql, expected) in [
            (
                "CREATE TABLE events (id INTEGER PRIMARY KEY, bucketrow INTEGER,
                    starttime INTEGER, endtime INTEGER,
                    data TEXT GENERATED ALWAYS AS (printf('%.*c', 100000000, 'x')))",
                "generated or hidden column 'data'",
            ),
            (
                "CREATE VIRTUAL TABLE events USING fts5(id, bucketrow, starttime, endtime, data)",
                "virtual table",
            ),
            (
                "CREATE TABLE events (id INTEGER PRIMARY KEY, bucketrow INTEGER, starttime INTEGER)",
                "has no column 'endtime'",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = crafted(dir.path(), sql, "SELECT 1");
            let text = reason(PeerFile::open(&path, true));
            assert!(text.contains(expected), "{sql}: {text}");
        }
    }

    #[test]
    fn rows_that_cannot_be_synced_are_skipped_one_by_one_and_the_rest_read() {
        let dir = tempfile::tempdir().unwrap();
        let big = MAX_VALUE_BYTES + 1;
        let path = crafted(
            dir.path(),
            PLAIN_EVENTS,
            &format!(
                "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES
                    (1, 1, 2, '{{\"title\":\"good 1\"}}'),
                    (1, 2, 3, '{{\"title\":\"' || printf('%.*c', {big}, 'x') || '\"}}'),
                    (1, 3, 4, x'7b7d'),
                    (1, 4, 5, '[1, 2]'),
                    (1, 5, 6, '{{\"a\":' || printf('%.*c', 300, '[') || printf('%.*c', 300, ']') || '}}'),
                    (1, 'noon', 7, '{{}}'),
                    (1, 7, 8.5, '{{}}'),
                    (1, 8, 9, '{{\"title\":\"good 2\"}}')"
            ),
        );
        let file = PeerFile::open(&path, true).unwrap();
        assert_eq!(file.unreadable_events(), 2, "text start, real end");
        let (events, skipped) = all_events(&file);
        let titles: Vec<_> = events.iter().map(|e| e.data["title"].clone()).collect();
        assert_eq!(titles, ["good 1", "good 2"]);
        let reasons: Vec<_> = skipped.iter().map(|(id, r)| (*id, r.as_str())).collect();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(
            reasons[0].1.contains("more than the 8388608"),
            "{reasons:?}"
        );
        assert!(reasons[1].1.contains("blob, not text"), "{reasons:?}");
        assert!(reasons[2].1.contains("not a JSON object"), "{reasons:?}");
        assert!(reasons[3].1.contains("recursion limit"), "{reasons:?}");
    }

    #[test]
    fn a_page_holds_a_bounded_amount_of_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = crafted(
            dir.path(),
            PLAIN_EVENTS,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
             INSERT INTO events (bucketrow, starttime, endtime, data)
             SELECT 1, i, i + 1, '{\"t\":\"' || printf('%.*c', 1000000, 'x') || '\"}' FROM n",
        );
        let file = PeerFile::open(&path, false).unwrap();
        let mut cursor = PageCursor::at(i64::MIN);
        let mut pages = Vec::new();
        loop {
            let page = file.events_after(1, &mut cursor, 5000).unwrap();
            pages.push(page.events.len());
            if !page.more {
                break;
            }
        }
        assert_eq!(pages.iter().sum::<usize>(), 40);
        assert!(pages.iter().all(|&n| n <= 9), "{pages:?}");
    }

    #[test]
    fn a_stop_or_the_time_limit_ends_a_read_and_links_are_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = crafted(
            dir.path(),
            PLAIN_EVENTS,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
             INSERT INTO events (bucketrow, starttime, endtime, data) SELECT 1, i, i + 1, '{}' FROM n",
        );
        let guard = ReadGuard::default();
        let file = PeerFile::open_guarded(&path, false, guard.clone()).unwrap();
        guard.stop.store(true, Ordering::Relaxed);
        let mut cursor = PageCursor::at(i64::MIN);
        assert!(matches!(
            file.events_after(1, &mut cursor, 5000),
            Err(SyncError::Stopped)
        ));
        let slow = ReadGuard {
            time_limit: Duration::ZERO,
            ..ReadGuard::default()
        };
        let text = reason(PeerFile::open_guarded(&path, true, slow));
        assert!(text.contains("not read to the end in 0 s"), "{text}");

        let link = dir.path().join("link.db");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let text = reason(PeerFile::open(&link, true));
        assert!(text.contains("not a regular file"), "{text}");
    }

    #[test]
    fn a_file_changed_or_replaced_while_it_is_read_gives_errors_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let fill = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO events (bucketrow, starttime, endtime, data)
             SELECT 1, i, i + 1, '{\"title\":\"' || printf('%.*c', 200, 'x') || '\"}' FROM n";
        let path = crafted(dir.path(), PLAIN_EVENTS, fill);
        let bytes = std::fs::read(&path).unwrap();
        // Replaced by rename: the open file keeps reading the old one, whole.
        let file = PeerFile::open(&path, true).unwrap();
        let mut cursor = PageCursor::at(i64::MIN);
        let first = file.events_after(1, &mut cursor, 5000).unwrap();
        let other = dir.path().join("other.db");
        std::fs::write(&other, b"something else entirely").unwrap();
        std::fs::rename(&other, &path).unwrap();
        let mut n = first.events.len();
        loop {
            let page = file.events_after(1, &mut cursor, 5000).unwrap();
            n += page.events.len();
            if !page.more {
                break;
            }
        }
        assert_eq!(n, 20000);
        drop(file);
        // Overwritten in place: whatever is read is an error or data, never a hang or panic.
        std::fs::write(&path, &bytes).unwrap();
        let file = PeerFile::open(&path, true).unwrap();
        let mut cursor = PageCursor::at(i64::MIN);
        file.events_after(1, &mut cursor, 5000).unwrap();
        let mut garbage = bytes.clone();
        for (i, b) in garbage.iter_mut().enumerate().skip(bytes.len() / 3) {
            *b = (i.wrapping_mul(2654435761) >> 7) as u8;
        }
        std::fs::write(&path, &garbage).unwrap();
        let started = Instant::now();
        for _ in 0..10 {
            match file.events_after(1, &mut cursor, 5000) {
                Ok(page) if page.more => {}
                _ => break,
            }
        }
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
