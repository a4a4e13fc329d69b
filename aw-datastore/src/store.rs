//! The database operations, run on the worker thread against its one connection.
//!
//! `Store` owns the connection and the in-memory state that mirrors the database: the bucket
//! cache (with event count, time span and longest event per bucket) and the last-heartbeat
//! cache. Every write updates the mirror in the same call, and [`Store::reload`] rebuilds it
//! from disk after a failed commit, so the mirror never disagrees with what a read returns.

use aw_models::canonical::canonical_object;
use aw_models::{Bucket, BucketMetadata};
use chrono::{DateTime, NaiveDateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::batch::{Batch, Change};
use crate::error::{DatastoreError, Result};
use crate::new_event::NewEvent;
use crate::privacy::{PrivacyFilter, Verdict, PRIVACY_FILTERS_KEY};
use crate::range_read::{row_to_raw, RangeRead};
use crate::raw_event::{EventRows, RawEvent};
use crate::schema::LONG_EVENT_NS;
use crate::shared::{BucketMap, BucketShared, Shared};
use std::sync::Arc;

/// The worker's state: the connection and the caches that mirror it.
pub struct Store {
    conn: Connection,
    /// Each bucket's fields, count and span, shared with readers (see `shared.rs`).
    buckets: HashMap<String, Arc<BucketShared>>,
    /// Where the bucket map is published for readers.
    shared: Arc<Shared>,
    /// Last heartbeat event per bucket row: what the next heartbeat may merge into.
    last_heartbeat: HashMap<i64, RawEvent>,
    privacy: PrivacyFilter,
    /// What was written since the last commit: the worker's commit policy reads it, and
    /// replays it if SQLite rolls the transaction back (see `batch.rs`).
    pub batch: Batch,
}

/// One event of a bucket by id (columns as `range_read::row_to_raw` reads them).
const EVENT_BY_ID_SQL: &str =
    "SELECT id, starttime, endtime, data FROM events WHERE bucketrow = ?1 AND id = ?2";
/// The newest event of a bucket (greatest start; ties ordered as range reads order them).
const LAST_EVENT_SQL: &str = "SELECT id, starttime, endtime, data FROM events WHERE bucketrow = ?1
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT 1";

/// The largest event data (bytes of text) the last-heartbeat cache keeps.
const MAX_CACHED_DATA: usize = 64 << 10;

/// Inserts a new event with an automatic id.
const INSERT_SQL: &str =
    "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (?1, ?2, ?3, ?4)";

/// The text form of `buckets.created`: `YYYY-MM-DD HH:MM:SS[.fraction]+00:00`, as the
/// reference writes it.
fn created_to_text(dt: &DateTime<Utc>) -> String {
    dt.format("%Y-%m-%d %H:%M:%S%.f+00:00").to_string()
}

/// Reads `buckets.created` (ours, the reference's, or the Python server's forms).
pub(crate) fn created_from_text(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(dt) = DateTime::parse_from_rfc3339(text) {
        return Some(dt.with_timezone(&Utc));
    }
    if let Ok(dt) = DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z") {
        return Some(dt.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(text, fmt) {
            return Some(naive.and_utc());
        }
    }
    None
}

impl Store {
    /// Wraps an open, migrated connection and loads the caches.
    pub fn new(conn: Connection, shared: Arc<Shared>) -> Result<Store> {
        let mut store = Store {
            conn,
            buckets: HashMap::new(),
            shared,
            last_heartbeat: HashMap::new(),
            privacy: PrivacyFilter::default(),
            batch: Batch::default(),
        };
        store.reload()?;
        Ok(store)
    }

    /// The connection, for transaction control by the worker.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Rebuilds every cache from the database (at open, and after a failed commit lost
    /// writes the caches had already seen).
    pub fn reload(&mut self) -> Result<()> {
        self.buckets.clear();
        self.last_heartbeat.clear();
        let mut stmt = self
            .conn
            .prepare("SELECT id, name, type, client, hostname, created, data FROM buckets")?;
        let rows = stmt.query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, Option<String>>(6)?,
            ))
        })?;
        for row in rows {
            let (bid, name, type_, client, hostname, created, data) = row?;
            let data = data
                .and_then(|d| serde_json::from_str(&d).ok())
                .unwrap_or_default();
            let bucket = Bucket {
                bid: Some(bid),
                id: name.clone(),
                _type: type_,
                client,
                hostname,
                created: created_from_text(&created),
                data,
                metadata: BucketMetadata::default(),
                events: None,
                last_updated: None,
            };
            self.buckets
                .insert(name, Arc::new(BucketShared::new(bucket)));
        }
        drop(stmt);
        // Each bucket's time span from a few index look-ups (no scan: startup must not grow
        // with the history); counts are taken when first asked for (`count_events`).
        for shared in self.buckets.values() {
            if let Some(bid) = shared.bucket().bid {
                if let Some((start, end)) = self.span(bid)? {
                    shared.widen(start, end);
                }
            }
        }
        self.publish();
        let filters: Option<String> = self
            .conn
            .query_row(
                "SELECT value FROM key_value WHERE key = ?1",
                [PRIVACY_FILTERS_KEY],
                |r| r.get(0),
            )
            .optional()?
            .flatten();
        self.load_privacy_filter(filters.as_deref());
        Ok(())
    }

    fn load_privacy_filter(&mut self, json: Option<&str>) {
        let (filter, problems) = PrivacyFilter::from_json(json.unwrap_or("null"));
        for p in problems {
            log::warn!("Privacy filter rule skipped: {p}");
        }
        self.privacy = filter;
    }

    /// Publishes the current bucket map for readers (after buckets were added or removed).
    fn publish(&self) {
        let map: BucketMap = self
            .buckets
            .iter()
            .map(|(name, state)| (name.clone(), state.clone()))
            .collect();
        self.shared.buckets.store(Arc::new(map));
    }

    /// The earliest start and latest end of a bucket row's events (`None` without events),
    /// from index look-ups: the first start, the last start, the ends of the events within
    /// an hour of the last start, and the ends of the long events (their own index).
    fn span(&self, bid: i64) -> Result<Option<(i64, i64)>> {
        // Two statements: SQLite answers a lone MIN() or MAX() with one index seek, but
        // scans every row for both in one statement.
        let first: Option<i64> = self
            .conn
            .prepare_cached("SELECT MIN(starttime) FROM events WHERE bucketrow = ?1")?
            .query_row([bid], |r| r.get(0))?;
        let last: Option<i64> = self
            .conn
            .prepare_cached("SELECT MAX(starttime) FROM events WHERE bucketrow = ?1")?
            .query_row([bid], |r| r.get(0))?;
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(None);
        };
        let recent: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT MAX(endtime) FROM events WHERE bucketrow = ?1 AND starttime >= ?2",
            )?
            .query_row(params![bid, last.saturating_sub(LONG_EVENT_NS)], |r| {
                r.get(0)
            })?;
        let long: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT MAX(endtime) FROM events INDEXED BY events_long_by_end
                 WHERE bucketrow = ?1 AND endtime - starttime > 3600000000000",
            )?
            .query_row([bid], |r| r.get(0))?;
        let end = recent.max(long).unwrap_or(last);
        Ok(Some((first, end)))
    }

    fn state(&self, name: &str) -> Result<&Arc<BucketShared>> {
        self.buckets
            .get(name)
            .ok_or_else(|| DatastoreError::NoSuchBucket(name.to_string()))
    }

    fn bucketrow(&self, name: &str) -> Result<i64> {
        self.state(name)?
            .bucket()
            .bid
            .ok_or_else(|| DatastoreError::Sql(format!("bucket '{name}' has no row id")))
    }

    // ---- buckets -------------------------------------------------------------------------

    /// Creates a bucket and inserts `events` into it as new events (their ids are ignored,
    /// so a bucket document can never overwrite another bucket's events).
    pub fn create_bucket(&mut self, mut bucket: Bucket, mut events: Vec<NewEvent>) -> Result<()> {
        if self.buckets.contains_key(&bucket.id) {
            return Err(DatastoreError::BucketAlreadyExists(bucket.id));
        }
        let created = *bucket.created.get_or_insert_with(Utc::now);
        let columns = [
            bucket.id.clone(),
            bucket._type.clone(),
            bucket.client.clone(),
            bucket.hostname.clone(),
            created_to_text(&created),
            serde_json::to_string(&bucket.data).unwrap_or_else(|_| "{}".into()),
        ];
        self.conn
            .prepare_cached(
                "INSERT INTO buckets (name, type, client, hostname, created, data)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(rusqlite::params_from_iter(&columns))?;
        let row = self.conn.last_insert_rowid();
        self.batch.record(Change::CreateBucket { row, columns });
        bucket.bid = Some(row);
        bucket.events = None;
        bucket.metadata = BucketMetadata::default();
        let shared = BucketShared::new(bucket.clone());
        // A new bucket has no events: its count is known.
        shared.set_count(0);
        self.buckets.insert(bucket.id.clone(), Arc::new(shared));
        self.publish();
        self.batch.request_commit();
        for e in &mut events {
            e.id = None;
        }
        self.insert_events(&bucket.id, events)?;
        Ok(())
    }

    /// Prepares an import: creates the missing buckets; for existing ones, plans the read of
    /// the events already stored in the imported span, whose copies the import then drops
    /// (see [`ImportBucket::drop_present`]), so that importing a file twice changes nothing.
    /// Event ids are cleared (an imported id must never address another bucket's event).
    pub fn prepare_import(
        &mut self,
        buckets: Vec<(Bucket, Vec<NewEvent>)>,
    ) -> Result<Vec<ImportBucket>> {
        let mut pending = Vec::with_capacity(buckets.len());
        for (bucket, mut events) in buckets {
            for e in &mut events {
                e.id = None;
            }
            let name = bucket.id.clone();
            let mut present = None;
            if !self.buckets.contains_key(&name) {
                self.create_bucket(bucket, Vec::new())?;
            } else if let (Some(lo), Some(hi)) = (
                events.iter().map(|e| e.start.min(e.end)).min(),
                events.iter().map(|e| e.end.max(e.start)).max(),
            ) {
                present = Some(self.range_read(&name, Some(lo), Some(hi), None, false)?);
            }
            pending.push(ImportBucket {
                name,
                events,
                present,
            });
        }
        Ok(pending)
    }

    /// Deletes a bucket and all its events.
    pub fn delete_bucket(&mut self, name: &str) -> Result<()> {
        let bid = self.bucketrow(name)?;
        self.conn
            .prepare_cached("DELETE FROM events WHERE bucketrow = ?1")?
            .execute([bid])?;
        self.conn
            .prepare_cached("DELETE FROM buckets WHERE id = ?1")?
            .execute([bid])?;
        self.batch.record(Change::DeleteBucket { row: bid });
        self.buckets.remove(name);
        self.publish();
        self.last_heartbeat.remove(&bid);
        self.batch.request_commit();
        Ok(())
    }

    // ---- events --------------------------------------------------------------------------

    /// Inserts events in order; an event with an `id` replaces that event of the same bucket.
    /// An id that belongs to another bucket is refused before anything is written; an id
    /// that names no event is not used: the event gets a fresh id, like one without an id
    /// (HAZARDS 18: a client-chosen id must never move the id sequence, or one insert with
    /// id `i64::MAX` would make every later insert fail). Returns the stored events, with the
    /// ids they really have.
    pub fn insert_events(&mut self, name: &str, events: Vec<NewEvent>) -> Result<Vec<RawEvent>> {
        self.write_new_events(name, events, true)
    }

    /// [`Store::insert_events`] for an import's chunk: its events do not count towards the
    /// every-100-events commit (an import commits when done, or when the batch grows large).
    pub fn import_events(&mut self, name: &str, events: Vec<NewEvent>) -> Result<()> {
        self.write_new_events(name, events, false).map(drop)
    }

    fn write_new_events(
        &mut self,
        name: &str,
        mut events: Vec<NewEvent>,
        counted: bool,
    ) -> Result<Vec<RawEvent>> {
        if !self.privacy.is_empty() {
            events.retain_mut(|e| self.privacy.apply(name, e) == Verdict::Keep);
        }
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let bid = self.bucketrow(name)?;
        // First pass: where do the given ids live now?
        let mut replacing: HashSet<i64> = HashSet::new();
        for id in events.iter().filter_map(|e| e.id) {
            let owner: Option<i64> = self
                .conn
                .prepare_cached("SELECT bucketrow FROM events WHERE id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            match owner {
                Some(b) if b == bid => {
                    replacing.insert(id);
                }
                Some(_) => {
                    return Err(DatastoreError::InvalidEvent(format!(
                        "event id {id} belongs to another bucket; omit the id to insert a new event"
                    )))
                }
                None => {}
            }
        }
        let mut stored = Vec::with_capacity(events.len());
        let mut added = 0u64;
        let result = self.write_events(bid, events, &replacing, &mut stored, &mut added);
        // The mirror follows whatever was written, also when a later row failed.
        let state = self.state(name)?;
        state.add_count(added);
        for e in &stored {
            state.widen(e.start, e.end);
        }
        self.last_heartbeat.remove(&bid);
        if counted {
            self.batch.count_events(stored.len());
        }
        result.map(|()| stored)
    }

    /// Writes rows in order into `stored`, counting new rows in `added`. The insert
    /// statement is looked up once per batch, not once per row.
    fn write_events(
        &mut self,
        bid: i64,
        events: Vec<NewEvent>,
        replacing: &HashSet<i64>,
        stored: &mut Vec<RawEvent>,
        added: &mut u64,
    ) -> Result<()> {
        let mut insert = self.conn.prepare_cached(INSERT_SQL)?;
        for e in events {
            let id = match e.id {
                Some(id) if replacing.contains(&id) => {
                    self.conn
                        .prepare_cached(
                            "UPDATE events SET starttime = ?1, endtime = ?2, data = ?3 WHERE id = ?4",
                        )?
                        .execute(params![e.start, e.end, e.data, id])?;
                    self.batch.record(Change::ReplaceEvent {
                        id,
                        start: e.start,
                        end: e.end,
                        data: e.data.clone(),
                    });
                    id
                }
                _ => {
                    insert.execute(params![bid, e.start, e.end, e.data])?;
                    *added += 1;
                    let id = self.conn.last_insert_rowid();
                    self.batch.record(Change::InsertEvent {
                        id,
                        bucketrow: bid,
                        start: e.start,
                        end: e.end,
                        data: e.data.clone(),
                    });
                    id
                }
            };
            stored.push(RawEvent {
                id,
                start: e.start,
                end: e.end,
                data: e.data,
            });
        }
        Ok(())
    }

    /// Events overlapping or touching `[lo, hi]` (absent bounds are open), newest first, at
    /// most `limit`, clipped to the bounds when `clip` is set.
    ///
    /// The scan is bounded on both sides of the composite index: `starttime <= hi` above and
    /// `starttime >= lo - LONG_EVENT_NS` below, plus the few longer events from their own
    /// index (`range_read.rs`), so its cost follows the answer, not the bucket's history.
    /// (Tests: the worker reads through [`Store::range_read`] in steps.)
    #[cfg(test)]
    pub fn get_events(
        &self,
        name: &str,
        lo: Option<i64>,
        hi: Option<i64>,
        limit: Option<u64>,
        clip: bool,
    ) -> Result<EventRows> {
        self.range_read(name, lo, hi, limit, clip)?.run(&self.conn)
    }

    /// A chunked read of [`Store::get_events`], for the worker to interleave with other
    /// requests (see `range_read.rs`).
    pub fn range_read(
        &self,
        name: &str,
        lo: Option<i64>,
        hi: Option<i64>,
        limit: Option<u64>,
        clip: bool,
    ) -> Result<RangeRead> {
        let bid = self.bucketrow(name)?;
        Ok(RangeRead::new(
            bid,
            lo.unwrap_or(i64::MIN),
            hi.unwrap_or(i64::MAX),
            limit,
            clip,
        ))
    }

    /// One event of the bucket by id.
    pub fn get_event(&self, name: &str, id: i64) -> Result<RawEvent> {
        let bid = self.bucketrow(name)?;
        self.conn
            .prepare_cached(EVENT_BY_ID_SQL)?
            .query_row(params![bid, id], row_to_raw)
            .optional()?
            .ok_or_else(|| DatastoreError::NoSuchEvent(name.to_string(), id))
    }

    /// Deletes events of the bucket by id; ids that are not the bucket's are ignored.
    pub fn delete_events(&mut self, name: &str, ids: &[i64]) -> Result<()> {
        let bid = self.bucketrow(name)?;
        let mut deleted = 0u64;
        let mut result = Ok(());
        for &id in ids {
            match self
                .conn
                .prepare_cached("DELETE FROM events WHERE bucketrow = ?1 AND id = ?2")
                .and_then(|mut stmt| stmt.execute(params![bid, id]))
            {
                Ok(0) => {}
                Ok(_) => {
                    deleted += 1;
                    self.batch.record(Change::DeleteEvent { id });
                }
                Err(e) => {
                    result = Err(e.into());
                    break;
                }
            }
        }
        // The mirror follows whatever was deleted, also when a later row failed.
        if deleted > 0 {
            self.state(name)?.sub_count(deleted);
            self.last_heartbeat.remove(&bid);
        }
        result
    }

    /// Number of events overlapping `[lo, hi]` (all events when both are absent: answered
    /// from the cache).
    ///
    /// Like a range read: a walk of the main index back to `lo - LONG_EVENT_NS`, plus the long
    /// events that start before that from their own index. The total count of a bucket is
    /// taken once, when first asked for, and kept up to date from then on.
    pub fn count_events(&self, name: &str, lo: Option<i64>, hi: Option<i64>) -> Result<u64> {
        let state = self.state(name)?;
        let bid = self.bucketrow(name)?;
        if lo.is_none() && hi.is_none() {
            if let Some(n) = state.count() {
                return Ok(n);
            }
            let n: i64 = self
                .conn
                .prepare_cached("SELECT COUNT(*) FROM events WHERE bucketrow = ?1")?
                .query_row([bid], |r| r.get(0))?;
            let n = n.max(0) as u64;
            state.set_count(n);
            return Ok(n);
        }
        let lo = lo.unwrap_or(i64::MIN);
        let hi = hi.unwrap_or(i64::MAX);
        if lo > hi {
            return Ok(0);
        }
        let floor = lo.saturating_sub(LONG_EVENT_NS);
        let walked: i64 = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM events
                 WHERE bucketrow = ?1 AND starttime <= ?2 AND starttime >= ?3 AND endtime >= ?4",
            )?
            .query_row(params![bid, hi, floor, lo], |r| r.get(0))?;
        let long: i64 = if floor == i64::MIN {
            0
        } else {
            self.conn
                .prepare_cached(
                    "SELECT COUNT(*) FROM events INDEXED BY events_long_by_end
                     WHERE bucketrow = ?1 AND endtime - starttime > 3600000000000
                       AND endtime >= ?2 AND starttime < ?3 AND starttime <= ?4",
                )?
                .query_row(params![bid, lo, floor, hi], |r| r.get(0))?
        };
        Ok((walked + long).max(0) as u64)
    }

    /// Merges a heartbeat into the bucket's last event or stores it as a new one (see the
    /// crate docs for the rule). Returns the resulting event.
    pub fn heartbeat(
        &mut self,
        name: &str,
        mut hb: NewEvent,
        pulsetime_ns: i64,
    ) -> Result<RawEvent> {
        let bid = self.bucketrow(name)?;
        if !self.privacy.is_empty() && self.privacy.apply(name, &mut hb) == Verdict::Drop {
            let last = match self.last_heartbeat.get(&bid) {
                Some(cached) => Some(cached.clone()),
                None => self.last_event(bid)?,
            };
            return Ok(last.unwrap_or(RawEvent {
                id: 0,
                start: hb.start,
                end: hb.end,
                data: hb.data,
            }));
        }
        self.batch.count_events(1);
        let last = match self.last_heartbeat.remove(&bid) {
            Some(cached) => Some(cached),
            // Rows written by another server may not be in canonical form; the cache only
            // ever holds canonical data, so merging compares texts.
            None => self.last_event(bid)?.map(with_canonical_data),
        };
        if let Some(last) = last {
            if let Some(merged) = merge(last, &hb, pulsetime_ns) {
                let changed = self
                    .conn
                    .prepare_cached("UPDATE events SET starttime = ?1, endtime = ?2 WHERE bucketrow = ?3 AND id = ?4")?
                    .execute(params![merged.start, merged.end, bid, merged.id])?;
                if changed == 1 {
                    self.batch.record(Change::ResizeEvent {
                        id: merged.id,
                        start: merged.start,
                        end: merged.end,
                    });
                    self.state(name)?.widen(merged.start, merged.end);
                    self.remember_heartbeat(bid, &merged);
                    return Ok(merged);
                }
                log::warn!(
                    "Heartbeat: last event {} of '{name}' vanished; storing a new event",
                    merged.id
                );
            }
        }
        self.conn
            .prepare_cached(INSERT_SQL)?
            .execute(params![bid, hb.start, hb.end, hb.data])?;
        let stored = RawEvent {
            id: self.conn.last_insert_rowid(),
            start: hb.start,
            end: hb.end,
            data: hb.data,
        };
        self.batch.record(Change::InsertEvent {
            id: stored.id,
            bucketrow: bid,
            start: stored.start,
            end: stored.end,
            data: stored.data.clone(),
        });
        let state = self.state(name)?;
        state.add_count(1);
        state.widen(stored.start, stored.end);
        self.remember_heartbeat(bid, &stored);
        Ok(stored)
    }

    /// Caches `event` as what the bucket's next heartbeat may merge into, unless its data is
    /// larger than [`MAX_CACHED_DATA`]: a watcher's events are small, and one huge event would
    /// otherwise stay in memory (and be copied on every merge) until the bucket's next
    /// heartbeat; the next heartbeat then reads it from the database instead.
    fn remember_heartbeat(&mut self, bid: i64, event: &RawEvent) {
        if event.data.len() <= MAX_CACHED_DATA {
            self.last_heartbeat.insert(bid, event.clone());
        }
    }

    /// The newest event of a bucket row (greatest start), unclipped.
    fn last_event(&self, bid: i64) -> Result<Option<RawEvent>> {
        Ok(self
            .conn
            .prepare_cached(LAST_EVENT_SQL)?
            .query_row([bid], row_to_raw)
            .optional()?)
    }

    // ---- key-value -----------------------------------------------------------------------

    /// The JSON text stored under `key`.
    pub fn get_key_value(&self, key: &str) -> Result<String> {
        self.conn
            .prepare_cached("SELECT value FROM key_value WHERE key = ?1")?
            .query_row([key], |r| r.get::<_, Option<String>>(0))
            .optional()?
            .map(|v| v.unwrap_or_else(|| "null".to_string()))
            .ok_or_else(|| DatastoreError::NoSuchKey(key.to_string()))
    }

    /// Stores JSON text under `key`.
    pub fn set_key_value(&mut self, key: &str, value: &str) -> Result<()> {
        let modified = Utc::now().timestamp();
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO key_value (key, value, last_modified) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![key, value, modified])?;
        self.batch.record(Change::SetKeyValue {
            key: key.to_string(),
            value: value.to_string(),
            modified,
        });
        if key == PRIVACY_FILTERS_KEY {
            self.load_privacy_filter(Some(value));
        }
        Ok(())
    }

    /// Deletes `key` (a missing key is not an error).
    pub fn delete_key_value(&mut self, key: &str) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM key_value WHERE key = ?1")?
            .execute([key])?;
        self.batch.record(Change::DeleteKeyValue {
            key: key.to_string(),
        });
        if key == PRIVACY_FILTERS_KEY {
            self.load_privacy_filter(None);
        }
        Ok(())
    }

    /// Every `(key, JSON text)` whose key starts with `prefix`.
    pub fn get_key_values(&self, prefix: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value FROM key_value WHERE substr(key, 1, ?2) = ?1")?;
        let rows = stmt
            .query_map(params![prefix, prefix.chars().count() as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or_else(|| "null".to_string())))
            .collect())
    }
}

/// The heartbeat merge rule: `hb` merges into `last` iff their data are equal and
/// `last.start <= hb.start <= last.end + pulsetime` (inclusive). The merged event keeps
/// `last`'s id, start and data and ends at `max(last.end, hb.end)`.
pub(crate) fn merge(mut last: RawEvent, hb: &NewEvent, pulsetime_ns: i64) -> Option<RawEvent> {
    if hb.start < last.start || hb.start > last.end.saturating_add(pulsetime_ns) {
        return None;
    }
    // Both texts are canonical (see `with_canonical_data`): equal data, equal text.
    if hb.data != last.data {
        return None;
    }
    let end = last.end.max(hb.end);
    if end < last.start {
        return None;
    }
    last.end = end;
    Some(last)
}

/// `event` with its data in canonical form (rows written by another server may be compact
/// JSON with other key order or number forms); data that is not a JSON object is kept as is
/// (it then never equals a heartbeat's data).
fn with_canonical_data(mut event: RawEvent) -> RawEvent {
    if let Some(Cow::Owned(canonical)) = canonical_object(&event.data) {
        event.data = canonical;
    }
    event
}

/// One bucket of an import in progress.
pub struct ImportBucket {
    /// The bucket's id.
    pub name: String,
    /// The events still to insert.
    pub events: Vec<NewEvent>,
    /// For a bucket that existed, the read of its events in the imported span (run in
    /// steps like any long read, so a re-import of a year never holds the worker long).
    pub present: Option<RangeRead>,
}

impl ImportBucket {
    /// Drops the events already stored (same start, end and data) from `events`.
    pub fn drop_present(&mut self, stored: &EventRows) {
        let seen: HashSet<(i64, i64, &str)> = stored
            .0
            .iter()
            .map(|e| (e.start, e.end, e.data.as_str()))
            .collect();
        self.events
            .retain(|e| !seen.contains(&(e.start, e.end, e.data.as_str())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// A store on a real file with bucket row 1 (`b`) and the events `sql` inserts.
    fn store_with(dir: &tempfile::TempDir, sql: &str) -> Store {
        let mut conn = Connection::open(dir.path().join("sqlite.db")).unwrap();
        crate::schema::configure(&conn).unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO buckets (name, type, client, hostname, created) VALUES ('b', 't', 'c', 'h', '2020-01-01 00:00:00+00:00');",
        )
        .unwrap();
        conn.execute_batch(sql).unwrap();
        crate::schema::ensure_long_events_index(&conn).unwrap();
        Store::new(conn, Arc::default()).unwrap()
    }

    /// A store holding one bucket with 500,000 one-minute events (a year).
    fn big_store(dir: &tempfile::TempDir) -> Store {
        store_with(
            dir,
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 499999)
             INSERT INTO events (bucketrow, starttime, endtime, data)
             SELECT 1, 1577836800000000000 + i * 63000000000, 1577836800000000000 + i * 63000000000 + 60000000000,
                    '{\"i\":' || i || '}' FROM n;",
        )
    }

    /// Asserts that SQLite plans `sql` as a walk of the composite index with no sort.
    fn assert_walks_index(store: &Store, sql: &str, params: impl rusqlite::Params) {
        let plan: Vec<String> = store
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(params, |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let plan = plan.join("\n");
        assert!(
            plan.contains("USING INDEX events_bucketrow_starttime_endtime_index"),
            "{plan}"
        );
        assert!(
            !plan.contains("TEMP B-TREE"),
            "sorts instead of walking the index: {plan}"
        );
    }

    /// Runs the range read the way `get_events` does and returns (rows, VM steps, sorts,
    /// full-scan steps).
    fn run(store: &Store, lo: i64, hi: i64, limit: i64) -> (usize, i32, i32, i32) {
        let floor = lo.saturating_sub(LONG_EVENT_NS);
        let mut stmt = store.conn.prepare(crate::range_read::RANGE_SQL).unwrap();
        let n = stmt
            .query_map(params![1, hi, floor, lo, limit], row_to_raw)
            .unwrap()
            .count();
        (
            n,
            stmt.get_status(StatementStatus::VmStep),
            stmt.get_status(StatementStatus::Sort),
            stmt.get_status(StatementStatus::FullscanStep),
        )
    }

    #[test]
    fn cached_range_statement_is_not_reprepared_per_binding() {
        let dir = tempfile::tempdir().unwrap();
        let store = big_store(&dir);
        for (lo, limit) in [
            (0i64, 100i64),
            (1_600_000_000_000_000_000, 10),
            (5, -1),
            (0, 100),
        ] {
            let mut stmt = store
                .conn
                .prepare_cached(crate::range_read::RANGE_SQL)
                .unwrap();
            let n = stmt
                .query_map(params![1, i64::MAX, lo, lo, limit], row_to_raw)
                .unwrap()
                .take(200)
                .count();
            assert!(n > 0);
            // Re-parsing and re-planning on every request would cost more than the rows.
            assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
        }
    }

    #[test]
    fn chunked_reads_equal_one_read() {
        let dir = tempfile::tempdir().unwrap();
        // Many events tied on start (and on end), in a jumbled insert order.
        let store = store_with(
            &dir,
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
             INSERT INTO events (bucketrow, starttime, endtime, data)
             SELECT 1, (i * 7919 % 50) * 1000, (i * 7919 % 50) * 1000 + (i % 3) * 500, '{}' FROM n;",
        );
        for (lo, hi, limit) in [
            (None, None, None),
            (Some(10_000), Some(30_000), None),
            (None, None, Some(333)),
        ] {
            let whole = store.get_events("b", lo, hi, limit, true).unwrap();
            for chunk in [1, 7, 100, 5000] {
                let mut read = store.range_read("b", lo, hi, limit, true).unwrap();
                while !read.is_done() {
                    read.step(&store.conn, chunk).unwrap();
                }
                assert_eq!(
                    read.finish(),
                    whole,
                    "chunk {chunk}, {lo:?}..{hi:?} limit {limit:?}"
                );
            }
        }
        assert_walks_index(
            &store,
            crate::range_read::RANGE_AFTER_SQL,
            params![1, 0, 0, 0, 0, 0, 100],
        );
    }

    /// HAZARDS 16: one event lasting 300 days must not make the last-day read (or count)
    /// walk back 300 days of index: the walk stops an hour before the range, and the long
    /// event comes from its own index.
    #[test]
    fn one_long_event_does_not_make_reads_walk_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = big_store(&dir);
        let day = 86_400_000_000_000i64;
        let end = 1_577_836_800_000_000_000 + 499_999 * 63_000_000_000 + 60_000_000_000;
        store
            .conn
            .execute(
                "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (1, ?1, ?2, '{}')",
                params![end - 300 * day, end],
            )
            .unwrap();
        let statements = [
            crate::range_read::RANGE_SQL,
            crate::range_read::LONG_EVENTS_SQL,
        ];
        for sql in statements {
            store
                .conn
                .prepare_cached(sql)
                .unwrap()
                .reset_status(StatementStatus::VmStep);
        }
        let rows = store
            .get_events("b", Some(end - day), Some(end), None, false)
            .unwrap();
        assert!((1370..=1373).contains(&rows.0.len()), "{}", rows.0.len());
        assert_eq!(rows.0.last().unwrap().start, end - 300 * day);
        let steps: i32 = statements
            .iter()
            .map(|sql| {
                store
                    .conn
                    .prepare_cached(sql)
                    .unwrap()
                    .get_status(StatementStatus::VmStep)
            })
            .sum();
        assert!(steps < 60 * 1_500, "a one-day read took {steps} VM steps");
        assert_eq!(
            store.count_events("b", Some(end - day), Some(end)).unwrap(),
            rows.0.len() as u64
        );
        let plan: String = store
            .conn
            .prepare(&format!(
                "EXPLAIN QUERY PLAN {}",
                crate::range_read::LONG_EVENTS_SQL
            ))
            .unwrap()
            .query_map(params![1, 0, 0, 0, 10], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap()
            .join("\n");
        assert!(plan.contains("events_long_by_end"), "{plan}");
    }

    #[test]
    fn range_read_walks_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = big_store(&dir);
        assert_eq!(store.count_events("b", None, None).unwrap(), 500_000);
        assert_walks_index(
            &store,
            crate::range_read::RANGE_SQL,
            params![1, 0, 0, 0, 100],
        );

        // limit=100 over the whole year: about 100 rows' worth of steps, no sort, no scan.
        let (n, steps, sorts, scans) = run(&store, i64::MIN, i64::MAX, 100);
        assert_eq!((n, sorts, scans), (100, 0, 0));
        assert!(steps < 5_000, "limit=100 took {steps} VM steps");

        // One day in the middle of the year reads about one day of rows, not the year before it.
        let mid = 1_577_836_800_000_000_000 + 250_000 * 63_000_000_000;
        let day = 86_400_000_000_000;
        let (n, steps, sorts, scans) = run(&store, mid, mid + day, -1);
        assert!((1370..=1373).contains(&n), "{n}");
        assert_eq!((sorts, scans), (0, 0));
        assert!(steps < 60 * 1_400, "a one-day read took {steps} VM steps");
    }
}
