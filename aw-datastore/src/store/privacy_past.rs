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
//!
//! The retention rules (`retention.rs`) run the same way, compiled into the same engine
//! with the cutoffs of the instant the run began. Two checks end such a run with
//! [`DatastoreError::Changed`], nothing changed: a rule would delete every event of a bucket
//! without saying it may (`all_of_bucket`), or would change more events than the preview
//! the caller passes back counted (`expect`, one count per rule of the setting).

use std::collections::{BTreeSet, HashMap};

use super::Store;
use crate::error::{DatastoreError, Result};
use crate::store::change::{Change, Changes};
use crate::store::privacy::{PastBucket, PastVerdict, PrivacyFilter, PrivacyReport};
use crate::store::retention::{self, RETENTION_RULES_KEY};
use crate::store::write_listeners::Touched;

/// Events a step reads at once (a step may read several chunks, within its time).
const CHUNK_ROWS: i64 = 2_000;

/// A run of the privacy rules over the history, in progress.
pub(crate) struct PrivacyRun {
    filter: PrivacyFilter,
    report: PrivacyReport,
    dry_run: bool,
    /// Buckets by row, as the run began (bucket changes wait for its end).
    names: HashMap<i64, PastBucket>,
    /// The most events each rule of the setting may change (retention rules, `expect`).
    expect: Option<Vec<u64>>,
    /// The last event id judged.
    after: i64,
    /// Whether every event was judged.
    done: bool,
    /// Events dropped so far, by bucket row (the bucket counts follow at the end).
    dropped: HashMap<i64, u64>,
    /// The rules that dropped events of a bucket, by bucket row.
    dropped_by: HashMap<i64, BTreeSet<usize>>,
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
    /// The rule that dropped it, if one did.
    dropped_by: Option<usize>,
}

impl Store {
    /// Starts applying the rules as stored now to every stored event (with `dry_run`,
    /// only counting); rules that do not compile are named in the report and skipped.
    pub(crate) fn start_privacy_run(&self, dry_run: bool) -> Result<PrivacyRun> {
        let setting = self.privacy_setting()?;
        let (filter, skipped) = PrivacyFilter::from_json(setting.as_deref().unwrap_or("null"));
        Ok(self.rules_run(filter, skipped, dry_run, None))
    }

    /// Starts applying the retention rules as stored now, with the cutoffs of `now` (ns),
    /// to every stored event (with `dry_run`, only counting). Fails with
    /// [`DatastoreError::InvalidEvent`] when the setting does not validate, or `expect`
    /// has more counts than the setting rules (a rule past its end may change nothing).
    pub(crate) fn start_retention_run(
        &self,
        now: i64,
        dry_run: bool,
        expect: Option<Vec<u64>>,
    ) -> Result<PrivacyRun> {
        let setting = self.setting_text(RETENTION_RULES_KEY)?;
        let rules = retention::compile(setting.as_deref().unwrap_or("null"), now)
            .map_err(DatastoreError::InvalidEvent)?;
        if let Some(n) = expect.as_ref().map(Vec::len).filter(|&n| n > rules.count) {
            return Err(DatastoreError::InvalidEvent(format!(
                "expect has {n} counts, and retention_rules only {} rules: one count per rule",
                rules.count
            )));
        }
        Ok(self.rules_run(rules.filter, Vec::new(), dry_run, expect))
    }

    /// A run of `filter` over the history.
    fn rules_run(
        &self,
        filter: PrivacyFilter,
        skipped: Vec<String>,
        dry_run: bool,
        expect: Option<Vec<u64>>,
    ) -> PrivacyRun {
        let report = filter.report(skipped);
        let names = self
            .buckets
            .iter()
            .filter_map(|(name, state)| {
                let b = state.bucket();
                let bucket = PastBucket {
                    name: name.clone(),
                    kind: b._type.clone(),
                    hostname: b.hostname.clone(),
                };
                Some((b.bid?, bucket))
            })
            .collect();
        PrivacyRun {
            done: filter.is_empty(),
            filter,
            report,
            dry_run,
            names,
            expect,
            after: i64::MIN,
            dropped: HashMap::new(),
            dropped_by: HashMap::new(),
        }
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
            for c in &changed {
                if let Some(rule) = c.dropped_by {
                    *run.dropped.entry(c.bucketrow).or_default() += 1;
                    run.dropped_by.entry(c.bucketrow).or_default().insert(rule);
                }
            }
            if !run.dry_run && !changed.is_empty() {
                self.securely(|s| s.write_changes(changes, changed))?;
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

    /// Ends a run that judged every event: the checks (see the module docs), then the
    /// bucket counts and the listeners follow.
    pub(crate) fn finish_privacy_run(&mut self, mut run: PrivacyRun) -> Result<PrivacyReport> {
        self.note_emptied(&mut run)?;
        if let Some(expect) = &run.expect {
            for line in &run.report.rules {
                let changed = line.dropped + line.redacted;
                let allowed = expect.get(line.rule).copied().unwrap_or(0);
                if changed > allowed {
                    return Err(DatastoreError::Changed(format!(
                        "Retention rule {} would now change {changed} events, more than the \
                         {allowed} its preview counted. Nothing was changed; preview it again.",
                        line.rule
                    )));
                }
            }
        }
        if !run.dry_run && run.report.dropped + run.report.redacted > 0 {
            for (bucketrow, n) in run.dropped {
                let state = run
                    .names
                    .get(&bucketrow)
                    .and_then(|b| self.buckets.get(&b.name));
                if let Some(state) = state {
                    state.sub_count(n);
                }
            }
            self.last_heartbeat.clear();
            self.tell(Touched::Everything);
        }
        Ok(run.report)
    }

    /// Names in each rule's report line the buckets it leaves without events; fails when
    /// a rule that may not do so does (and the run is not a dry one).
    fn note_emptied(&self, run: &mut PrivacyRun) -> Result<()> {
        for (bucketrow, rules) in &run.dropped_by {
            let left: i64 = self.conn.query_row(
                "SELECT COUNT(*) FROM events WHERE bucketrow = ?1",
                [bucketrow],
                |r| r.get(0),
            )?;
            let dropped = run.dropped.get(bucketrow).copied().unwrap_or(0);
            let emptied = if run.dry_run {
                u64::try_from(left).unwrap_or(0) <= dropped
            } else {
                left == 0
            };
            let Some(bucket) = run.names.get(bucketrow).filter(|_| emptied) else {
                continue;
            };
            for line in run
                .report
                .rules
                .iter_mut()
                .filter(|l| rules.contains(&l.rule))
            {
                line.empties.push(bucket.name.clone());
                if !run.dry_run && run.filter.must_not_empty(line.rule) {
                    return Err(DatastoreError::Changed(format!(
                        "Retention rule {} would delete every event of bucket '{}'. Nothing was \
                         changed; give the rule \"all_of_bucket\": true if that is meant.",
                        line.rule, bucket.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// Reads and judges the next chunk of events; what the rules change in it.
    fn judge_chunk(&self, run: &mut PrivacyRun) -> Result<Vec<Changed>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, bucketrow, starttime, endtime, data FROM events
             WHERE id > ?1 ORDER BY id LIMIT ?2",
        )?;
        let mut rows = stmt.query(rusqlite::params![run.after, CHUNK_ROWS])?;
        let mut changed = Vec::new();
        let mut read = 0;
        while let Some(row) = rows.next()? {
            read += 1;
            let (id, bucketrow, start, end): (i64, i64, i64, i64) =
                (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
            run.after = id;
            let Some(bucket) = run.names.get(&bucketrow) else {
                continue;
            };
            let text: String = row.get(4)?;
            let (data, dropped_by) =
                match run
                    .filter
                    .judge_past(bucket, (id, start, end), &text, &mut run.report)
                {
                    PastVerdict::Keep => continue,
                    PastVerdict::Drop(rule) => (None, Some(rule)),
                    PastVerdict::Redact(data) => (Some(data), None),
                };
            changed.push(Changed {
                id,
                bucketrow,
                judged: text,
                data,
                dropped_by,
            });
        }
        run.done = read < CHUNK_ROWS;
        Ok(changed)
    }

    fn write_changes(&mut self, changes: &mut Changes, changed: Vec<Changed>) -> Result<()> {
        for c in changed {
            let change = match c.data {
                None => Change::DeleteEvent {
                    id: c.id,
                    bucketrow: c.bucketrow,
                },
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
