//! Merging one bucket into another: every event of `from` moves into `into`, but those
//! `into` holds already (same start, end and data), and `from` is deleted.
//!
//! A merge of a bucket of a year moves hundreds of thousands of rows, so it runs in steps
//! ([`MergeRun`], driven by `worker/rewrite.rs` like a range deletion), all or nothing, while
//! requests for the two buckets wait (`worker/fence.rs`): first the events `into` holds already
//! are deleted from `from`, chunk by chunk (deleting changes nothing `into` holds, so each
//! chunk is judged against `into` as it was), then the rest move, and last `from` goes.
//! Events `from` holds twice both move, as they were.

use rusqlite::params;
use std::sync::Arc;

use super::Store;
use crate::error::{DatastoreError, Result};
use crate::store::change::{Change, Changes};
use crate::store::write_listeners::Touched;

/// What merging one bucket into another did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Merge {
    /// Events moved into the bucket that stays.
    pub moved: u64,
    /// Events the bucket that stays held already (same start, end and data): deleted with
    /// the bucket merged away.
    pub duplicates: u64,
}

/// Events a step takes at once (a step may take several chunks, within its time): small,
/// since a step ends only between chunks, and a heartbeat waits for the chunk in progress
/// (2,000 rows took about 200 ms, the heartbeats' p95 during a merge).
const CHUNK_ROWS: i64 = 250;

/// The first chunk of bucket row `?1`'s events in the composite index's order (so SQLite
/// walks the index and stops after `?2` rows), with what a duplicate is judged by.
const FIRST_SQL: &str = "SELECT id, starttime, endtime, data FROM events WHERE bucketrow = ?1
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT ?2";

/// Later chunks: the same, continuing after the row `(?3 start, ?4 end, ?5 id)`, as
/// `store/range_read.rs` continues.
const AFTER_SQL: &str = "SELECT id, starttime, endtime, data FROM events
     WHERE bucketrow = ?1 AND starttime <= ?3
       AND NOT (starttime = ?3 AND (endtime < ?4 OR (endtime = ?4 AND id <= ?5)))
     ORDER BY starttime DESC, endtime ASC, id ASC LIMIT ?2";

/// Whether bucket row `?1` holds an event of start `?2`, end `?3` and data `?4` (one seek
/// of the composite index).
const HELD_SQL: &str = "SELECT EXISTS (SELECT 1 FROM events WHERE bucketrow = ?1
     AND starttime = ?2 AND endtime = ?3 AND data = ?4)";

/// Any `?2` events of bucket row `?1` (those left to move: each chunk moves out).
const LEFT_SQL: &str = "SELECT id FROM events WHERE bucketrow = ?1 LIMIT ?2";

/// A merge in progress.
pub(crate) struct MergeRun {
    /// The bucket merged away and the one that stays (id and row).
    buckets: [(String, i64); 2],
    /// Deleting what `into` holds already (`true`), then moving the rest.
    deleting: bool,
    /// The last row of `from` looked at while deleting (start, end, id).
    after: Option<(i64, i64, i64)>,
    done: Merge,
}

impl MergeRun {
    /// The two buckets (id and row).
    pub(crate) fn buckets(&self) -> &[(String, i64)] {
        &self.buckets
    }
}

impl Store {
    /// Starts merging bucket `from` into bucket `into`. Fails with
    /// [`DatastoreError::InvalidEvent`] when the two are of different types, or are the
    /// same bucket, before anything changed.
    pub(crate) fn start_merge(&self, from: &str, into: &str) -> Result<MergeRun> {
        let (from_row, into_row) = (self.bucketrow(from)?, self.bucketrow(into)?);
        if from_row == into_row {
            return Err(DatastoreError::InvalidEvent(format!(
                "cannot merge bucket '{into}' into itself"
            )));
        }
        let (from_type, into_type) = (
            self.state(from)?.bucket()._type.clone(),
            self.state(into)?.bucket()._type.clone(),
        );
        if from_type != into_type {
            return Err(DatastoreError::InvalidEvent(format!(
                "cannot merge '{from}' (type '{from_type}') into '{into}' (type '{into_type}'): \
                 the types differ"
            )));
        }
        Ok(MergeRun {
            buckets: [(from.to_string(), from_row), (into.to_string(), into_row)],
            deleting: true,
            after: None,
            done: Merge::default(),
        })
    }

    /// Takes the next chunks of `run` until `deadline` (at least one); returns whether
    /// every event of `from` was deleted or moved. Its changes are recorded in `batch`
    /// unsealed (the rewrite takes them out between steps).
    pub(crate) fn step_merge(
        &mut self,
        changes: &mut Changes,
        run: &mut MergeRun,
        deadline: std::time::Instant,
    ) -> Result<bool> {
        let [(_, from), (_, into)] = run.buckets;
        loop {
            let chunk = if run.deleting {
                self.delete_held_chunk(changes, run, from, into)?
            } else {
                let ids: Vec<i64> = self
                    .conn
                    .prepare_cached(LEFT_SQL)?
                    .query_map(params![from, CHUNK_ROWS], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                for &id in &ids {
                    let moved = Change::MoveEvent {
                        id,
                        bucketrow: from,
                        into,
                    };
                    run.done.moved += changes.apply(&self.conn, moved)? as u64;
                }
                ids.len()
            };
            if chunk < CHUNK_ROWS as usize {
                if !run.deleting {
                    return Ok(true);
                }
                run.deleting = false;
            }
            if std::time::Instant::now() >= deadline {
                return Ok(false);
            }
        }
    }

    /// Deletes the events of the next chunk of `from` that `into` holds already; returns
    /// the chunk's length.
    fn delete_held_chunk(
        &mut self,
        changes: &mut Changes,
        run: &mut MergeRun,
        from: i64,
        into: i64,
    ) -> Result<usize> {
        type Row = (i64, i64, i64, String);
        let read = |r: &rusqlite::Row<'_>| -> rusqlite::Result<Row> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        };
        let rows: Vec<Row> = match run.after {
            None => self
                .conn
                .prepare_cached(FIRST_SQL)?
                .query_map(params![from, CHUNK_ROWS], read)?
                .collect::<rusqlite::Result<_>>()?,
            Some((start, end, id)) => self
                .conn
                .prepare_cached(AFTER_SQL)?
                .query_map(params![from, CHUNK_ROWS, start, end, id], read)?
                .collect::<rusqlite::Result<_>>()?,
        };
        if let Some(&(id, start, end, _)) = rows.last() {
            run.after = Some((start, end, id));
        }
        for (id, start, end, data) in &rows {
            let held: bool = self
                .conn
                .prepare_cached(HELD_SQL)?
                .query_row(params![into, start, end, data], |r| r.get(0))?;
            if held {
                let gone = Change::DeleteEvent {
                    id: *id,
                    bucketrow: from,
                };
                run.done.duplicates += changes.apply(&self.conn, gone)? as u64;
            }
        }
        Ok(rows.len())
    }

    /// Ends a merge whose events are all moved or deleted: deletes `from`, and brings the
    /// caches and listeners up to date.
    pub(crate) fn finish_merge(&mut self, changes: &mut Changes, run: MergeRun) -> Result<Merge> {
        let [(from, from_row), (into, into_row)] = run.buckets;
        changes.apply(&self.conn, Change::DeleteBucket { row: from_row })?;
        let (from_state, into_state) = (
            Arc::clone(self.state(&from)?),
            Arc::clone(self.state(&into)?),
        );
        into_state.add_count(run.done.moved);
        if let Some((start, end)) = from_state.span() {
            into_state.widen(start, end);
        }
        self.buckets.remove(&from);
        self.publish();
        self.last_heartbeat.remove(&from_row);
        self.last_heartbeat.remove(&into_row);
        self.tell(Touched::Bucket(&from));
        self.tell(Touched::Bucket(&into));
        Ok(run.done)
    }
}
