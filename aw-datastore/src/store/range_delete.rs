//! Deleting a time range of a bucket: what lies in `[lo, hi)` goes, and an event across an
//! edge is cut at it.
//!
//! An event wholly inside the range is deleted (a zero-length one at `lo` too; one at `hi`
//! is outside). One across the left edge keeps its part before `lo`, one across the right
//! edge its part from `hi`, both under their ids; one across both edges becomes two: the
//! part before `lo` keeps the id, the part from `hi` is a new event with the same data. The
//! rows are found as range reads find them (the composite index back to `lo` minus
//! [`LONG_EVENT_NS`], plus the long events' own index), so the cost follows the events in
//! the range, not the bucket's history.
//!
//! The next heartbeat never merges into an event a deletion cut: the cut events' ids are
//! remembered (`Store::cut_events`) and the last-heartbeat cache is dropped. (The memory is
//! the worker's: after a restart a heartbeat may merge into such an event again, as into
//! any other last event.)

use rusqlite::params;
use serde::Serialize;

use super::Store;
use crate::batch::{Batch, Change, INSERT_EVENT_SQL, NEW_ROW};
use crate::error::Result;
use crate::schema::LONG_EVENT_NS;
use crate::write_listeners::Extent;

/// What deleting a time range did, or for a dry run would do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RangeDeletion {
    /// Events wholly inside the range: deleted.
    pub deleted: u64,
    /// Events across an edge: cut at it (one across both edges counts once, and becomes
    /// two events).
    pub cut: u64,
    /// Seconds of event time removed.
    pub seconds: f64,
    /// Buckets that lost something (for a preview: "12 events in 3 buckets").
    pub buckets: u64,
}

impl RangeDeletion {
    /// The sum of two deletions (of two buckets).
    pub fn add(&mut self, other: RangeDeletion) {
        self.deleted += other.deleted;
        self.cut += other.cut;
        self.seconds += other.seconds;
        self.buckets += other.buckets;
    }
}

/// Events of a bucket (`?1`) that start before `hi` (`?2`) and at or after the floor
/// (`?3`), and end after `lo` (`?4`) or start at or after it (zero-length ones).
const TOUCHING_SQL: &str = "SELECT id, starttime, endtime, data FROM events
     WHERE bucketrow = ?1 AND starttime < ?2 AND starttime >= ?3
       AND (endtime > ?4 OR starttime >= ?4)";

/// The long events (over [`LONG_EVENT_NS`]) of a bucket (`?1`) that start before the floor
/// (`?3`) and end after `lo` (`?2`): the only ones before the floor that can reach `lo`.
const TOUCHING_LONG_SQL: &str = concat!(
    "SELECT id, starttime, endtime, data FROM events INDEXED BY events_long_by_end
     WHERE bucketrow = ?1 AND ",
    long_event_condition!(),
    " AND endtime > ?2 AND starttime < ?3"
);

/// One event row: id, start, end, data.
type Row = (i64, i64, i64, String);

impl Store {
    /// Deletes `[lo, hi)` of bucket `name` (see the module docs); with `dry_run`, only
    /// counts. The caller checked `lo < hi`.
    pub(crate) fn delete_range(
        &mut self,
        batch: &mut Batch,
        name: &str,
        lo: i64,
        hi: i64,
        dry_run: bool,
    ) -> Result<RangeDeletion> {
        let bid = self.bucketrow(name)?;
        let rows = self.rows_touching(bid, lo, hi)?;
        let mut done = RangeDeletion::default();
        let mut removed_ns: i128 = 0;
        let mut extent = Extent::new();
        let (mut gone, mut added) = (0u64, 0u64);
        let mut result = Ok(());
        for (id, start, end, data) in rows {
            let inside = start >= lo && end <= hi;
            removed_ns += i128::from(end.min(hi)) - i128::from(start.max(lo));
            if inside {
                done.deleted += 1;
            } else {
                done.cut += 1;
            }
            if dry_run {
                continue;
            }
            extent.add(start, end);
            let written = if inside {
                gone += 1;
                batch
                    .apply(&self.conn, Change::DeleteEvent { id, bucketrow: bid })
                    .map(drop)
            } else {
                self.cut_events.insert(id);
                self.cut(batch, bid, (id, start, end, data), lo, hi)
                    .map(|split| added += u64::from(split))
            };
            if let Err(e) = written {
                result = Err(e.into());
                break;
            }
        }
        done.seconds = removed_ns as f64 / 1e9;
        done.buckets = u64::from(done.deleted + done.cut > 0);
        // The mirror follows whatever was written, also when a later row failed.
        if !dry_run {
            let state = self.state(name)?;
            state.sub_count(gone);
            state.add_count(added);
            self.last_heartbeat.remove(&bid);
            self.tell_events(name, extent);
        }
        result.map(|()| done)
    }

    /// Cuts an event that crosses `lo` or `hi` (or both); returns whether it was split in
    /// two (the part from `hi` then being a new event, whose id is remembered as cut too).
    fn cut(
        &mut self,
        batch: &mut Batch,
        bid: i64,
        (id, start, end, data): Row,
        lo: i64,
        hi: i64,
    ) -> rusqlite::Result<bool> {
        let (left, right) = (start < lo, end > hi);
        let (new_start, new_end) = if left { (start, lo) } else { (hi, end) };
        batch.apply(
            &self.conn,
            Change::ResizeEvent {
                id,
                bucketrow: bid,
                start: new_start,
                end: new_end,
            },
        )?;
        if !(left && right) {
            return Ok(false);
        }
        self.conn
            .prepare_cached(INSERT_EVENT_SQL)?
            .execute(params![NEW_ROW, bid, hi, end, data])?;
        let new_id = self.conn.last_insert_rowid();
        batch.record(Change::InsertEvent {
            id: new_id,
            bucketrow: bid,
            start: hi,
            end,
            data,
        });
        self.cut_events.insert(new_id);
        Ok(true)
    }

    /// The events of bucket row `bid` that `[lo, hi)` deletes or cuts, oldest first.
    fn rows_touching(&self, bid: i64, lo: i64, hi: i64) -> Result<Vec<Row>> {
        let floor = lo.saturating_sub(LONG_EVENT_NS);
        let read = |row: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        };
        let mut rows: Vec<Row> = self
            .conn
            .prepare_cached(TOUCHING_SQL)?
            .query_map(params![bid, hi, floor, lo], read)?
            .collect::<rusqlite::Result<_>>()?;
        if floor > i64::MIN {
            let long = self
                .conn
                .prepare_cached(TOUCHING_LONG_SQL)?
                .query_map(params![bid, lo, floor], read)?
                .collect::<rusqlite::Result<Vec<Row>>>()?;
            rows.extend(long);
        }
        rows.sort_by_key(|&(id, start, end, _)| (start, end, id));
        Ok(rows)
    }
}
