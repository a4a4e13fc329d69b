//! What takes the space, as `GET /api/0/storage` answers it: the files of the database (the
//! file itself, its WAL, the journal of acknowledged writes, the query results kept beside
//! it, the backups folder), and the last measure of the history per bucket and per year.
//!
//! The files are looked at on every answer (a few `stat`s). The measure
//! ([`aw_datastore::SpaceMeasure`]) reads every event, so it runs on the backup thread's
//! connection, where heartbeats never wait for it, and is kept in memory: each answer
//! carries the last one with the time it was taken. An answer starts a new measure in the
//! background when there is none or the last is older than [`STALE`]; `?fresh=true` waits
//! for a new one. A start measures again at the first look.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aw_datastore::{with_suffix, Datastore, SpaceMeasure};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::backups::{BackupError, Backups};

/// How old a measure may be before an answer starts a new one.
pub(crate) const STALE: Duration = Duration::from_secs(600);

/// The measures kept between answers.
#[derive(Default)]
pub(crate) struct Storage {
    /// The last measure taken.
    last: Mutex<Option<Measured>>,
    /// A measure started in the background has not ended.
    measuring: AtomicBool,
}

/// A measure and when it was taken.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Measured {
    /// When the measure began (its snapshot of the database).
    pub measured_at: DateTime<Utc>,
    /// What it found.
    #[serde(flatten)]
    pub measure: SpaceMeasure,
}

/// What `GET /api/0/storage` answers.
#[derive(Debug, Serialize)]
pub(crate) struct StorageReport {
    /// The sizes of the files, now.
    pub files: Files,
    /// The space inside the database file that no row uses, as of the last measure:
    /// `freelist_count` pages of `page_size` bytes.
    pub free_bytes: Option<u64>,
    /// The last measure (see the module docs); `null` before the first one ended.
    pub measure: Option<Measured>,
    /// Whether a measure is running now.
    pub measuring: bool,
    /// The retention rules' runs (`retention.rs`), added by the route.
    pub retention: Option<crate::retention::RetentionSummary>,
}

/// The files of the database, in bytes (0 for one that is not there).
#[derive(Debug, Serialize)]
pub(crate) struct Files {
    /// The database file.
    pub database: u64,
    /// Its write-ahead log (`-wal`): commits not yet copied into the file.
    pub wal: u64,
    /// The journal of acknowledged writes (`.journal`): its size on disk, allocated ahead
    /// so appends never need new space.
    pub journal_allocated: u64,
    /// What of the journal holds records (the writes not committed yet).
    pub journal_used: u64,
    /// The query results kept beside the database between runs (`.derived`).
    pub kept_results: u64,
    /// Every backup in the backup folder together.
    pub backups: u64,
    /// How many backups there are.
    pub backup_count: usize,
    /// The backup folder.
    pub backup_folder: std::path::PathBuf,
}

impl Storage {
    /// The report: the files now, the last measure; starts a new measure in the background
    /// when the last is missing or older than [`STALE`].
    pub(crate) fn report(
        self: &Arc<Self>,
        datastore: &Datastore,
        db: &Path,
        backups: &Arc<Backups>,
    ) -> StorageReport {
        let last = self.last();
        let stale = last.as_ref().is_none_or(|m| {
            (Utc::now() - m.measured_at)
                .to_std()
                .is_ok_and(|age| age > STALE)
        });
        if stale {
            self.measure_in_background(datastore, backups);
        }
        self.answer(db, datastore.journal_used(), backups, last)
    }

    /// Takes a measure now and waits for it; then the report.
    pub(crate) fn report_fresh(
        &self,
        datastore: &Datastore,
        db: &Path,
        backups: &Backups,
    ) -> Result<StorageReport, BackupError> {
        let measured = measure(datastore, backups)?;
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(measured.clone());
        Ok(self.answer(db, datastore.journal_used(), backups, Some(measured)))
    }

    fn last(&self) -> Option<Measured> {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn answer(
        &self,
        db: &Path,
        journal_used: u64,
        backups: &Backups,
        measure: Option<Measured>,
    ) -> StorageReport {
        let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len());
        let status = backups.status();
        StorageReport {
            files: Files {
                database: size(db),
                wal: size(&with_suffix(db, "-wal")),
                journal_allocated: size(&with_suffix(db, ".journal")),
                journal_used,
                kept_results: size(&with_suffix(db, ".derived")),
                backups: status.backups.iter().map(|b| b.size).sum(),
                backup_count: status.backups.len(),
                backup_folder: status.folder,
            },
            free_bytes: measure
                .as_ref()
                .map(|m| m.measure.freelist_count * m.measure.page_size),
            measure,
            measuring: self.measuring.load(Ordering::Acquire),
            retention: None,
        }
    }

    /// Starts a measure on a thread of its own (which waits for the backup thread), unless
    /// one is running; keeps it when it ends.
    fn measure_in_background(self: &Arc<Self>, datastore: &Datastore, backups: &Arc<Backups>) {
        if self.measuring.swap(true, Ordering::AcqRel) {
            return;
        }
        let (storage, backups) = (Arc::clone(self), Arc::clone(backups));
        let datastore = datastore.clone();
        let started = std::thread::Builder::new()
            .name("aw-storage".into())
            .spawn(move || {
                match measure(&datastore, &backups) {
                    Ok(measured) => {
                        *storage.last.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some(measured);
                    }
                    Err(e) => log::warn!("The storage measure failed: {e}"),
                }
                storage.measuring.store(false, Ordering::Release);
            });
        if let Err(e) = started {
            log::warn!("The storage measure could not start: {e}");
            self.measuring.store(false, Ordering::Release);
        }
    }
}

/// One measure over the backup connection, of every write acknowledged before it (they are
/// committed first, as before a backup).
fn measure(datastore: &Datastore, backups: &Backups) -> Result<Measured, BackupError> {
    if let Err(e) = datastore.force_commit().wait() {
        log::warn!("The storage is measured without the writes not yet committed: {e}");
    }
    let measured_at = Utc::now();
    let measure = backups
        .read_with(|source| source.measure_space())?
        .map_err(|e| BackupError::Failed(format!("the database could not be measured: {e}")))?;
    Ok(Measured {
        measured_at,
        measure,
    })
}
