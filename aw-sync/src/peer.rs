//! Reading another device's sync file: read-only and immutable, checked before use.
//!
//! The reference opened peers read-write, which flipped journal modes, ran migrations and
//! left `-wal`/`-shm` files in folders it does not own (SYNC.md §6 #5). Here a peer file is
//! opened with `mode=ro&immutable=1`: SQLite writes nothing, takes no locks and creates no
//! side files. A file that is not a complete version-5 ActivityWatch database (a transfer
//! cut short, a damaged copy, another version) fails [`PeerFile::open`] and is skipped,
//! so it is never imported half.

use std::path::{Path, PathBuf};

use aw_models::{timestamp, Bucket, Event};
use chrono::Duration;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value};

use crate::error::{Result, SyncError};

/// The only schema version read (the reference writes version 5).
const SCHEMA_VERSION: i64 = 5;

/// An open peer file.
pub struct PeerFile {
    path: PathBuf,
    conn: Connection,
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

impl PeerFile {
    /// Opens the file read-only and checks that it is a complete version-5 database;
    /// `check_pages` also reads every page (`PRAGMA quick_check`).
    pub fn open(path: &Path, check_pages: bool) -> Result<PeerFile> {
        let bad = |reason: String| SyncError::BadPeer {
            path: path.to_path_buf(),
            reason,
        };
        let uri = format!(
            "file:{}?mode=ro&immutable=1",
            uri_path(path).ok_or_else(|| bad("the path is not valid UTF-8".into()))?
        );
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&uri, flags).map_err(|e| bad(e.to_string()))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| bad(format!("not a database ({e})")))?;
        if version != SCHEMA_VERSION {
            return Err(bad(format!(
                "schema version {version}, only version {SCHEMA_VERSION} is read"
            )));
        }
        if check_pages {
            let verdict: String = conn
                .query_row("PRAGMA quick_check", [], |r| r.get(0))
                .map_err(|e| bad(format!("damaged ({e})")))?;
            if verdict != "ok" {
                return Err(bad(format!("damaged ({verdict})")));
            }
        }
        Ok(PeerFile {
            path: path.to_path_buf(),
            conn,
        })
    }

    fn bad(&self, reason: impl std::fmt::Display) -> SyncError {
        SyncError::BadPeer {
            path: self.path.clone(),
            reason: reason.to_string(),
        }
    }

    /// The file's buckets.
    pub fn buckets(&self) -> Result<Vec<PeerBucket>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, name, type, client, hostname, created, data FROM buckets ORDER BY id",
            )
            .map_err(|e| self.bad(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, Option<String>>(6)?,
                ))
            })
            .map_err(|e| self.bad(e))?;
        let mut buckets = Vec::new();
        for row in rows {
            let (row, id, kind, client, hostname, created, data) = row.map_err(|e| self.bad(e))?;
            let mut bucket = Bucket::new(&id, &kind, &client, &hostname);
            // Unreadable: none (the destination then uses its own time).
            bucket.created = aw_datastore::created_from_text(created.trim());
            bucket.data = match data.as_deref().map(serde_json::from_str::<Value>) {
                None => Map::new(),
                Some(Ok(Value::Object(map))) => map,
                Some(_) => {
                    return Err(
                        self.bad(format!("bucket '{id}' has data that is not a JSON object"))
                    )
                }
            };
            buckets.push(PeerBucket { row, bucket });
        }
        Ok(buckets)
    }

    /// The next page of at most `limit` events of the bucket after `cursor`, unclipped;
    /// the cursor moves to the last event returned.
    pub fn events_after(
        &self,
        bucket_row: i64,
        cursor: &mut PageCursor,
        limit: usize,
    ) -> Result<Vec<Event>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, starttime, endtime, data FROM events
                 WHERE bucketrow = ?1 AND starttime >= ?2
                   AND (starttime > ?2 OR endtime < ?3 OR (endtime = ?3 AND id < ?4))
                 ORDER BY starttime ASC, endtime DESC, id DESC LIMIT ?5",
            )
            .map_err(|e| self.bad(e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(
                rusqlite::params![bucket_row, cursor.start, cursor.end, cursor.id, limit],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                },
            )
            .map_err(|e| self.bad(e))?;
        let mut events = Vec::new();
        for row in rows {
            let (id, start, end, data) = row.map_err(|e| self.bad(e))?;
            let data = match serde_json::from_str::<Value>(&data) {
                Ok(Value::Object(map)) => map,
                _ => return Err(self.bad(format!("event {id} has data that is not a JSON object"))),
            };
            *cursor = PageCursor { start, end, id };
            events.push(Event::new(
                timestamp::from_ns(start),
                Duration::nanoseconds(end.saturating_sub(start)),
                data,
            ));
        }
        Ok(events)
    }

    /// The start and end of the bucket's event with row id `id`, if it is still there.
    pub fn extent_of(&self, bucket_row: i64, id: i64) -> Result<Option<(i64, i64)>> {
        self.conn
            .query_row(
                "SELECT starttime, endtime FROM events WHERE id = ?1 AND bucketrow = ?2",
                [id, bucket_row],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(self.bad(e)),
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
            .map_err(|e| self.bad(e))
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
