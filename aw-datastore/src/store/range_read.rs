//! Reading a bucket's events in a time range, newest first, in bounded chunks.
//!
//! A year of window events is hundreds of thousands of rows. Read in one go, it would hold
//! the single worker thread for the whole read while heartbeats queue behind it. A
//! [`RangeRead`] instead reads at most a chunk of rows per [`RangeRead::step`], continuing
//! after the last row it returned (keyset pagination in index order), so the worker can
//! answer other requests between chunks. The cost of each chunk is an index seek plus the
//! rows it returns.
//!
//! # Long events
//! The walk is bounded below by `lo - LONG_EVENT_NS` (one hour): an event of at most an hour
//! that reaches `lo` starts after that. The rare longer events (a night of AFK, a window left
//! open for a week, one event of 300 days) are read apart, through a partial index that holds
//! only them (`schema::LONG_EVENTS_INDEX`), and only those that start before the walk's
//! bound: they sort after every row of the walk, so they are appended when the walk is done.
//! One long event therefore no longer makes every read walk back to its start (COMPATIBILITY.md, server #16),
//! and the cost of a read follows the rows it returns.
//!
//! A chunked read is not one snapshot: an event written between two chunks of the same read
//! is included or not depending on where it falls. Reads that fit in one chunk (which covers
//! every dashboard day and `limit`ed fetch) are atomic as before.

use rusqlite::{params, Connection};
use std::time::Instant;

use crate::error::Result;
pub(crate) use crate::store::schema::LONG_EVENT_NS;
use aw_models::raw_event::{EventRows, RawEvent, TextRows};

/// The first chunk: `?1` bucket row, `?2` hi, `?3` floor (`lo - LONG_EVENT_NS`), `?4` lo,
/// `?5` limit. The order is exactly the index's, so SQLite walks the index and stops after
/// `limit` rows without sorting (asserted by `store::plan_tests::range_read_walks_the_index`).
pub(crate) const RANGE_SQL: &str = "SELECT id, starttime, endtime, data FROM events
     WHERE bucketrow = ?1 AND starttime <= ?2 AND starttime >= ?3 AND endtime >= ?4
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT ?5";

/// Later chunks: the same, continuing after the row `(?2 start, ?5 end, ?6 id)`. The index
/// range still starts at `starttime <= ?2`; only rows tied on that start are filtered.
pub(crate) const RANGE_AFTER_SQL: &str = "SELECT id, starttime, endtime, data FROM events
     WHERE bucketrow = ?1 AND starttime <= ?2 AND starttime >= ?3 AND endtime >= ?4
       AND NOT (starttime = ?2 AND (endtime < ?5 OR (endtime = ?5 AND id <= ?6)))
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT ?7";

/// The long events overlapping `[?2 lo, ?4 hi]` that start before the walk's floor `?3`, in
/// the read's order: `?1` bucket row, `?5` limit. The condition on the duration is written
/// exactly as in the partial index's definition, so SQLite may use it, and `INDEXED BY`
/// makes it: without statistics the planner prefers walking the main index in order (no
/// sort), which walks back through the whole history.
pub(crate) const LONG_EVENTS_SQL: &str = concat!(
    "SELECT id, starttime, endtime, data FROM events INDEXED BY events_long_by_end
     WHERE bucketrow = ?1 AND ",
    long_event_condition!(),
    " AND endtime >= ?2 AND starttime < ?3 AND starttime <= ?4
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT ?5"
);

pub(crate) fn row_to_raw(row: &rusqlite::Row) -> rusqlite::Result<RawEvent> {
    Ok(RawEvent {
        id: row.get(0)?,
        start: row.get(1)?,
        end: row.get(2)?,
        data: row.get(3)?,
    })
}

/// How often (in rows) a step checks its deadline.
pub(crate) const DEADLINE_CHECK_ROWS: usize = 64;

/// An event read in progress.
pub(crate) struct RangeRead {
    bucketrow: i64,
    lo: i64,
    hi: i64,
    floor: i64,
    /// Rows still wanted (`None`: all).
    remaining: Option<u64>,
    clip: bool,
    /// The last row read: where the next chunk continues.
    cursor: Option<(i64, i64, i64)>,
    rows: Vec<RawEvent>,
    /// Set for reads whose rows go out as [`TextRows`] (then `rows` stays empty).
    texts: Option<TextRows>,
    done: bool,
}

impl RangeRead {
    /// The row of the bucket it reads.
    pub(crate) fn bucketrow(&self) -> i64 {
        self.bucketrow
    }

    /// A read of bucket row `bucketrow` for events overlapping `[lo, hi]`.
    pub(crate) fn new(
        bucketrow: i64,
        lo: i64,
        hi: i64,
        limit: Option<u64>,
        clip: bool,
    ) -> RangeRead {
        RangeRead {
            bucketrow,
            lo,
            hi,
            floor: lo.saturating_sub(LONG_EVENT_NS),
            remaining: limit,
            clip,
            cursor: None,
            rows: Vec::new(),
            texts: None,
            done: lo > hi || limit == Some(0),
        }
    }

    /// Makes the read hand its rows over as [`TextRows`] ([`RangeRead::take_text_rows`]).
    pub(crate) fn with_text_parts(mut self) -> RangeRead {
        self.texts = Some(TextRows::default());
        self
    }

    /// Rows read and not handed over yet.
    fn len(&self) -> usize {
        match &self.texts {
            Some(out) => out.len(),
            None => self.rows.len(),
        }
    }

    /// Keeps one row read.
    fn push(&mut self, row: &rusqlite::Row) -> rusqlite::Result<()> {
        match &mut self.texts {
            // Copied as stored, without checking it is UTF-8: the engine does (`TextRows`).
            Some(out) => out.push(
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get_ref(3)?.as_bytes()?,
            ),
            None => self.rows.push(row_to_raw(row)?),
        }
        Ok(())
    }

    /// The last row read and not handed over: `(start, end, id)`.
    fn last(&self) -> Option<(i64, i64, i64)> {
        match &self.texts {
            Some(out) => out.last().map(|r| (r.start, r.end, r.id)),
            None => self.rows.last().map(|r| (r.start, r.end, r.id)),
        }
    }

    /// Whether every wanted row has been read.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Reads up to `max_rows` more rows (tests; the worker uses [`RangeRead::step_until`]).
    #[cfg(test)]
    pub(crate) fn step(&mut self, conn: &Connection, max_rows: usize) -> Result<()> {
        self.step_until(conn, max_rows, None)
    }

    /// Reads up to `max_rows` more rows, stopping early once `deadline` has passed (checked
    /// every [`DEADLINE_CHECK_ROWS`] rows), so a step costs about the same time on a slow
    /// machine as on a fast one.
    pub(crate) fn step_until(
        &mut self,
        conn: &Connection,
        max_rows: usize,
        deadline: Option<Instant>,
    ) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let want = self
            .remaining
            .map_or(max_rows as u64, |r| r.min(max_rows as u64));
        let want = i64::try_from(want).unwrap_or(i64::MAX);
        let before = self.len();
        let mut cut_short = false;
        {
            let mut stmt = match self.cursor {
                None => conn.prepare_cached(RANGE_SQL)?,
                Some(_) => conn.prepare_cached(RANGE_AFTER_SQL)?,
            };
            let mut rows = match self.cursor {
                None => stmt.query(params![self.bucketrow, self.hi, self.floor, self.lo, want])?,
                Some((start, end, id)) => stmt.query(params![
                    self.bucketrow,
                    start,
                    self.floor,
                    self.lo,
                    end,
                    id,
                    want
                ])?,
            };
            while let Some(row) = rows.next()? {
                self.push(row)?;
                let read = self.len() - before;
                if read.is_multiple_of(DEADLINE_CHECK_ROWS)
                    && deadline.is_some_and(|d| Instant::now() >= d)
                {
                    cut_short = (read as i64) < want;
                    break;
                }
            }
        }
        let got = (self.len() - before) as u64;
        if let Some(r) = self.remaining.as_mut() {
            *r -= got.min(*r);
        }
        // Rows already handed over (`take_text_rows`) leave the cursor where it was.
        if let Some(last) = self.last() {
            self.cursor = Some(last);
        }
        self.done = !cut_short && ((got as i64) < want || self.remaining == Some(0));
        if self.done && self.remaining != Some(0) {
            self.read_long_events(conn)?;
        }
        Ok(())
    }

    /// Appends the long events the walk cannot reach (see the module docs): few rows, read
    /// through their own small index.
    fn read_long_events(&mut self, conn: &Connection) -> Result<()> {
        if self.floor == i64::MIN {
            // No bound below: the walk already covered every start.
            return Ok(());
        }
        let limit = self
            .remaining
            .map_or(i64::MAX, |r| i64::try_from(r).unwrap_or(i64::MAX));
        let mut stmt = conn.prepare_cached(LONG_EVENTS_SQL)?;
        let mut rows = stmt.query(params![self.bucketrow, self.lo, self.floor, self.hi, limit])?;
        let before = self.len();
        while let Some(row) = rows.next()? {
            self.push(row)?;
        }
        let got = (self.len() - before) as u64;
        if let Some(r) = self.remaining.as_mut() {
            *r -= got.min(*r);
        }
        Ok(())
    }

    /// Reads everything left at once (tests: the worker reads in steps).
    #[cfg(test)]
    pub(crate) fn run(mut self, conn: &Connection) -> Result<EventRows> {
        while !self.done {
            self.step(conn, usize::MAX / 2)?;
        }
        Ok(self.finish())
    }

    /// The rows read, clipped to the range if asked.
    pub(crate) fn finish(mut self) -> EventRows {
        if self.clip {
            for r in &mut self.rows {
                r.clip(self.lo, self.hi);
            }
        }
        EventRows(self.rows)
    }

    /// The rows read since the last call, with their texts, clipped to the range if asked
    /// (reads made [`RangeRead::with_text_parts`]; the read goes on where it was).
    pub(crate) fn take_text_rows(&mut self) -> TextRows {
        let Some(out) = self.texts.as_mut() else {
            return TextRows::default();
        };
        let mut part = std::mem::take(out);
        if self.clip {
            part.clip(self.lo, self.hi);
        }
        part
    }
}
