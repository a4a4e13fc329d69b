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

use aw_datastore::BackupSource;
use chrono::{DateTime, Datelike, NaiveDateTime, Utc};
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
    /// `scheduled` (automatic or on demand) or `before-migration` (never rotated away).
    pub kind: &'static str,
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
}

/// Why a backup was not taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BackupError {
    /// Less free space than the floor would be left.
    #[error("not enough free space in {folder}: {available_mb} MiB free, the backup needs about {needed_mb} MiB and {floor_mb} MiB must stay free")]
    NoSpace {
        /// The backup folder.
        folder: String,
        /// Free space now.
        available_mb: u64,
        /// The database's size.
        needed_mb: u64,
        /// The configured floor.
        floor_mb: u64,
    },
    /// Copying or verifying failed.
    #[error("{0}")]
    Failed(String),
    /// The server is stopping or has no backup connection.
    #[error("backups are not available: {0}")]
    Unavailable(String),
}

type Reply = Sender<Result<BackupEntry, BackupError>>;

/// The backups of one database: settings, status and the thread.
pub(crate) struct Backups {
    config: BackupConfig,
    folder: PathBuf,
    database: PathBuf,
    last: Mutex<Option<Attempt>>,
    running: std::sync::atomic::AtomicBool,
    requests: Sender<Option<Reply>>,
    /// The thread's end of `requests`, until the thread takes it: with no thread it is
    /// dropped, so a request is refused at once instead of waiting forever.
    received: Mutex<Option<Receiver<Option<Reply>>>>,
    thread: Background,
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
    if let Some(folder) = &config.folder {
        if !aw_platform::dirs::expand_home(folder).is_absolute() {
            return Err(format!(
                "[backup] folder '{}' is not an absolute path",
                folder.display()
            ));
        }
    }
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
        let (reply, answer) = crossbeam_channel::bounded(1);
        self.requests
            .send(Some(reply))
            .map_err(|_| BackupError::Unavailable("the backup thread has stopped".into()))?;
        answer
            .recv()
            .map_err(|_| BackupError::Unavailable("the backup thread has stopped".into()))?
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
        received: &Receiver<Option<Reply>>,
        datastore: &aw_datastore::Datastore,
    ) {
        let interval = self.interval();
        // Due: an interval after the newest backup, and not before FIRST_DELAY (or half an
        // interval, when the interval is that short).
        let first = FIRST_DELAY.min(interval / 2);
        let newest_age = list(&self.folder, &self.database)
            .iter()
            .filter(|b| b.kind == "scheduled")
            .map(|b| (Utc::now() - b.time).to_std().unwrap_or(Duration::ZERO))
            .min();
        let mut wait = match newest_age {
            Some(age) => interval.saturating_sub(age).max(first),
            None => first,
        };
        loop {
            let request = if self.config.enabled {
                match received.recv_timeout(wait) {
                    Ok(request) => Some(request),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
                }
            } else {
                match received.recv() {
                    Ok(request) => Some(request),
                    Err(_) => return,
                }
            };
            // After a salvage the datastore serves a new file, through a new connection.
            if let Some(fresh) = datastore.take_backup_source() {
                source = fresh;
            }
            match request {
                // Stop.
                Some(None) => return,
                Some(Some(reply)) => {
                    let _ = reply.send(self.take(&source));
                }
                None => {
                    if let Err(e) = self.take(&source) {
                        log::warn!("Automatic backup skipped: {e}");
                    }
                    wait = interval;
                }
            }
        }
    }

    /// Takes one backup and rotates; records the attempt.
    fn take(&self, source: &BackupSource) -> Result<BackupEntry, BackupError> {
        self.running
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let result = take_backup(source, &self.folder, &self.config);
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

/// Writes one verified backup of `source`'s database into `folder` and rotates the folder.
pub(crate) fn take_backup(
    source: &BackupSource,
    folder: &Path,
    config: &BackupConfig,
) -> Result<BackupEntry, BackupError> {
    let database = source.database();
    std::fs::create_dir_all(folder)
        .map_err(|e| BackupError::Failed(format!("cannot create {}: {e}", folder.display())))?;
    check_space(folder, database, config.min_free_mb)?;
    let time = Utc::now();
    let file = format!("{}-{}.db", stem(database), time.format(TIME_FORMAT));
    let target = folder.join(&file);
    let started = std::time::Instant::now();
    let size = source
        .write(&target)
        .map_err(|e| BackupError::Failed(e.to_string()))?;
    log::info!(
        "Backed up {} to {} ({} MB, verified, in {:.1?})",
        database.display(),
        target.display(),
        size / 1_000_000,
        started.elapsed()
    );
    rotate(folder, database, config);
    Ok(BackupEntry {
        file,
        size,
        time: parse_time(&target, database).map_or(time, |(t, _)| t),
        verdict: "verified",
        kind: "scheduled",
    })
}

/// How backup names carry their time.
use aw_datastore::FILE_TIME_FORMAT as TIME_FORMAT;

fn stem(database: &Path) -> String {
    database
        .file_stem()
        .map_or("database".into(), |s| s.to_string_lossy().into_owned())
}

/// The time and kind of a backup file of `database`, from its name: `<stem>-<time>.db`
/// (scheduled) or `<stem>-before-schema-v<N>-<time>.db` (before a migration).
fn parse_time(path: &Path, database: &Path) -> Option<(DateTime<Utc>, &'static str)> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix(&format!("{}-", stem(database)))?;
    let rest = rest.strip_suffix(".db")?;
    let (kind, text) = match rest.strip_prefix(aw_datastore::BEFORE_MIGRATION) {
        Some(tail) => ("before-migration", tail.split_once('-')?.1),
        None => ("scheduled", rest),
    };
    let time = NaiveDateTime::parse_from_str(text, TIME_FORMAT).ok()?;
    Some((time.and_utc(), kind))
}

/// The backups of `database` in `folder`, newest first.
pub(crate) fn list(folder: &Path, database: &Path) -> Vec<BackupEntry> {
    let mut found: Vec<BackupEntry> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let (time, kind) = parse_time(&path, database)?;
            let meta = entry.metadata().ok().filter(|m| m.is_file())?;
            Some(BackupEntry {
                file: entry.file_name().to_string_lossy().into_owned(),
                size: meta.len(),
                time,
                verdict: "verified",
                kind,
            })
        })
        .collect();
    found.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| b.file.cmp(&a.file)));
    found
}

/// The scheduled backups rotation removes: all but the newest of each of the last
/// `keep_daily` days and `keep_weekly` ISO weeks, never the newest.
fn rotation(backups: &[BackupEntry], keep_daily: usize, keep_weekly: usize) -> Vec<String> {
    let scheduled: Vec<&BackupEntry> = backups.iter().filter(|b| b.kind == "scheduled").collect();
    let mut keep = vec![false; scheduled.len()];
    if let Some(first) = keep.first_mut() {
        *first = true;
    }
    let mut days = Vec::new();
    let mut weeks = Vec::new();
    for (i, b) in scheduled.iter().enumerate() {
        let day = b.time.date_naive();
        if !days.contains(&day) && days.len() < keep_daily {
            days.push(day);
            keep[i] = true;
        }
        let week = (b.time.iso_week().year(), b.time.iso_week().week());
        if !weeks.contains(&week) && weeks.len() < keep_weekly {
            weeks.push(week);
            keep[i] = true;
        }
    }
    scheduled
        .iter()
        .zip(keep)
        .filter(|(_, kept)| !kept)
        .map(|(b, _)| b.file.clone())
        .collect()
}

fn rotate(folder: &Path, database: &Path, config: &BackupConfig) {
    for file in rotation(
        &list(folder, database),
        config.keep_daily,
        config.keep_weekly,
    ) {
        let path = folder.join(&file);
        match std::fs::remove_file(&path) {
            Ok(()) => log::info!("Removed the old backup {}", path.display()),
            Err(e) => log::warn!("Cannot remove the old backup {}: {e}", path.display()),
        }
    }
}

/// Refuses a backup that would leave less than `floor_mb` free on `folder`'s disk.
fn check_space(folder: &Path, database: &Path, floor_mb: u64) -> Result<(), BackupError> {
    let Some(available) = free_bytes(folder) else {
        return Ok(());
    };
    let mb = |bytes: u64| bytes / (1 << 20);
    let needed: u64 = [
        database.to_path_buf(),
        aw_datastore::with_suffix(database, "-wal"),
    ]
    .iter()
    .filter_map(|p| std::fs::metadata(p).ok())
    .map(|m| m.len())
    .sum();
    if available < needed.saturating_add(floor_mb << 20) {
        return Err(BackupError::NoSpace {
            folder: folder.display().to_string(),
            available_mb: mb(available),
            needed_mb: mb(needed),
            floor_mb,
        });
    }
    Ok(())
}

/// Bytes an unprivileged user may still write on `path`'s file system.
fn free_bytes(path: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c_path` is a valid C string and `stat` a valid, writable statvfs.
        let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
        (rc == 0).then(|| (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn entry(time: &str) -> BackupEntry {
        let time = NaiveDateTime::parse_from_str(time, "%Y-%m-%d %H:%M")
            .unwrap()
            .and_utc();
        BackupEntry {
            file: format!("sqlite-{}.db", time.format(TIME_FORMAT)),
            size: 1,
            time,
            verdict: "verified",
            kind: "scheduled",
        }
    }

    #[test]
    fn rotation_keeps_the_newest_of_each_recent_day_and_week() {
        // Newest first: two on Nov 26, one a day back to Nov 10 (a Tuesday), one on Oct 1.
        let mut backups = vec![entry("2026-11-26 18:00"), entry("2026-11-26 09:00")];
        for day in (10..=25).rev() {
            backups.push(entry(&format!("2026-11-{day:02} 09:00")));
        }
        backups.push(entry("2026-10-01 09:00"));
        let removed = rotation(&backups, 7, 4);
        let kept: Vec<String> = backups
            .iter()
            .filter(|b| !removed.contains(&b.file))
            .map(|b| b.time.format("%m-%d %H").to_string())
            .collect();
        // 7 days (26 … 20), then the newest of the 4 most recent weeks with backups:
        // Nov 23-29 and 16-22 (kept already), Nov 9-15 (the 15th) and Sep 28-Oct 4.
        assert_eq!(
            kept,
            [
                "11-26 18", "11-25 09", "11-24 09", "11-23 09", "11-22 09", "11-21 09", "11-20 09",
                "11-15 09", "10-01 09"
            ]
        );
        assert_eq!(rotation(&backups[..1], 0, 1), Vec::<String>::new());
        // Before-migration backups are never rotated.
        let mut special = entry("2020-01-01 00:00");
        special.kind = "before-migration";
        assert!(rotation(&[entry("2026-11-26 18:00"), special], 1, 0).is_empty());
    }

    #[test]
    fn names_carry_time_and_kind() {
        let db = Path::new("/data/sqlite.db");
        assert_eq!(
            parse_time(Path::new("/b/sqlite-2026-11-26T10-58-30Z.db"), db),
            Some((
                Utc.with_ymd_and_hms(2026, 11, 26, 10, 58, 30).unwrap(),
                "scheduled"
            ))
        );
        assert_eq!(
            parse_time(
                Path::new("/b/sqlite-before-schema-v4-2026-11-26T10-58-30Z.db"),
                db
            )
            .map(|(_, k)| k),
            Some("before-migration")
        );
        assert_eq!(
            parse_time(Path::new("/b/.sqlite-2026-11-26T10-58-30Z.db.partial"), db),
            None
        );
        assert_eq!(
            parse_time(Path::new("/b/other-2026-11-26T10-58-30Z.db"), db),
            None
        );
    }

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
            let config = crate::config::Config::parse(bad, false).unwrap();
            assert!(check_config(&config.backup).is_err(), "{bad}");
        }
    }
}
