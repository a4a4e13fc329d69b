//! Automatic, verified backups of the database (`[backup]` in config.toml), taken on a
//! schedule by a thread of their own, on demand (`POST /api/0/backups`, the dashboard's
//! button, `aw-server backup`), and listed at `GET /api/0/backups`.
//!
//! Each backup is an online, consistent copy written through the datastore's
//! [`BackupSource`] (a connection of its own: heartbeats never wait for it), checked with
//! `PRAGMA integrity_check` and renamed into place only if it passes, so every file under a
//! backup's name (`<database stem>-<UTC time>.db`) is a verified one. Rotation keeps the
//! newest backup of each of the last `keep_daily` days and of each of the last
//! `keep_weekly` ISO weeks (UTC), and never the newest one less. A backup is skipped with a
//! warning when the disk would keep less than `min_free_mb` free after it, so backups never
//! fill the disk themselves. With the encrypted build the copy stays encrypted.
//!
//! The first automatic backup waits [`FIRST_DELAY`] after the start (half an interval when
//! that is shorter), so that a start (and every test that starts a server) is not slowed by
//! a copy of the whole history.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aw_datastore::{BackupFile, BackupKind, BackupSource};
use chrono::{DateTime, Utc};
use crossbeam_channel::{Receiver, Sender};
use serde::{Deserialize, Serialize};

use crate::background::Background;

/// How long after the start the first automatic backup may run.
pub(crate) const FIRST_DELAY: Duration = Duration::from_secs(600);

/// The `[backup]` table of config.toml.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct BackupConfig {
    /// Automatic backups on (the off-switch); on-demand backups work either way.
    pub enabled: bool,
    /// Where backups go (absolute, or `~/…`); default `backups` beside the database.
    pub folder: Option<PathBuf>,
    /// Hours between automatic backups.
    pub interval_hours: f64,
    /// Days whose newest backup is kept.
    pub keep_daily: usize,
    /// ISO weeks whose newest backup is kept.
    pub keep_weekly: usize,
    /// Space (MiB) that must stay free on the backup folder's disk after a backup.
    pub min_free_mb: u64,
}

impl Default for BackupConfig {
    fn default() -> Self {
        BackupConfig {
            enabled: true,
            folder: None,
            interval_hours: 24.0,
            keep_daily: 7,
            keep_weekly: 4,
            min_free_mb: 256,
        }
    }
}

/// One backup file, as `GET /api/0/backups` lists it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub(crate) struct BackupEntry {
    /// Its file name in the backup folder.
    pub file: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was taken (from its name).
    pub time: DateTime<Utc>,
    /// `verified`: it passed `integrity_check` when it was written (a file that did not
    /// never got a backup's name).
    pub verdict: &'static str,
    /// `scheduled` (automatic or on demand), `before-migration` or `before-rewrite` (the
    /// last two never rotated away).
    pub kind: &'static str,
    /// Its place in the order backups were written (0: named by an earlier version): the
    /// newest is the highest, whatever the clock said.
    pub seq: u64,
}

/// The last attempt to take a backup.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Attempt {
    /// When it ended.
    pub time: DateTime<Utc>,
    /// The backup it wrote, if it did.
    pub backup: Option<BackupEntry>,
    /// Why it did not.
    pub error: Option<String>,
}

/// What `GET /api/0/backups` answers.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct BackupStatus {
    /// Whether automatic backups are on.
    pub enabled: bool,
    /// The backup folder.
    pub folder: PathBuf,
    /// Hours between automatic backups.
    pub interval_hours: f64,
    /// Days whose newest backup is kept.
    pub keep_daily: usize,
    /// Weeks whose newest backup is kept.
    pub keep_weekly: usize,
    /// Whether a backup is being written now.
    pub running: bool,
    /// Every backup in the folder, newest first.
    pub backups: Vec<BackupEntry>,
    /// The last attempt since the server started.
    pub last_attempt: Option<Attempt>,
    /// When the scheduler last looked whether an automatic backup was due, once it had acted
    /// on it (a backup taken or skipped; none when automatic backups are off); `None` before
    /// its first look. What shows that an idle scheduler runs, and that a look took nothing.
    pub last_check: Option<DateTime<Utc>>,
}

/// Why a backup was not taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BackupError {
    /// Less free space than the floor would be left.
    #[error("{0}")]
    NoSpace(String),
    /// Copying or verifying failed.
    #[error("{0}")]
    Failed(String),
    /// The server is stopping or has no backup connection.
    #[error("backups are not available: {0}")]
    Unavailable(String),
}

type Reply = Sender<Result<BackupEntry, BackupError>>;

/// What the thread is asked for.
enum Asked {
    /// A backup of this kind, answered on the reply.
    Backup(BackupKind, Reply),
    /// Another read of the whole file over the backup connection, which must not hold the
    /// worker: the storage measure (`storage.rs`). It sends its own answer.
    Read(Box<dyn FnOnce(&BackupSource) + Send>),
}

/// The backups of one database: settings, status and the thread.
pub(crate) struct Backups {
    config: BackupConfig,
    folder: PathBuf,
    database: PathBuf,
    last: Mutex<Option<Attempt>>,
    /// When the scheduler last looked (see [`BackupStatus::last_check`]).
    checked: Mutex<Option<DateTime<Utc>>>,
    running: std::sync::atomic::AtomicBool,
    requests: Sender<Option<Asked>>,
    /// The thread's end of `requests`, until the thread takes it: with no thread it is
    /// dropped, so a request is refused at once instead of waiting forever.
    received: Mutex<Option<Receiver<Option<Asked>>>>,
    thread: Background,
}

/// The answer when the backup thread is not there to ask.
fn stopped() -> BackupError {
    BackupError::Unavailable("the backup thread has stopped".into())
}

/// The backup folder for `config` and the database at `database`.
pub(crate) fn folder_of(config: &BackupConfig, database: &Path) -> PathBuf {
    match &config.folder {
        Some(folder) => aw_platform::dirs::expand_home(folder),
        None => database
            .parent()
            .unwrap_or(Path::new("."))
            .join(aw_datastore::BACKUP_FOLDER),
    }
}

/// Checks `[backup]` (an error stops the start, like other bad settings).
pub(crate) fn check_config(config: &BackupConfig) -> Result<(), String> {
    if !(config.interval_hours.is_finite() && config.interval_hours * 3600.0 >= 1.0) {
        return Err(
            "[backup] interval_hours must be a number of hours, at least one second".into(),
        );
    }
    if config.keep_daily == 0 && config.keep_weekly == 0 {
        return Err("[backup] keep_daily and keep_weekly cannot both be 0".into());
    }
    Ok(())
}

impl Backups {
    /// The backups of the database at `database` with `config` (already checked).
    pub(crate) fn new(config: &BackupConfig, database: &Path) -> Backups {
        let (requests, received) = crossbeam_channel::unbounded();
        Backups {
            folder: folder_of(config, database),
            config: config.clone(),
            database: database.to_path_buf(),
            last: Mutex::new(None),
            checked: Mutex::new(None),
            running: std::sync::atomic::AtomicBool::new(false),
            requests,
            received: Mutex::new(Some(received)),
            thread: Background::default(),
        }
    }

    /// The status `GET /api/0/backups` shows.
    pub(crate) fn status(&self) -> BackupStatus {
        BackupStatus {
            enabled: self.config.enabled,
            folder: self.folder.clone(),
            interval_hours: self.config.interval_hours,
            keep_daily: self.config.keep_daily,
            keep_weekly: self.config.keep_weekly,
            running: self.running.load(std::sync::atomic::Ordering::Relaxed),
            backups: list(&self.folder, &self.database),
            last_attempt: self
                .last
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            last_check: *self.checked.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Starts the thread that owns the datastore's backup connection: automatic backups
    /// when enabled, and the ones asked for. A datastore opened without one has no backups.
    pub(crate) fn start(self: &Arc<Self>, datastore: aw_datastore::Datastore) {
        let received = self
            .received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let (Some(source), Some(received)) = (datastore.take_backup_source(), received) else {
            return;
        };
        let this = Arc::clone(self);
        self.thread
            .start("aw-backup", move || this.run(source, &received, &datastore));
    }

    /// Takes a backup now, on the backup thread; waits for it.
    pub(crate) fn take_now(&self) -> Result<BackupEntry, BackupError> {
        self.take_kind(BackupKind::Scheduled)
    }

    /// Takes the backup that comes before an operation rewriting stored history (a range
    /// deleted…): a verified copy holding every write acknowledged before, listed as
    /// `before-rewrite` (the newest ten are kept).
    pub(crate) fn take_before_rewrite(&self) -> Result<BackupEntry, BackupError> {
        self.take_kind(BackupKind::BeforeRewrite)
    }

    /// The folder the backups are written into.
    pub(crate) fn folder(&self) -> &Path {
        &self.folder
    }

    fn take_kind(&self, kind: BackupKind) -> Result<BackupEntry, BackupError> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        self.requests
            .send(Some(Asked::Backup(kind, reply)))
            .map_err(|_| stopped())?;
        answer.recv().map_err(|_| stopped())?
    }

    /// Runs `read` on the backup thread, over its connection, and waits for its answer (after
    /// a backup being written): reads of the whole file that must not hold the worker.
    pub(crate) fn read_with<T: Send + 'static>(
        &self,
        read: impl FnOnce(&BackupSource) -> T + Send + 'static,
    ) -> Result<T, BackupError> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let task = move |source: &BackupSource| drop(reply.send(read(source)));
        self.requests
            .send(Some(Asked::Read(Box::new(task))))
            .map_err(|_| stopped())?;
        answer.recv().map_err(|_| stopped())
    }

    /// Stops the thread (after the backup it is writing, if any) and waits for it.
    pub(crate) fn stop(&self) {
        let _ = self.requests.send(None);
        self.thread.join();
    }

    fn interval(&self) -> Duration {
        Duration::try_from_secs_f64(self.config.interval_hours * 3600.0)
            .unwrap_or(Duration::from_secs(86_400))
    }

    fn run(
        &self,
        mut source: BackupSource,
        received: &Receiver<Option<Asked>>,
        datastore: &aw_datastore::Datastore,
    ) {
        let interval = self.interval();
        // Due: an interval after the newest backup, and not before FIRST_DELAY (or half an
        // interval, when the interval is that short).
        let first = FIRST_DELAY.min(interval / 2);
        // The newest by number; a time in the future (a clock that was ahead) says nothing
        // of its age, and is taken as no backup at all.
        let newest_age = list(&self.folder, &self.database)
            .iter()
            .find(|b| b.kind == "scheduled")
            .and_then(|b| (Utc::now() - b.time).to_std().ok());
        let mut wait = match newest_age {
            Some(age) => interval.saturating_sub(age).max(first),
            None => first,
        };
        loop {
            // Off, the scheduler still looks when a backup would be due (and takes none), so
            // its status shows it runs.
            let request = match received.recv_timeout(wait) {
                Ok(request) => Some(request),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
            };
            // After a salvage the datastore serves a new file, through a new connection.
            if let Some(fresh) = datastore.take_backup_source() {
                source = fresh;
            }
            match request {
                // Stop.
                Some(None) => return,
                Some(Some(Asked::Backup(kind, reply))) => {
                    let _ = reply.send(self.take(&source, datastore, kind));
                }
                Some(Some(Asked::Read(read))) => read(&source),
                None => {
                    if self.config.enabled {
                        if let Err(e) = self.take(&source, datastore, BackupKind::Scheduled) {
                            log::warn!("Automatic backup skipped: {e}");
                        }
                    }
                    *self.checked.lock().unwrap_or_else(PoisonError::into_inner) = Some(Utc::now());
                    wait = interval;
                }
            }
        }
    }

    /// Commits what was acknowledged (so the backup holds every write answered before it
    /// was asked for), takes one backup and rotates; records the attempt.
    fn take(
        &self,
        source: &BackupSource,
        datastore: &aw_datastore::Datastore,
        kind: BackupKind,
    ) -> Result<BackupEntry, BackupError> {
        self.running
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = datastore.force_commit().wait() {
            log::warn!("The backup is taken without the writes not yet committed: {e}");
        }
        let result = take_backup(source, &self.folder, &self.config, kind);
        self.running
            .store(false, std::sync::atomic::Ordering::Relaxed);
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Attempt {
            time: Utc::now(),
            backup: result.as_ref().ok().cloned(),
            error: result.as_ref().err().map(ToString::to_string),
        });
        result
    }
}

/// Writes one verified backup of `source`'s database into `folder` and rotates the folder
/// (the datastore owns the files: names, space check, modes, rotation).
pub(crate) fn take_backup(
    source: &BackupSource,
    folder: &Path,
    config: &BackupConfig,
    kind: BackupKind,
) -> Result<BackupEntry, BackupError> {
    let database = source.database();
    let started = std::time::Instant::now();
    let written = aw_datastore::write_backup(
        source,
        folder,
        kind,
        config.min_free_mb.saturating_mul(1 << 20),
    )
    .map_err(|e| match e {
        aw_datastore::DatastoreError::DiskFull(message) => BackupError::NoSpace(message.message),
        other => BackupError::Failed(other.to_string()),
    })?;
    log::info!(
        "Backed up {} to {} ({} MB, verified, in {:.1?})",
        database.display(),
        folder.join(&written.file).display(),
        written.size / 1_000_000,
        started.elapsed()
    );
    for file in
        aw_datastore::rotate_backups(folder, database, config.keep_daily, config.keep_weekly)
    {
        log::info!("Removed the old backup {}", folder.join(file).display());
    }
    Ok(BackupEntry::from(written))
}

impl From<BackupFile> for BackupEntry {
    fn from(b: BackupFile) -> BackupEntry {
        BackupEntry {
            file: b.file,
            size: b.size,
            time: b.time,
            verdict: "verified",
            kind: b.kind.label(),
            seq: b.seq,
        }
    }
}

/// The backups of `database` in `folder`, newest first.
pub(crate) fn list(folder: &Path, database: &Path) -> Vec<BackupEntry> {
    aw_datastore::list_backups(folder, database)
        .into_iter()
        .map(BackupEntry::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backup_table_is_read_and_checked() {
        let config = crate::config::Config::parse(
            "[backup]\nfolder = \"/b\"\nkeep_daily = 3\ninterval_hours = 6",
            false,
        )
        .unwrap();
        assert_eq!(config.backup.keep_daily, 3);
        assert_eq!(config.backup.keep_weekly, 4);
        assert!(check_config(&config.backup).is_ok());
        assert!(crate::config::Config::parse("[backup]\nkeep_dayly = 3", false).is_err());
        for bad in [
            "[backup]\nfolder = \"relative\"",
            "[backup]\ninterval_hours = 0",
            "[backup]\nkeep_daily = 0\nkeep_weekly = 0",
        ] {
            // Refused at load, naming the table.
            let e = crate::config::Config::parse(bad, false).unwrap_err();
            assert!(e.starts_with("[backup]"), "{bad}: {e}");
        }
    }
}
