//! The privacy rules applied to the stored history: every event of every bucket judged by
//! the enabled rules of the `privacy_filters` setting, dropped or redacted, or (a dry run)
//! only counted.
//!
//! The whole history is read in one worker turn (about a second for a year of a busy
//! user's events), so the run is one change, all or nothing, ordered wholly before or after
//! any other request.

use std::collections::HashMap;

use super::Store;
use crate::batch::{Batch, Change};
use crate::error::Result;
use crate::privacy::{PastVerdict, PrivacyFilter, PrivacyReport};
use crate::write_listeners::Touched;

/// One event the rules change: its row, and its new data (`None`: dropped).
struct Changed {
    id: i64,
    bucketrow: i64,
    start: i64,
    end: i64,
    data: Option<String>,
}

impl Store {
    /// Applies the privacy rules to every stored event (with `dry_run`, only counts).
    pub(crate) fn apply_privacy_to_past(
        &mut self,
        batch: &mut Batch,
        dry_run: bool,
    ) -> Result<PrivacyReport> {
        // The rules as stored now, with those that do not compile named.
        let setting = self.privacy_setting()?;
        let (filter, skipped) = PrivacyFilter::from_json(setting.as_deref().unwrap_or("null"));
        let mut report = filter.report(skipped);
        if filter.is_empty() {
            return Ok(report);
        }
        let names: HashMap<i64, String> = self
            .buckets
            .iter()
            .filter_map(|(name, state)| Some((state.bucket().bid?, name.clone())))
            .collect();
        let mut changed = Vec::new();
        {
            let mut stmt = self.conn.prepare(
                "SELECT id, bucketrow, starttime, endtime, data FROM events ORDER BY id",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                let (id, bucketrow, start, end): (i64, i64, i64, i64) =
                    (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
                let Some(bucket) = names.get(&bucketrow) else {
                    continue;
                };
                let text: String = row.get(4)?;
                let data = match filter.judge_past(bucket, (id, start), &text, &mut report) {
                    PastVerdict::Keep => continue,
                    PastVerdict::Drop => None,
                    PastVerdict::Redact(data) => Some(data),
                };
                changed.push(Changed {
                    id,
                    bucketrow,
                    start,
                    end,
                    data,
                });
            }
        }
        if dry_run || changed.is_empty() {
            return Ok(report);
        }
        // Freed cells and pages are zeroed as they are freed: the removed text does not
        // stay in the file's free space (the WAL and the journal: `Datastore::scrub`).
        self.conn.execute_batch("PRAGMA secure_delete = ON")?;
        let written = self.write_changes(batch, changed, &names);
        self.conn.execute_batch("PRAGMA secure_delete = OFF")?;
        written?;
        self.last_heartbeat.clear();
        self.tell(Touched::Everything);
        Ok(report)
    }

    fn write_changes(
        &mut self,
        batch: &mut Batch,
        changed: Vec<Changed>,
        names: &HashMap<i64, String>,
    ) -> Result<()> {
        let mut dropped: HashMap<i64, u64> = HashMap::new();
        let mut result = Ok(());
        for c in changed {
            let change = match c.data {
                None => {
                    *dropped.entry(c.bucketrow).or_default() += 1;
                    Change::DeleteEvent {
                        id: c.id,
                        bucketrow: c.bucketrow,
                    }
                }
                Some(data) => Change::ReplaceEvent {
                    id: c.id,
                    start: c.start,
                    end: c.end,
                    data,
                },
            };
            if let Err(e) = batch.apply(&self.conn, change) {
                result = Err(e.into());
                break;
            }
        }
        // The mirror follows whatever was written, also when a later row failed.
        for (bucketrow, n) in dropped {
            if let Some(state) = names.get(&bucketrow).and_then(|n| self.buckets.get(n)) {
                state.sub_count(n);
            }
        }
        result
    }
}
