//! The sync built into the server: with a `[sync]` folder in config.toml, a background
//! thread runs `aw_sync` passes against the server's own datastore every `interval`
//! seconds — no second program, no HTTP hop. It runs at the CPU pool's low priority (its
//! datastore requests queue like any other, so watchers' heartbeats stay quick), and
//! `GET /api/0/sync` shows what it did.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use aw_datastore::Datastore;
use aw_sync::{
    CachedDatastore, DayChanges, DayDigestCache, Device, Mode, PassReport, SyncError, SyncFolder,
    SyncOptions, Syncer,
};
use chrono::{DateTime, TimeZone, Utc};
use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;

use crate::background::Background;
use crate::config::SyncConfig;

/// What `GET /api/0/sync` shows.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct SyncStatus {
    /// Whether `[sync]` names a folder.
    pub enabled: bool,
    /// The shared folder.
    pub folder: Option<PathBuf>,
    /// This device's id: the name of its folder in the shared folder.
    pub device_id: String,
    /// `both`, `push` or `pull`.
    pub mode: Option<Mode>,
    /// Seconds between passes.
    pub interval: Option<u64>,
    /// Whether a pass is running now.
    pub running: bool,
    /// Passes finished since the server started.
    pub passes: u64,
    /// Bucket rows of other devices' files the running pass has read (the last pass's, once
    /// it ended): a pass through a folder of many buckets shows that it moves.
    pub bucket_rows_read: u64,
    /// When this device's data was last written to the folder (a pass that pushed).
    pub last_push: Option<DateTime<Utc>>,
    /// When other devices' data was last imported (a pass that pulled).
    pub last_pull: Option<DateTime<Utc>>,
    /// Every other device seen in the folder, by device id.
    pub devices: Vec<DeviceStatus>,
    /// The last pass, with its errors.
    pub last_pass: Option<PassReport>,
    /// Why the last pass could not run at all, if it could not.
    pub last_error: Option<String>,
}

/// Another device, as the passes saw it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DeviceStatus {
    /// Its device id.
    pub device_id: String,
    /// The hosts its data was recorded on, as the last pass read them (bounded: see
    /// the limit in aw-sync's `pass.rs`).
    pub hostnames: Vec<String>,
    /// When a pass last read its file.
    pub last_seen: Option<DateTime<Utc>>,
    /// Events imported from it since the server started.
    pub pulled_events: u64,
    /// Why its file, or one of its buckets, was skipped in the last pass.
    pub error: Option<String>,
    /// Its events or buckets skipped since the server started, because they cannot be
    /// synced (each counted in the pass that first read it).
    pub skipped_events: u64,
    /// Why, for the most recent of them.
    pub problems: Vec<String>,
    /// What the last pass that read its file applied of its deletions, edits, renames
    /// and merges (days applied again, events replaced and deleted, days refused).
    pub last_changes: DayChanges,
    /// Whether it runs ours (its file has day digests): it follows this device's
    /// deletions and edits; a device running the reference's aw-sync keeps its copies.
    pub follows_changes: bool,
}

/// The background sync: its settings, status and thread.
pub(crate) struct BackgroundSync {
    options: Option<(SyncOptions, Duration)>,
    status: Mutex<SyncStatus>,
    stop: Arc<AtomicBool>,
    /// Counted by the passes (`bucket_rows_read` in the status).
    rows_read: Arc<AtomicU64>,
    /// The server's day digests, kept between passes by hearing every write.
    digests: Arc<DayDigestCache>,
    /// Set once `digests` listens to the datastore's writes (from its first use on).
    listening: std::sync::OnceLock<()>,
    wake: Sender<()>,
    woken: Receiver<()>,
    thread: Background,
}

impl BackgroundSync {
    /// Checks the `[sync]` settings (an error is a message for the user: startup aborts).
    /// `work_dir` holds the working copy of this device's file and the resume points.
    pub(crate) fn configure(
        config: &SyncConfig,
        device_id: &str,
        work_dir: PathBuf,
    ) -> Result<BackgroundSync, String> {
        let mut status = SyncStatus {
            device_id: device_id.to_string(),
            ..SyncStatus::default()
        };
        let options = match &config.folder {
            None => None,
            Some(folder) => {
                // Checked at load (`Config::check`): absolute, interval at least 1.
                let folder = aw_platform::dirs::expand_home(folder);
                let mut options = SyncOptions::new(SyncFolder::new(&folder), work_dir);
                options.mode = config.mode;
                options.buckets = (!config.buckets.is_empty()).then(|| config.buckets.clone());
                options.start_date = config
                    .start_date
                    .and_then(|date| date.and_hms_opt(0, 0, 0))
                    .map(|t| Utc.from_utc_datetime(&t));
                status.enabled = true;
                status.folder = Some(folder);
                status.mode = Some(options.mode);
                status.interval = Some(config.interval);
                Some((options, Duration::from_secs(config.interval)))
            }
        };
        let (wake, woken) = crossbeam_channel::bounded(1);
        Ok(BackgroundSync {
            options,
            status: Mutex::new(status),
            stop: Arc::new(AtomicBool::new(false)),
            rows_read: Arc::new(AtomicU64::new(0)),
            digests: Arc::new(DayDigestCache::default()),
            listening: std::sync::OnceLock::new(),
            wake,
            woken,
            thread: Background::default(),
        })
    }

    /// A copy of the status.
    pub(crate) fn status(&self) -> SyncStatus {
        SyncStatus {
            bucket_rows_read: self.rows_read.load(Ordering::Relaxed),
            ..self
                .status
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        }
    }

    /// Starts the thread (when enabled): a pass at once, then one every interval.
    pub(crate) fn start(self: &Arc<Self>, datastore: Datastore, hostname: String) {
        let Some((options, _)) = &self.options else {
            return;
        };
        let me = Device {
            device_id: self.status().device_id,
            hostname,
        };
        log::info!(
            "Syncing with the devices in {} ({:?})",
            options.folder.root().display(),
            options.mode
        );
        let syncer = Syncer::new(options.clone(), me)
            .with_stop_flag(self.stop.clone())
            .with_rows_read(self.rows_read.clone());
        let this = Arc::clone(self);
        self.thread
            .start("aw-sync", move || this.run(syncer, &datastore));
    }

    fn run(&self, mut syncer: Syncer, datastore: &Datastore) {
        let interval = self.options.as_ref().map_or(Duration::MAX, |(_, i)| *i);
        let mut salvage_seen = None;
        while !self.stop.load(Ordering::Relaxed) {
            // A salvage (at start or while serving) lost writes the pulls had made: they
            // start again from each bucket's newest event (see aw-sync's `cursors.rs`), and
            // every day is applied again (`aw_sync::forget_applied_days`).
            let salvage = datastore.salvage_report();
            if salvage.is_some() && salvage != salvage_seen {
                let forgotten = syncer
                    .forget_pulls()
                    .and_then(|()| aw_sync::forget_applied_days(datastore).map(|_| ()));
                match forgotten {
                    Ok(()) => {
                        log::info!("The database was salvaged: the next pull checks every device's data again from each bucket's newest event");
                        salvage_seen = salvage;
                    }
                    // Tried again before the next pass.
                    Err(e) => {
                        log::warn!("Cannot forget where the pulls stopped after a salvage: {e}")
                    }
                }
            }
            self.update(|s| s.running = true);
            let server = CachedDatastore {
                store: datastore,
                digests: self.digest_cache(datastore),
            };
            let result = syncer.pass(&server);
            self.update(|s| {
                s.running = false;
                record(s, result);
            });
            // Woken early only to stop.
            let _ = self.woken.recv_timeout(interval);
        }
    }

    fn update(&self, change: impl FnOnce(&mut SyncStatus)) {
        change(&mut self.status.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The server's day digests (for the passes, and for the `aw-sync` program's
    /// `GET /api/0/buckets/<id>/days`), listening to the datastore's writes from the first
    /// call on: until then no write pays for them, and a bucket not asked for yet is read
    /// whole at its first call, so nothing written before is missed.
    pub(crate) fn digest_cache(&self, datastore: &Datastore) -> &DayDigestCache {
        // A second caller waits until the listener is in.
        self.listening
            .get_or_init(|| datastore.add_write_listener(self.digests.clone()));
        &self.digests
    }

    /// Stops the thread between pages of the pass in progress and waits for it: its files
    /// are closed before the datastore is.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.wake.try_send(());
        self.thread.join();
    }
}

/// The private folder of the built-in sync (this device's working copy, the resume
/// points): beside the database.
pub(crate) fn work_dir(db_path: &std::path::Path) -> PathBuf {
    db_path
        .parent()
        .map_or_else(|| PathBuf::from("aw-sync"), |dir| dir.join("aw-sync"))
}

/// Folds a pass's outcome into the status.
fn record(status: &mut SyncStatus, result: Result<PassReport, SyncError>) {
    let report = match result {
        Ok(report) => report,
        Err(SyncError::Stopped) => {
            log::info!("Sync pass interrupted: the server is stopping");
            return;
        }
        Err(e) => {
            log::warn!("Sync pass failed: {e}");
            status.last_error = Some(e.to_string());
            return;
        }
    };
    status.passes += 1;
    status.last_error = None;
    if report.published || report.pushed_events > 0 {
        status.last_push = report.finished;
    }
    if report.pulled_events > 0 {
        status.last_pull = report.finished;
    }
    let mut devices: BTreeMap<String, DeviceStatus> = status
        .devices
        .drain(..)
        .map(|d| (d.device_id.clone(), d))
        .collect();
    for peer in &report.peers {
        let device = devices
            .entry(peer.device_id.clone())
            .or_insert_with(|| DeviceStatus {
                device_id: peer.device_id.clone(),
                hostnames: Vec::new(),
                last_seen: None,
                pulled_events: 0,
                error: None,
                skipped_events: 0,
                problems: Vec::new(),
                last_changes: DayChanges::default(),
                follows_changes: false,
            });
        device.last_changes = peer.days;
        device.follows_changes = peer.follows_changes;
        // The last pass's (bounded by the report): a host the peer no longer names goes.
        device.hostnames.clone_from(&peer.hostnames);
        device.last_seen = report.finished;
        device.pulled_events += peer.pulled_events;
        device.error = peer.error.clone();
        device.skipped_events += peer.skipped_events;
        device.problems.extend(peer.problems.iter().cloned());
        let excess = device.problems.len().saturating_sub(aw_sync::MAX_PROBLEMS);
        device.problems.drain(..excess);
    }
    status.devices = devices.into_values().collect();
    if report.pulled_events > 0 || report.pushed_events > 0 || !report.errors.is_empty() {
        log::info!(
            "Sync: pulled {} events, pushed {}{}",
            report.pulled_events,
            report.pushed_events,
            if report.errors.is_empty() {
                String::new()
            } else {
                format!("; failed: {}", report.errors.join("; "))
            }
        );
    }
    status.last_pass = Some(report);
}
