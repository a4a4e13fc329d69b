//! Compaction: fewer stored events, the same durations. Per bucket, events that `flood`
//! would join are merged ahead of time, and duplicates removed, as `compaction_plan.rs`
//! decides; this file walks the rows and writes the plan.
//!
//! Only buckets whose events every query floods first are compacted (the caller picks
//! them: of the types [`FLOODED_TYPES`]); the raw events of others may be read as they
//! are. The walk goes up the composite index in start order, in chunks, in steps
//! ([`CompactionRun`], driven by `worker/rewrite.rs` like a range deletion): all or nothing,
//! while requests for its buckets wait (`worker/fence.rs`). The plan changes only rows
//! that start before the last row read, so the walk never meets a row it changed.

use rusqlite::params;
use serde::Serialize;

use super::Store;
use crate::error::{DatastoreError, Result};
use crate::store::change::{Change, Changes};
use crate::store::compaction_plan::{Gone, PlanRow, Planner, Step};
use crate::store::write_listeners::Extent;

/// The bucket types whose events the queries flood before anything else (the dashboard's
/// window, AFK and browser-tab queries): the only ones compacted.
pub const FLOODED_TYPES: [&str; 3] = ["currentwindow", "afkstatus", "web.tab.current"];

/// Rows a chunk reads (a step may take several, within its time): small, as for a merge,
/// since a step ends only between chunks.
const CHUNK_ROWS: i64 = 500;

/// The first chunk of bucket row `?1`, in start order: the composite index walked
/// backwards, stopping after `?2` rows.
const FIRST_SQL: &str = "SELECT id, starttime, endtime, data FROM events WHERE bucketrow = ?1
     ORDER BY starttime ASC, endtime DESC, id DESC LIMIT ?2";

/// Later chunks: the same, continuing after the row `(?3 start, ?4 end, ?5 id)`.
const AFTER_SQL: &str = "SELECT id, starttime, endtime, data FROM events
     WHERE bucketrow = ?1 AND starttime >= ?3
       AND NOT (starttime = ?3 AND (endtime > ?4 OR (endtime = ?4 AND id >= ?5)))
     ORDER BY starttime ASC, endtime DESC, id DESC LIMIT ?2";

/// What a compaction did to one bucket, or (a dry run) would do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BucketCompaction {
    /// The bucket.
    pub bucket: String,
    /// Its events before.
    pub events_before: u64,
    /// Its events after.
    pub events_after: u64,
    /// Events merged into the one before them.
    pub merged: u64,
    /// Duplicates removed (same start and data as a longer or equal event).
    pub duplicates: u64,
    /// Events stretched to cover those merged into them.
    pub stretched: u64,
}

/// What a compaction did, or would do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Compaction {
    /// Events of the compacted buckets before.
    pub events_before: u64,
    /// Their events after.
    pub events_after: u64,
    /// Events removed: merged or duplicates (what a later run's `expect` is checked
    /// against).
    pub removed: u64,
    /// Per bucket, those that had something to compact first, then the others.
    pub buckets: Vec<BucketCompaction>,
}

/// A compaction in progress.
pub(crate) struct CompactionRun {
    /// The buckets (id and row).
    buckets: Vec<(String, i64)>,
    dry_run: bool,
    expect: Option<u64>,
    /// The bucket being walked (an index into `buckets`).
    at: usize,
    /// The last row read in it (start, end, id).
    after: Option<(i64, i64, i64)>,
    planner: Planner,
    /// One per bucket walked, the last the one being walked.
    done: Vec<BucketCompaction>,
    /// What changed in the bucket being walked.
    extent: Extent,
}

impl CompactionRun {
    /// The buckets (id and row).
    pub(crate) fn buckets(&self) -> &[(String, i64)] {
        &self.buckets
    }

    /// Whether it only counts.
    pub(crate) fn is_dry_run(&self) -> bool {
        self.dry_run
    }
}

impl Store {
    /// Starts compacting `buckets` (with `dry_run`, only counting). Fails with
    /// `NoSuchBucket`, before anything changed, when one is missing.
    pub(crate) fn start_compaction(
        &self,
        buckets: &[String],
        dry_run: bool,
        expect: Option<u64>,
    ) -> Result<CompactionRun> {
        let buckets: Vec<(String, i64)> = buckets
            .iter()
            .map(|name| Ok((name.clone(), self.bucketrow(name)?)))
            .collect::<Result<_>>()?;
        let first = buckets.first().map(|(name, _)| name.clone());
        Ok(CompactionRun {
            buckets,
            dry_run,
            expect,
            at: 0,
            after: None,
            planner: Planner::default(),
            done: first.into_iter().map(BucketCompaction::of).collect(),
            extent: Extent::new(),
        })
    }

    /// Walks `run` on until `deadline` (at least one chunk); returns whether every bucket
    /// was walked. Its changes are recorded in `changes` unsealed (the rewrite takes them
    /// out between steps).
    pub(crate) fn step_compaction(
        &mut self,
        changes: &mut Changes,
        run: &mut CompactionRun,
        deadline: std::time::Instant,
    ) -> Result<bool> {
        let mut steps = Vec::new();
        while let Some(&(_, bucketrow)) = run.buckets.get(run.at) {
            let rows = self.compaction_chunk(bucketrow, run.after)?;
            let last_chunk = rows.len() < CHUNK_ROWS as usize;
            if let Some(last) = rows.last() {
                run.after = Some((last.start, last.end, last.id));
            }
            let read = rows.len() as u64;
            for row in rows {
                run.planner.push(row, &mut steps);
            }
            if last_chunk {
                run.planner.finish(&mut steps);
            }
            self.write_plan(changes, run, &mut steps, read)?;
            if last_chunk {
                self.end_bucket(run);
            }
            if std::time::Instant::now() >= deadline {
                break;
            }
        }
        Ok(run.at >= run.buckets.len())
    }

    /// Ends a run that walked every bucket: checks what it counted against what the
    /// preview counted (`expect`).
    pub(crate) fn finish_compaction(&mut self, run: CompactionRun) -> Result<Compaction> {
        let mut done = Compaction::default();
        for bucket in &run.done {
            done.events_before += bucket.events_before;
            done.events_after += bucket.events_after;
            done.removed += bucket.merged + bucket.duplicates;
        }
        if let Some(n) = run.expect.filter(|&n| n != done.removed) {
            return Err(DatastoreError::Changed(format!(
                "The events changed since the compaction was previewed: it would now remove \
                 {} events, not {n}. Nothing was changed; preview it again.",
                done.removed
            )));
        }
        done.buckets = run.done;
        done.buckets
            .sort_by_key(|b| std::cmp::Reverse(b.merged + b.duplicates));
        Ok(done)
    }

    /// The next chunk of a bucket in start order.
    fn compaction_chunk(
        &self,
        bucketrow: i64,
        after: Option<(i64, i64, i64)>,
    ) -> Result<Vec<PlanRow>> {
        let read = |r: &rusqlite::Row<'_>| {
            Ok(PlanRow {
                id: r.get(0)?,
                start: r.get(1)?,
                end: r.get(2)?,
                data: r.get(3)?,
            })
        };
        let rows = match after {
            None => self
                .conn
                .prepare_cached(FIRST_SQL)?
                .query_map(params![bucketrow, CHUNK_ROWS], read)?
                .collect::<rusqlite::Result<_>>()?,
            Some((start, end, id)) => self
                .conn
                .prepare_cached(AFTER_SQL)?
                .query_map(params![bucketrow, CHUNK_ROWS, start, end, id], read)?
                .collect::<rusqlite::Result<_>>()?,
        };
        Ok(rows)
    }

    /// Counts the plan's changes into the bucket's line, and (unless a dry run) makes them.
    fn write_plan(
        &mut self,
        changes: &mut Changes,
        run: &mut CompactionRun,
        steps: &mut Vec<Step>,
        read: u64,
    ) -> Result<()> {
        let bucketrow = run.buckets.get(run.at).map_or(0, |b| b.1);
        let Some(line) = run.done.last_mut() else {
            return Ok(());
        };
        line.events_before += read;
        for step in steps.drain(..) {
            let change = match step {
                Step::Stretch { id, start, end } => {
                    line.stretched += 1;
                    run.extent.add(start, end);
                    Change::ResizeEvent {
                        id,
                        bucketrow,
                        start,
                        end,
                    }
                }
                Step::Delete { id, why, within } => {
                    run.extent.add(within.0, within.1);
                    match why {
                        Gone::Merged => line.merged += 1,
                        Gone::Duplicate => line.duplicates += 1,
                    }
                    Change::DeleteEvent { id, bucketrow }
                }
            };
            if !run.dry_run {
                changes.apply(&self.conn, change)?;
            }
        }
        Ok(())
    }

    /// Ends the walk of the current bucket: its counts and caches follow, and the walk
    /// moves to the next.
    fn end_bucket(&mut self, run: &mut CompactionRun) {
        if let (Some(line), Some((name, bucketrow))) =
            (run.done.last_mut(), run.buckets.get(run.at))
        {
            let removed = line.merged + line.duplicates;
            line.events_after = line.events_before.saturating_sub(removed);
            let extent = std::mem::replace(&mut run.extent, Extent::new());
            if !run.dry_run && removed > 0 {
                if let Ok(state) = self.state(name) {
                    state.sub_count(removed);
                }
                // The next heartbeat reads the bucket's last event again.
                self.last_heartbeat.remove(bucketrow);
                self.tell_events(name, extent);
            }
        }
        run.at += 1;
        run.after = None;
        run.planner = Planner::default();
        if let Some((name, _)) = run.buckets.get(run.at) {
            run.done.push(BucketCompaction::of(name.clone()));
        }
    }
}

impl BucketCompaction {
    /// A bucket's line before its walk.
    fn of(bucket: String) -> BucketCompaction {
        BucketCompaction {
            bucket,
            ..BucketCompaction::default()
        }
    }
}
