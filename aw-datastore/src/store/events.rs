//! Writing, reading, deleting and counting events.

use rusqlite::{params, OptionalExtension};
use std::collections::HashSet;

use super::Store;
use crate::error::{DatastoreError, Result};
use crate::new_event::NewEvent;
use crate::store::change::{Change, Changes, INSERT_EVENT_SQL, NEW_ROW};
use crate::store::privacy::Verdict;
use crate::store::range_read::{row_to_raw, RangeRead};
use crate::store::schema::LONG_EVENT_NS;
use crate::store::write_listeners::Extent;
#[cfg(test)]
use aw_models::raw_event::EventRows;
use aw_models::raw_event::RawEvent;

/// One event of a bucket by id (columns as `range_read::row_to_raw` reads them).
const EVENT_BY_ID_SQL: &str =
    "SELECT id, starttime, endtime, data FROM events WHERE bucketrow = ?1 AND id = ?2";

/// Start and end of one event of a bucket by id.
const EVENT_SPAN_BY_ID_SQL: &str =
    "SELECT starttime, endtime FROM events WHERE bucketrow = ?1 AND id = ?2";

impl Store {
    /// Inserts events in order; an event with an `id` replaces that event of the same bucket.
    /// An id that belongs to another bucket is refused before anything is written; an id
    /// that names no event is not used: the event gets a fresh id, like one without an id
    /// (COMPATIBILITY.md, server #18: a client-chosen id must never move the id sequence, or one insert with
    /// id `i64::MAX` would make every later insert fail). Returns the stored events, with the
    /// ids they really have.
    pub(crate) fn insert_events(
        &mut self,
        changes: &mut Changes,
        name: &str,
        mut events: Vec<NewEvent>,
    ) -> Result<Vec<RawEvent>> {
        if !self.privacy.is_empty() {
            events.retain_mut(|e| self.privacy.apply(name, e) == Verdict::Keep);
        }
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let bid = self.bucketrow(name)?;
        // What the request changes: the events it writes and those it replaces.
        let mut extent = Extent::new();
        // First pass: where do the given ids live now?
        let mut replacing: HashSet<i64> = HashSet::new();
        for id in events.iter().filter_map(|e| e.id) {
            let owner: Option<(i64, i64, i64)> = self
                .conn
                .prepare_cached("SELECT bucketrow, starttime, endtime FROM events WHERE id = ?1")?
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            match owner {
                Some((b, start, end)) if b == bid => {
                    replacing.insert(id);
                    extent.add(start, end);
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
        let result = self.write_events(changes, bid, events, &replacing, &mut stored, &mut added);
        // The mirror follows whatever was written, also when a later row failed.
        let state = self.state(name)?;
        state.add_count(added);
        for e in &stored {
            state.widen(e.start, e.end);
            extent.add(e.start, e.end);
        }
        self.last_heartbeat.remove(&bid);
        self.tell_events(name, extent);
        result.map(|()| stored)
    }

    /// Replaces the start, end and data of event `id` of the bucket (the privacy rules
    /// apply as to a new event). Fails with [`DatastoreError::NoSuchEvent`] when the bucket
    /// has no such event: never an insert.
    pub(crate) fn replace_event(
        &mut self,
        changes: &mut Changes,
        name: &str,
        id: i64,
        mut event: NewEvent,
    ) -> Result<RawEvent> {
        let bid = self.bucketrow(name)?;
        let (start, end): (i64, i64) = self
            .conn
            .prepare_cached(EVENT_SPAN_BY_ID_SQL)?
            .query_row(params![bid, id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or_else(|| DatastoreError::NoSuchEvent(name.to_string(), id))?;
        if !self.privacy.is_empty() && self.privacy.apply(name, &mut event) == Verdict::Drop {
            return Err(DatastoreError::InvalidEvent(format!(
                "the privacy rules drop this event; event {id} was left as it was"
            )));
        }
        changes.apply(
            &self.conn,
            Change::ReplaceEvent {
                id,
                start: event.start,
                end: event.end,
                data: event.data.clone(),
            },
        )?;
        self.state(name)?.widen(event.start, event.end);
        let mut extent = Extent::of(start, end);
        extent.add(event.start, event.end);
        self.last_heartbeat.remove(&bid);
        self.tell_events(name, extent);
        Ok(RawEvent {
            id,
            start: event.start,
            end: event.end,
            data: event.data,
        })
    }

    /// Writes rows in order into `stored`, counting new rows in `added`. The insert
    /// statement is looked up once per batch, not once per row.
    fn write_events(
        &mut self,
        changes: &mut Changes,
        bid: i64,
        events: Vec<NewEvent>,
        replacing: &HashSet<i64>,
        stored: &mut Vec<RawEvent>,
        added: &mut u64,
    ) -> Result<()> {
        let mut insert = self.conn.prepare_cached(INSERT_EVENT_SQL)?;
        for e in events {
            let id = match e.id {
                Some(id) if replacing.contains(&id) => {
                    changes.apply(
                        &self.conn,
                        Change::ReplaceEvent {
                            id,
                            start: e.start,
                            end: e.end,
                            data: e.data.clone(),
                        },
                    )?;
                    id
                }
                _ => {
                    insert.execute(params![NEW_ROW, bid, e.start, e.end, e.data])?;
                    *added += 1;
                    let id = self.conn.last_insert_rowid();
                    changes.record(Change::InsertEvent {
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
    /// index (`store/range_read.rs`), so its cost follows the answer, not the bucket's history.
    /// (Tests: the worker reads through [`Store::range_read`] in steps.)
    #[cfg(test)]
    pub(crate) fn get_events(
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
    /// requests (see `store/range_read.rs`).
    pub(crate) fn range_read(
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
    pub(crate) fn get_event(&self, name: &str, id: i64) -> Result<RawEvent> {
        let bid = self.bucketrow(name)?;
        self.conn
            .prepare_cached(EVENT_BY_ID_SQL)?
            .query_row(params![bid, id], row_to_raw)
            .optional()?
            .ok_or_else(|| DatastoreError::NoSuchEvent(name.to_string(), id))
    }

    /// Deletes events of the bucket by id; returns the ids that are not the bucket's events
    /// (nothing is done for them).
    pub(crate) fn delete_events(
        &mut self,
        changes: &mut Changes,
        name: &str,
        ids: &[i64],
    ) -> Result<Vec<i64>> {
        let mut missing = Vec::new();
        let bid = self.bucketrow(name)?;
        let mut deleted = 0u64;
        let mut extent = Extent::new();
        let mut result = Ok(());
        for &id in ids {
            // The event's extent, for the write listeners (an id of another bucket or of
            // no event deletes nothing).
            let span = match self
                .conn
                .prepare_cached(EVENT_SPAN_BY_ID_SQL)
                .and_then(|mut s| {
                    s.query_row(params![bid, id], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                }) {
                Ok(span) => span,
                Err(e) => {
                    result = Err(e.into());
                    break;
                }
            };
            let Some((start, end)) = span else {
                missing.push(id);
                continue;
            };
            match changes.apply(&self.conn, Change::DeleteEvent { id, bucketrow: bid }) {
                Ok(0) => {}
                Ok(_) => {
                    deleted += 1;
                    extent.add(start, end);
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
        self.tell_events(name, extent);
        result.map(|()| missing)
    }

    /// Number of events overlapping `[lo, hi]` (all events when both are absent: answered
    /// from the cache).
    ///
    /// Like a range read: a walk of the main index back to `lo - LONG_EVENT_NS`, plus the long
    /// events that start before that from their own index. The total count of a bucket is
    /// taken once, when first asked for, and kept up to date from then on.
    pub(crate) fn count_events(&self, name: &str, lo: Option<i64>, hi: Option<i64>) -> Result<u64> {
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
                .prepare_cached(concat!(
                    "SELECT COUNT(*) FROM events INDEXED BY events_long_by_end
                     WHERE bucketrow = ?1 AND ",
                    long_event_condition!(),
                    " AND endtime >= ?2 AND starttime < ?3 AND starttime <= ?4"
                ))?
                .query_row(params![bid, lo, floor, hi], |r| r.get(0))?
        };
        Ok((walked + long).max(0) as u64)
    }
}
