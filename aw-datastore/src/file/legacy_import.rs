//! One-time import of the Python aw-server's database (`peewee-sqlite.v2.db`).
//!
//! Runs only when our database was just created, so a user moving from the Python server
//! keeps their history, and nothing is imported twice. It finishes before the server
//! serves (`Datastore::open_with` waits for it).
//!
//! Unlike the reference, which imports everything in one transaction, each bucket is an
//! ordinary import request to the worker (the one owner of transactions), committed when
//! it is done (or in parts, for a history larger than the batch bound). So a bucket the
//! Python file cannot give (a damaged table) or a failure midway costs only what was not
//! imported yet, not the buckets already imported: a user keeps as much history as could be
//! read, rather than none. Either way the import is not tried again at the next start.

use aw_models::Bucket;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value};
use std::path::Path;

use crate::error::Result;
use crate::new_event::NewEvent;
use crate::store::created_from_text;

/// Reads the Python database at `path` (opened read-only) one bucket at a time and hands
/// each, with its events, to `import` (the worker's import request), so memory holds one
/// bucket's events at most. Returns the number of events handed over.
pub(crate) fn read_each(
    path: &Path,
    mut import: impl FnMut(Bucket, Vec<NewEvent>) -> Result<()>,
) -> Result<usize> {
    let legacy = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut buckets = Vec::new();
    {
        let mut stmt =
            legacy.prepare("SELECT key, id, type, client, hostname, created FROM bucketmodel")?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
            ))
        })?;
        for row in rows {
            buckets.push(row?);
        }
    }
    let mut total = 0;
    for (key, name, type_, client, hostname, created) in buckets {
        let mut stmt = legacy.prepare(
            "SELECT timestamp, duration, datastr FROM eventmodel WHERE bucket_id = ?1
             ORDER BY timestamp DESC",
        )?;
        let mut events = Vec::new();
        let rows = stmt.query_map([key], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, f64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?;
        for row in rows {
            let (ts, duration, datastr) = row?;
            match legacy_event(&ts, duration, &datastr) {
                Some(e) => events.push(e),
                None => log::warn!("Legacy import: skipping an unreadable event of '{name}'"),
            }
        }
        let bucket = Bucket {
            bid: None,
            id: name.clone(),
            _type: type_,
            client,
            hostname,
            created: created_from_text(&created),
            data: Map::new(),
            metadata: Default::default(),
            events: None,
            last_updated: None,
        };
        total += events.len();
        import(bucket, events)?;
        log::info!("Legacy import: imported bucket '{name}'");
    }
    Ok(total)
}

fn legacy_event(ts: &str, duration: f64, datastr: &str) -> Option<NewEvent> {
    let timestamp = created_from_text(&ts.replacen(' ', "T", 1))?;
    let data: Map<String, Value> = serde_json::from_str(datastr).ok()?;
    let event = aw_models::Event {
        id: None,
        timestamp,
        duration: aw_models::duration::from_secs_f64(duration)?,
        data,
    };
    NewEvent::from_event(&event).ok()
}
