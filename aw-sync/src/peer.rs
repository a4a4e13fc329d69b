//! Reading another device's sync file: as data, never as code (COMPATIBILITY.md, server #19).
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
//! The value limit is a choice the reference leaves open: the server accepts an event of up to
//! 1000 MB over HTTP, but a pass that kept memory bounded could not carry one. Events over
//! [`MAX_VALUE_BYTES`] of data (no watcher writes one: a window title is a few hundred bytes)
//! are not synced in either direction, and our own push skips them too, so a file this
//! crate writes never has a row a reader refuses.
//!
//! The reference opened peers read-write, which flipped journal modes, ran migrations and
//! left `-wal`/`-shm` files in folders it does not own (COMPATIBILITY.md, sync #5). A file that is not a
//! complete version-5 ActivityWatch database (a transfer cut short, a damaged copy, another
//! version) fails [`PeerFile::open`] and is skipped, so it is never imported half.

mod contents;
mod days;
mod file;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use contents::PageCursor;
pub use file::PeerFile;

/// The largest text a peer value may have: an event's or a bucket's data, a bucket's id.
/// Larger values are skipped and reported (see the module docs for why 8 MiB).
pub(crate) const MAX_VALUE_BYTES: usize = 8 << 20;

/// Event data read into one page at most (at least one event is always read): a page's
/// text, its parsed form and its copy in the server together stay well under 100 MB.
pub(crate) const PAGE_BYTES: usize = 8 << 20;

/// The largest peer file opened: far above a decade of a busy user's data (about 200 bytes
/// an event), far below what would let a crafted file stall a pass for long.
pub(crate) const MAX_FILE_BYTES: u64 = 16 << 30;

/// How long one pass may read one peer by default, before it moves on to the next; a
/// large honest peer takes several passes, each resuming where the last stopped.
pub(crate) const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(120);

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use aw_models::Event;
    use rusqlite::Connection;

    use crate::error::{Result, SyncError};

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
        // Refused by its schema, so it never ran; only a hang would reach this bound.
        assert!(started.elapsed() < Duration::from_secs(120));
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
        // Ten pages at most were read; only a hang would reach this bound.
        assert!(started.elapsed() < Duration::from_secs(120));
    }
}
