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
//! A deletion over all history touches hundreds of thousands of rows, so it runs in steps
//! ([`RangeDeletionRun`], driven by `worker/job.rs`): the worker answers other requests between
//! them, while requests for the run's buckets wait (`worker/fence.rs`), and the run's changes are
//! sealed, or undone, as one when it is done.
//!
//! The next heartbeat never merges into an event a deletion cut: the cut events' ids are
//! remembered (`Store::cut_events`) and the last-heartbeat cache is dropped. (The memory is
//! the worker's: after a restart a heartbeat may merge into such an event again, as into
//! any other last event.)

use rusqlite::params;
use serde::Serialize;

use super::Store;
use crate::error::Result;
use crate::store::change::{Change, Changes, INSERT_EVENT_SQL, NEW_ROW};
use crate::store::schema::LONG_EVENT_NS;
use crate::store::write_listeners::Extent;

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

/// The first chunk of the events of a bucket (`?1`) that start before `hi` (`?2`) and at
/// or after the floor (`?3`), and end after `lo` (`?4`) or start at or after it (zero-length
/// ones), at most `?5`, in the composite index's order (newest first), so SQLite walks the
/// index and stops after `?5` rows.
const TOUCHING_SQL: &str = "SELECT id, starttime, endtime, data FROM events
     WHERE bucketrow = ?1 AND starttime < ?2 AND starttime >= ?3
       AND (endtime > ?4 OR starttime >= ?4)
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT ?5";

/// Later chunks: the same, continuing after the row `(?2 start, ?6 end, ?7 id)` (as
/// `store/range_read.rs` continues): the index range starts at that row's start, which is before
/// `hi` (with `hi` as its bound instead, each chunk would walk again over every row newer
/// than the last). A run's own changes never bring a row back into the walk: what it
/// deleted is gone, and what it cut ends at `lo` or starts at `hi`.
const TOUCHING_AFTER_SQL: &str = "SELECT id, starttime, endtime, data FROM events
     WHERE bucketrow = ?1 AND starttime <= ?2 AND starttime >= ?3
       AND (endtime > ?4 OR starttime >= ?4)
       AND NOT (starttime = ?2 AND (endtime < ?6 OR (endtime = ?6 AND id <= ?7)))
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT ?5";

/// The long events (over [`LONG_EVENT_NS`]) of a bucket (`?1`) that start before the floor
/// (`?3`) and end after `lo` (`?2`): the only ones before the floor that can reach `lo`.
const TOUCHING_LONG_SQL: &str = concat!(
    "SELECT id, starttime, endtime, data FROM events INDEXED BY events_long_by_end
     WHERE bucketrow = ?1 AND ",
    long_event_condition!(),
    " AND endtime > ?2 AND starttime < ?3"
);

/// Rows a step reads at once (a step may read several chunks, within its time).
const CHUNK_ROWS: usize = 512;

/// One event row: id, start, end, data.
type Row = (i64, i64, i64, String);

/// A range deletion in progress, over one or more buckets: the worker runs it in steps
/// (`worker/job.rs`), answering other requests between them, and it is sealed or undone as one.
#[derive(Debug)]
pub(crate) struct RangeDeletionRun {
    lo: i64,
    hi: i64,
    dry_run: bool,
    expect: Option<u64>,
    /// Every bucket of the run (id and row).
    buckets: Vec<(String, i64)>,
    /// What the run did to each bucket walked so far, the last one under way; its length
    /// says which bucket the walk is in.
    tallies: Vec<BucketTally>,
    /// Where the walk of the bucket under way is.
    walk: Walk,
}

/// Where a run is in a bucket: its long events are read first (few rows, through their own
/// index), then the rest in chunks, continuing after the last row of the chunk before.
#[derive(Debug, Clone, Copy)]
enum Walk {
    /// The long events that start before the walk's floor.
    LongEvents,
    /// The walk from the newest row in range, after this row (start, end, id).
    After(Option<(i64, i64, i64)>),
}

/// What a run did to one bucket.
#[derive(Debug, Default)]
struct BucketTally {
    /// Events deleted (wholly inside the range).
    deleted: u64,
    /// Events cut at an edge.
    cut: u64,
    /// Event time removed.
    removed_ns: i128,
    /// Where it changed events (`None`: it changed none, or the run is a dry run).
    extent: Option<Extent>,
    /// Events added by splitting one across both edges.
    added: u64,
}

impl BucketTally {
    /// As the answer counts it.
    fn deletion(&self) -> RangeDeletion {
        RangeDeletion {
            deleted: self.deleted,
            cut: self.cut,
            seconds: self.removed_ns as f64 / 1e9,
            buckets: u64::from(self.deleted + self.cut > 0),
        }
    }
}

impl RangeDeletionRun {
    /// The buckets the run reads or changes (the worker keeps other requests for them
    /// waiting until it is done).
    pub(crate) fn buckets(&self) -> &[(String, i64)] {
        &self.buckets
    }

    /// Whether the run only counts.
    pub(crate) fn is_dry_run(&self) -> bool {
        self.dry_run
    }
}

impl Store {
    /// Starts deleting `[lo, hi)` of `buckets` (see the module docs); with `dry_run`, only
    /// counting. Fails with `NoSuchBucket`, before anything changed, when one is missing.
    /// The caller checked `lo < hi`.
    pub(crate) fn start_range_deletion(
        &self,
        buckets: &[String],
        lo: i64,
        hi: i64,
        dry_run: bool,
        expect: Option<u64>,
    ) -> Result<RangeDeletionRun> {
        let buckets = buckets
            .iter()
            .map(|name| Ok((name.clone(), self.bucketrow(name)?)))
            .collect::<Result<_>>()?;
        Ok(RangeDeletionRun {
            lo,
            hi,
            dry_run,
            expect,
            buckets,
            tallies: vec![BucketTally::default()],
            walk: Walk::LongEvents,
        })
    }

    /// Walks `run` on until `deadline` (at least one chunk); returns whether it is done.
    /// Its changes are recorded in `batch` unsealed (the job takes them out between steps).
    pub(crate) fn step_range_deletion(
        &mut self,
        changes: &mut Changes,
        run: &mut RangeDeletionRun,
        deadline: std::time::Instant,
    ) -> Result<bool> {
        while let Some(&(_, bid)) = run.buckets.get(run.tallies.len() - 1) {
            let rows = self.touching_chunk(bid, run)?;
            let next = match (run.walk, rows.last()) {
                (Walk::LongEvents, _) => Some(Walk::After(None)),
                (Walk::After(_), Some(&(id, start, end, _))) if rows.len() == CHUNK_ROWS => {
                    Some(Walk::After(Some((start, end, id))))
                }
                (Walk::After(_), _) => None,
            };
            for row in rows {
                self.delete_or_cut(changes, bid, row, run)?;
            }
            match next {
                // The long events are few: the walk's first chunk follows in this step.
                Some(walk) if matches!(run.walk, Walk::LongEvents) => {
                    run.walk = walk;
                    continue;
                }
                Some(walk) => run.walk = walk,
                None => {
                    run.tallies.push(BucketTally::default());
                    run.walk = Walk::LongEvents;
                }
            }
            if std::time::Instant::now() >= deadline {
                break;
            }
        }
        Ok(run.tallies.len() > run.buckets.len())
    }

    /// Ends a run that walked every bucket: checks what it counted against what the
    /// preview counted (`expect`), and brings the caches and listeners up to date.
    pub(crate) fn finish_range_deletion(&mut self, run: RangeDeletionRun) -> Result<RangeDeletion> {
        let mut done = RangeDeletion::default();
        for tally in &run.tallies {
            done.add(tally.deletion());
        }
        if let Some(n) = run.expect.filter(|&n| n != done.deleted + done.cut) {
            return Err(crate::error::DatastoreError::Changed(format!(
                "The range changed since it was previewed: it holds {} events to delete or \
                 cut, not {n}. Nothing was deleted; preview it again.",
                done.deleted + done.cut
            )));
        }
        for ((name, bid), tally) in run.buckets.iter().zip(run.tallies) {
            if let Some(extent) = tally.extent {
                let state = self.state(name)?;
                state.sub_count(tally.deleted);
                state.add_count(tally.added);
                self.last_heartbeat.remove(bid);
                self.tell_events(name, extent);
            }
        }
        Ok(done)
    }

    /// The next rows of the run's first bucket: its long events first, then the walk in
    /// chunks.
    fn touching_chunk(&self, bid: i64, run: &RangeDeletionRun) -> Result<Vec<Row>> {
        let (lo, hi) = (run.lo, run.hi);
        let floor = lo.saturating_sub(LONG_EVENT_NS);
        let read = |row: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        };
        let rows = match run.walk {
            Walk::LongEvents if floor > i64::MIN => self
                .conn
                .prepare_cached(TOUCHING_LONG_SQL)?
                .query_map(params![bid, lo, floor], read)?
                .collect::<rusqlite::Result<_>>()?,
            Walk::LongEvents => Vec::new(),
            Walk::After(None) => self
                .conn
                .prepare_cached(TOUCHING_SQL)?
                .query_map(params![bid, hi, floor, lo, CHUNK_ROWS as i64], read)?
                .collect::<rusqlite::Result<_>>()?,
            Walk::After(Some((start, end, id))) => self
                .conn
                .prepare_cached(TOUCHING_AFTER_SQL)?
                .query_map(
                    params![bid, start, floor, lo, CHUNK_ROWS as i64, end, id],
                    read,
                )?
                .collect::<rusqlite::Result<_>>()?,
        };
        Ok(rows)
    }

    /// Deletes one row of the range, or cuts it at the edge it crosses (with `dry_run`,
    /// only counts it).
    fn delete_or_cut(
        &mut self,
        changes: &mut Changes,
        bid: i64,
        (id, start, end, data): Row,
        run: &mut RangeDeletionRun,
    ) -> Result<()> {
        let (lo, hi) = (run.lo, run.hi);
        let Some(tally) = run.tallies.last_mut() else {
            return Ok(());
        };
        let inside = start >= lo && end <= hi;
        tally.removed_ns += i128::from(end.min(hi)) - i128::from(start.max(lo));
        if inside {
            tally.deleted += 1;
        } else {
            tally.cut += 1;
        }
        if run.dry_run {
            return Ok(());
        }
        tally.extent.get_or_insert_with(Extent::new).add(start, end);
        if inside {
            changes.apply(&self.conn, Change::DeleteEvent { id, bucketrow: bid })?;
        } else {
            self.cut_events.insert(id);
            let split = self.cut(changes, bid, (id, start, end, data), lo, hi)?;
            tally.added += u64::from(split);
        }
        Ok(())
    }

    /// Cuts an event that crosses `lo` or `hi` (or both); returns whether it was split in
    /// two (the part from `hi` then being a new event, whose id is remembered as cut too).
    fn cut(
        &mut self,
        changes: &mut Changes,
        bid: i64,
        (id, start, end, data): Row,
        lo: i64,
        hi: i64,
    ) -> rusqlite::Result<bool> {
        let (left, right) = (start < lo, end > hi);
        let (new_start, new_end) = if left { (start, lo) } else { (hi, end) };
        changes.apply(
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
        changes.record(Change::InsertEvent {
            id: new_id,
            bucketrow: bid,
            start: hi,
            end,
            data,
        });
        self.cut_events.insert(new_id);
        Ok(true)
    }
}
