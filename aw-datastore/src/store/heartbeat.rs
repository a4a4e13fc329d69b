//! Heartbeats: merging into the bucket's last event, and the cache of that event.

use aw_models::canonical::canonical_object;
use rusqlite::{params, OptionalExtension};
use std::borrow::Cow;

use super::Store;
use crate::error::Result;
use crate::new_event::NewEvent;
use crate::store::change::{Change, Changes, INSERT_EVENT_SQL, NEW_ROW};
use crate::store::privacy::Verdict;
use crate::store::range_read::row_to_raw;
use crate::store::write_listeners::Extent;
use aw_models::raw_event::RawEvent;

/// The newest event of a bucket (greatest start; ties ordered as range reads order them).
const LAST_EVENT_SQL: &str = "SELECT id, starttime, endtime, data FROM events WHERE bucketrow = ?1
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT 1";

/// The largest event data (bytes of text) the last-heartbeat cache keeps.
const MAX_CACHED_DATA: usize = 64 << 10;

impl Store {
    /// Merges a heartbeat into the bucket's last event or stores it as a new one (see the
    /// crate docs for the rule). Returns the resulting event.
    pub(crate) fn heartbeat(
        &mut self,
        changes: &mut Changes,
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
        let last = match self.last_heartbeat.remove(&bid) {
            Some(cached) => Some(cached),
            // Rows written by another server may not be in canonical form; the cache only
            // ever holds canonical data, so merging compares texts.
            None => self.last_event(bid)?.map(with_canonical_data),
        };
        // An event a range deletion cut is never extended (`range_delete.rs`).
        if let Some(last) = last.filter(|l| !self.cut_events.contains(&l.id)) {
            let (last_start, last_end) = (last.start, last.end);
            if let Some(merged) = merge(last, &hb, pulsetime_ns) {
                let resize = Change::ResizeEvent {
                    id: merged.id,
                    bucketrow: bid,
                    start: merged.start,
                    end: merged.end,
                };
                if changes.apply(&self.conn, resize)? == 1 {
                    self.state(name)?.widen(merged.start, merged.end);
                    let mut extent = Extent::of(last_start, last_end);
                    extent.add(merged.start, merged.end);
                    self.tell_events(name, extent);
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
            .prepare_cached(INSERT_EVENT_SQL)?
            .execute(params![NEW_ROW, bid, hb.start, hb.end, hb.data])?;
        let stored = RawEvent {
            id: self.conn.last_insert_rowid(),
            start: hb.start,
            end: hb.end,
            data: hb.data,
        };
        changes.record(Change::InsertEvent {
            id: stored.id,
            bucketrow: bid,
            start: stored.start,
            end: stored.end,
            data: stored.data.clone(),
        });
        let state = self.state(name)?;
        state.add_count(1);
        state.widen(stored.start, stored.end);
        self.tell_events(name, Extent::of(stored.start, stored.end));
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
