//! The privacy rules applied to the stored history: every event of every bucket judged by
//! the enabled rules of the `privacy_filters` setting, dropped or redacted, or (a dry run)
//! only counted.
//!
//! A year of a busy user's events takes about a second to judge, so the run goes in steps
//! ([`PrivacyRun`], driven by `worker/job.rs` like a range deletion), walking the events in id
//! order, and is sealed, or undone, as one when it is done. Between its steps the worker
//! goes on with heartbeats, inserts, edits and reads: what is written meanwhile passes the
//! same rules on its way in (the store's live filter), so the result is the same whether a
//! write lands before or after the run. What would change that waits for its end
//! (`worker/fence.rs`): a change of the rules themselves, bucket changes, imports, commits and
//! other rewrites. A read between two steps may see the history partly judged.

use std::collections::HashMap;

use super::Store;
use crate::error::Result;
use crate::store::change::{Change, Changes};
use crate::store::privacy::{PastVerdict, PrivacyFilter, PrivacyReport};
use crate::store::write_listeners::Touched;

/// Events a step reads at once (a step may read several chunks, within its time).
const CHUNK_ROWS: i64 = 2_000;

/// A run of the privacy rules over the history, in progress.
pub(crate) struct PrivacyRun {
    filter: PrivacyFilter,
    report: PrivacyReport,
    dry_run: bool,
    /// Bucket names by row, as the run began (bucket changes wait for its end).
    names: HashMap<i64, String>,
    /// The last event id judged.
    after: i64,
    /// Whether every event was judged.
    done: bool,
    /// Events dropped so far, by bucket row (the bucket counts follow at the end).
    dropped: HashMap<i64, u64>,
}

impl PrivacyRun {
    /// Whether the run only counts.
    pub(crate) fn is_dry_run(&self) -> bool {
        self.dry_run
    }
}

/// One event the rules change: its row, the data they judged, and its new data (`None`:
/// dropped).
struct Changed {
    id: i64,
    bucketrow: i64,
    judged: String,
    data: Option<String>,
}

impl Store {
    /// Starts applying the rules as stored now to every stored event (with `dry_run`,
    /// only counting); rules that do not compile are named in the report and skipped.
    pub(crate) fn start_privacy_run(&self, dry_run: bool) -> Result<PrivacyRun> {
        let setting = self.privacy_setting()?;
        let (filter, skipped) = PrivacyFilter::from_json(setting.as_deref().unwrap_or("null"));
        let report = filter.report(skipped);
        let names = self
            .buckets
            .iter()
            .filter_map(|(name, state)| Some((state.bucket().bid?, name.clone())))
            .collect();
        Ok(PrivacyRun {
            done: filter.is_empty(),
            filter,
            report,
            dry_run,
            names,
            after: i64::MIN,
            dropped: HashMap::new(),
        })
    }

    /// Judges the next events of `run` until `deadline` (at least one chunk), dropping or
    /// redacting as the rules say; returns whether every event was judged. Its changes are
    /// recorded in `batch` unsealed (the job takes them out between steps).
    pub(crate) fn step_privacy_run(
        &mut self,
        changes: &mut Changes,
        run: &mut PrivacyRun,
        deadline: std::time::Instant,
    ) -> Result<bool> {
        while !run.done {
            let changed = self.judge_chunk(run)?;
            if !run.dry_run && !changed.is_empty() {
                let dropped = &mut run.dropped;
                self.securely(|s| s.write_changes(changes, changed, dropped))?;
                // A heartbeat between two steps must not merge into an event this one
                // dropped or redacted.
                self.last_heartbeat.clear();
            }
            if std::time::Instant::now() >= deadline {
                break;
            }
        }
        Ok(run.done)
    }

    /// Ends a run that judged every event: the bucket counts and the listeners follow.
    pub(crate) fn finish_privacy_run(&mut self, run: PrivacyRun) -> PrivacyReport {
        if !run.dry_run && run.report.dropped + run.report.redacted > 0 {
            for (bucketrow, n) in run.dropped {
                if let Some(state) = run.names.get(&bucketrow).and_then(|n| self.buckets.get(n)) {
                    state.sub_count(n);
                }
            }
            self.last_heartbeat.clear();
            self.tell(Touched::Everything);
        }
        run.report
    }

    /// Reads and judges the next chunk of events; what the rules change in it.
    fn judge_chunk(&self, run: &mut PrivacyRun) -> Result<Vec<Changed>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, bucketrow, starttime, data FROM events
             WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let mut rows = stmt.query(rusqlite::params![run.after, CHUNK_ROWS])?;
        let mut changed = Vec::new();
        let mut read = 0;
        while let Some(row) = rows.next()? {
            read += 1;
            let (id, bucketrow, start): (i64, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
            run.after = id;
            let Some(bucket) = run.names.get(&bucketrow) else {
                continue;
            };
            let text: String = row.get(3)?;
            let data = match run
                .filter
                .judge_past(bucket, (id, start), &text, &mut run.report)
            {
                PastVerdict::Keep => continue,
                PastVerdict::Drop => None,
                PastVerdict::Redact(data) => Some(data),
            };
            changed.push(Changed {
                id,
                bucketrow,
                judged: text,
                data,
            });
        }
        run.done = read < CHUNK_ROWS;
        Ok(changed)
    }

    fn write_changes(
        &mut self,
        changes: &mut Changes,
        changed: Vec<Changed>,
        dropped: &mut HashMap<i64, u64>,
    ) -> Result<()> {
        for c in changed {
            let change = match c.data {
                None => {
                    *dropped.entry(c.bucketrow).or_default() += 1;
                    Change::DeleteEvent {
                        id: c.id,
                        bucketrow: c.bucketrow,
                    }
                }
                Some(data) => Change::RedactEvent {
                    id: c.id,
                    bucketrow: c.bucketrow,
                    texts: Box::new([c.judged, data]),
                },
            };
            changes.apply(&self.conn, change)?;
        }
        Ok(())
    }
}
