//! The retention rules run by hand (`POST /api/0/retention/apply`) or once a day by
//! themselves, and what the server keeps of their runs.
//!
//! The rules and what they do are the datastore's (`aw_datastore::check_retention_rules`
//! has the setting's shape). Here: a run's order (its dry run first, then the backup, the
//! run all or nothing with each rule held to its preview's count, the removed text scrubbed
//! from beside the file, the free pages given back), the daily schedule, the record of the
//! last runs (shown in `GET /api/0/storage`, with the backups that still hold what they
//! removed), and what the built-in sync learns of rules that stay on this device.
//!
//! * **Daily.** Off unless the setting `retention_daily` is `true` (the Storage card of
//!   Settings turns it on). The server looks 5 s after it started and then every ten
//!   minutes, and runs the rules when the last automatic run is a day old. An automatic run takes no backup of its own when the
//!   newest scheduled backup is less than a day old (it names that one instead); a run by
//!   hand always takes one.
//! * **Rules for this device only** (`everywhere` false, the default) save its space: the
//!   other devices keep their copies. For each bucket such a rule is about to change (as
//!   the run's dry run counted), the setting `retention_frozen` records, before the run so
//!   that no sync pass or kill comes between, the first day (days since 1970-01-01 UTC)
//!   the sync still publishes changes of; the days before it stay in this device's sync file as they
//!   were, so the other devices do not follow (aw-sync's `push.rs`). A rule with
//!   `everywhere` true changes this device's file like a deletion by hand, and the others
//!   follow at their next pass.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use aw_datastore::{Datastore, PrivacyReport, Reclaimed, RETENTION_RULES_KEY};
use chrono::{DateTime, Utc};
use rocket::tokio::sync::Mutex;
use serde::{Deserialize, Serialize};

use crate::backups::Backups;
use crate::endpoints::history::Undo;
use crate::error::{ApiError, ApiResult};

/// The setting that turns the daily run on (`true`).
pub(crate) const DAILY_KEY: &str = "settings.retention_daily";

/// The setting that holds, per bucket, the first day the sync publishes changes of.
pub(crate) const FROZEN_KEY: &str = "settings.retention_frozen";

/// Where the last runs are recorded (not a setting: the server writes it).
const RUNS_KEY: &str = "aw-server.retention.runs";

/// The runs kept in the record.
const KEPT_RUNS: usize = 20;

/// How often the daily schedule looks whether a run is due.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_secs(600);

/// Its first look after the start: soon, so a run that was due while the server was off
/// happens, but after the start's own work.
const FIRST_LOOK: std::time::Duration = std::time::Duration::from_secs(5);

/// One run, as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    /// When it ran.
    pub at: DateTime<Utc>,
    /// Whether the daily schedule ran it.
    pub automatic: bool,
    /// Events deleted.
    pub dropped: u64,
    /// Events redacted.
    pub redacted: u64,
    /// Seconds of the events deleted or redacted.
    pub seconds: f64,
    /// The backup that holds the history as it was before (taken for it, or the scheduled
    /// one an automatic run relied on).
    pub backup: Option<String>,
    /// How long it took, in milliseconds.
    pub took_ms: u64,
    /// Why an automatic run changed nothing (a rule that would empty a bucket, a setting
    /// that no longer validates, a backup that failed); the next try is a day later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the storage answer says of retention.
#[derive(Debug, Serialize)]
pub(crate) struct RetentionSummary {
    /// Whether the rules run by themselves once a day.
    pub daily: bool,
    /// The last runs, newest first.
    pub runs: Vec<RunRecord>,
    /// The backups taken before the last run that removed something: they still hold
    /// what it removed (deleting them, or waiting for their rotation, lets it go).
    pub backups_holding_removed: Vec<String>,
}

/// What a run answers.
#[derive(Debug, Serialize)]
pub(crate) struct RetentionAnswer {
    #[serde(flatten)]
    report: PrivacyReport,
    /// Whether nothing was changed.
    dry_run: bool,
    /// The instant the ages were counted from.
    now: DateTime<Utc>,
    /// The free pages given back after a run that removed something (a file in
    /// `auto_vacuum=INCREMENTAL` mode).
    reclaimed: Option<Reclaimed>,
    #[serde(flatten)]
    undo: Undo,
}

/// What a run needs of the server.
#[derive(Clone)]
pub(crate) struct Retention {
    /// The datastore.
    pub datastore: Datastore,
    /// The backups.
    pub backups: Arc<Backups>,
    /// The database file (for the restore command).
    pub db_path: PathBuf,
    /// Held by every rewrite of history (`AppState::rewrites`).
    pub rewrites: Arc<Mutex<()>>,
}

impl Retention {
    /// Runs the rules: the dry run, and (unless `dry_run`) the backup, the run held to the
    /// dry run's counts (or to `expect`, one count per rule, when given), the scrub and the
    /// free pages given back; records a run that was not dry.
    pub(crate) async fn apply(
        &self,
        dry_run: bool,
        expect: Option<Vec<u64>>,
        automatic: bool,
    ) -> ApiResult<RetentionAnswer> {
        let began = std::time::Instant::now();
        let _alone = self.rewrites.lock().await;
        let now = Utc::now();
        let preview = self
            .datastore
            .apply_retention(now, true, expect.clone())
            .await?;
        let changes = preview.dropped + preview.redacted;
        if dry_run || changes == 0 {
            return Ok(RetentionAnswer {
                report: preview,
                dry_run,
                now,
                reclaimed: None,
                undo: Undo::default(),
            });
        }
        let undo = self.backup_before(automatic, now).await?;
        self.freeze_local_days(&preview, now).await?;
        let counts = expect.unwrap_or_else(|| preview_counts(&preview));
        let report = self
            .datastore
            .apply_retention(now, false, Some(counts))
            .await?;
        self.datastore.scrub().await?;
        let reclaimed = Some(self.datastore.reclaim_space().await?).filter(|r| r.incremental);
        let record = RunRecord {
            at: now,
            automatic,
            dropped: report.dropped,
            redacted: report.redacted,
            seconds: report.rules.iter().map(|r| r.seconds).sum(),
            backup: undo.backup().map(str::to_string),
            took_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            error: None,
        };
        self.record(record).await?;
        Ok(RetentionAnswer {
            report,
            dry_run,
            now,
            reclaimed,
            undo,
        })
    }

    /// The backup a run relies on: a new one, or for an automatic run the newest
    /// scheduled one when it is less than a day old.
    async fn backup_before(&self, automatic: bool, now: DateTime<Utc>) -> ApiResult<Undo> {
        if automatic {
            let recent = self
                .backups
                .status()
                .backups
                .into_iter()
                .find(|b| b.kind == "scheduled" && now - b.time < chrono::Duration::days(1));
            if let Some(recent) = recent {
                return Ok(Undo::by(&self.backups, &self.db_path, recent.file));
            }
        }
        Undo::take(&self.backups, &self.db_path).await
    }

    /// Records, for each bucket a rule for this device only will change (as `preview`
    /// counted), the first day the sync still publishes (see the module docs). Written
    /// before the run, so no sync pass, and no kill, can come between the run's commit and
    /// this record and carry the deletions to the other devices.
    async fn freeze_local_days(
        &self,
        preview: &PrivacyReport,
        now: DateTime<Utc>,
    ) -> ApiResult<()> {
        let rules = self.setting(RETENTION_RULES_KEY).await?;
        let now_ns = aw_models::timestamp::to_ns_saturating(&now);
        let local = aw_datastore::local_rule_cutoffs(rules.as_deref().unwrap_or("null"), now_ns)
            .map_err(ApiError::bad_request)?;
        let mut frozen: BTreeMap<String, i64> = self
            .setting(FROZEN_KEY)
            .await?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let before = frozen.clone();
        for line in preview.rules.iter().filter(|l| l.dropped + l.redacted > 0) {
            let Some(&(_, cutoff)) = local.iter().find(|(index, _)| *index == line.rule) else {
                continue;
            };
            let first_published = aw_datastore::day_of(cutoff) + 1;
            for bucket in &line.buckets {
                let day = frozen.entry(bucket.clone()).or_insert(first_published);
                *day = (*day).max(first_published);
            }
        }
        if frozen != before {
            let text =
                serde_json::to_string(&frozen).map_err(|e| ApiError::internal(e.to_string()))?;
            self.datastore.set_key_value(FROZEN_KEY, &text).await?;
        }
        Ok(())
    }

    /// Adds `record` to the record of runs.
    async fn record(&self, record: RunRecord) -> ApiResult<()> {
        let mut runs = self.runs().await?;
        runs.insert(0, record);
        runs.truncate(KEPT_RUNS);
        let text = serde_json::to_string(&runs).map_err(|e| ApiError::internal(e.to_string()))?;
        self.datastore.set_key_value(RUNS_KEY, &text).await?;
        self.datastore.force_commit().await?;
        Ok(())
    }

    /// The recorded runs, newest first.
    async fn runs(&self) -> ApiResult<Vec<RunRecord>> {
        Ok(self
            .setting(RUNS_KEY)
            .await?
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default())
    }

    /// A key's text, `None` when it is not set.
    async fn setting(&self, key: &str) -> ApiResult<Option<String>> {
        match self.datastore.get_key_value(key).await {
            Ok(text) => Ok(Some(text)),
            Err(aw_datastore::DatastoreError::NoSuchKey(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the daily run is on.
    async fn daily(&self) -> ApiResult<bool> {
        Ok(self.setting(DAILY_KEY).await?.as_deref() == Some("true"))
    }

    /// What the storage answer says of retention.
    pub(crate) async fn summary(&self) -> ApiResult<RetentionSummary> {
        let runs = self.runs().await?;
        let removed_at = runs
            .iter()
            .find(|r| r.dropped + r.redacted > 0)
            .map(|r| r.at);
        let backups_holding_removed = match removed_at {
            Some(at) => self
                .backups
                .status()
                .backups
                .into_iter()
                .filter(|b| b.time <= at)
                .map(|b| b.file)
                .collect(),
            None => Vec::new(),
        };
        Ok(RetentionSummary {
            daily: self.daily().await?,
            runs,
            backups_holding_removed,
        })
    }

    /// Runs the rules once a day while `retention_daily` is on, on `runtime`, until the
    /// runtime ends.
    pub(crate) fn start_daily(self, runtime: &rocket::tokio::runtime::Runtime) {
        runtime.spawn(async move {
            let mut wait = FIRST_LOOK;
            loop {
                rocket::tokio::time::sleep(wait).await;
                wait = LOOK_EVERY;
                if let Err(e) = self.run_if_due().await {
                    log::warn!("The daily retention run failed: {}", e.message);
                }
            }
        });
    }

    /// One look of the daily schedule.
    async fn run_if_due(&self) -> ApiResult<()> {
        if !self.daily().await? {
            return Ok(());
        }
        let last = self.runs().await?.into_iter().find(|r| r.automatic);
        if last.is_some_and(|r| Utc::now() - r.at < chrono::Duration::days(1)) {
            return Ok(());
        }
        // Nothing to do, and a failure, are runs too: the next try is a day later, and the
        // storage answer says why nothing changed.
        let nothing = |error: Option<String>| RunRecord {
            at: Utc::now(),
            automatic: true,
            dropped: 0,
            redacted: 0,
            seconds: 0.0,
            backup: None,
            took_ms: 0,
            error,
        };
        match self.apply(false, None, true).await {
            Ok(done) => {
                if done.report.dropped + done.report.redacted == 0 {
                    self.record(nothing(None)).await?;
                }
                log::info!(
                    "Daily retention run: {} events deleted and {} redacted",
                    done.report.dropped,
                    done.report.redacted
                );
                Ok(())
            }
            Err(e) => {
                self.record(nothing(Some(e.message.clone()))).await?;
                Err(e)
            }
        }
    }
}

/// One count per rule of the setting, as `preview` counted them (rules it does not list,
/// the disabled ones, may change nothing).
fn preview_counts(preview: &PrivacyReport) -> Vec<u64> {
    let len = preview.rules.iter().map(|r| r.rule + 1).max().unwrap_or(0);
    let mut counts = vec![0; len];
    for line in &preview.rules {
        if let Some(slot) = counts.get_mut(line.rule) {
            *slot += line.dropped + line.redacted;
        }
    }
    counts
}
