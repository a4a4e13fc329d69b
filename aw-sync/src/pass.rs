//! One sync pass: pull every other device's file into the server, then push the server's
//! own buckets into this device's file.
//!
//! A pass never stops at the first failure: a peer file that cannot be read, or a bucket
//! that fails, is logged, recorded in the [`PassReport`] and skipped; the next pass tries
//! again (the reference panicked and its daemon died, COMPATIBILITY.md, sync #6).

use std::collections::HashMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aw_models::Bucket;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

mod destination;
mod pull;
mod pull_days;
mod push;

use crate::error::{Result, SyncError};
use crate::folder::{Device, SyncFolder};
use crate::server::Server;

/// Bucket data key: the hostname of the device the data was recorded on (the reference's).
pub(crate) const ORIGIN_KEY: &str = "$aw.sync.origin";
/// Bucket data key of pulled buckets: the device id they come from (ours).
pub(crate) const DEVICE_KEY: &str = "$aw.sync.device";
/// Bucket data key of pulled buckets: the bucket id on that device (ours).
pub(crate) const SOURCE_KEY: &str = "$aw.sync.source";
/// What pulled buckets' ids have between the source id and the origin host.
pub(crate) const SYNCED_FROM: &str = "-synced-from-";

/// Which directions a pass syncs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Only write this device's file.
    Push,
    /// Only import the other devices' files.
    Pull,
    /// Both: pull, then push.
    Both,
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(text: &str) -> Result<Mode, String> {
        match text {
            "push" => Ok(Mode::Push),
            "pull" => Ok(Mode::Pull),
            "both" => Ok(Mode::Both),
            other => Err(format!("mode '{other}' is none of push, pull, both")),
        }
    }
}

/// What a pass does and where.
#[derive(Clone, Debug)]
pub struct SyncOptions {
    /// The shared folder.
    pub folder: SyncFolder,
    /// A private folder (not synced) for the working copy and the resume points.
    pub work_dir: PathBuf,
    /// Directions.
    pub mode: Mode,
    /// Only these bucket ids (by source id); `None` = all.
    pub buckets: Option<Vec<String>>,
    /// Where a first sync of a bucket starts; `None` = its first event.
    pub start_date: Option<DateTime<Utc>>,
    /// Only pull peer files under this path (`--sync-db`).
    pub peers_under: Option<PathBuf>,
    /// Only pull data recorded on these hosts (`sync --host`).
    pub hosts: Option<Vec<String>>,
    /// How long one pass may read one peer file (`crate::peer::ReadGuard`).
    pub peer_time_limit: Duration,
}

impl SyncOptions {
    /// Default options for `folder`: both directions, every bucket, all history.
    pub fn new(folder: SyncFolder, work_dir: PathBuf) -> SyncOptions {
        SyncOptions {
            folder,
            work_dir,
            mode: Mode::Both,
            buckets: None,
            start_date: None,
            peers_under: None,
            hosts: None,
            peer_time_limit: crate::peer::DEFAULT_TIME_LIMIT,
        }
    }

    fn wants_bucket(&self, id: &str) -> bool {
        self.buckets
            .as_ref()
            .is_none_or(|list| list.iter().any(|b| b == id))
    }
}

/// Splits a comma-separated list: trimmed, empty parts dropped; `*` or nothing = `None`.
pub fn parse_list(text: &str) -> Option<Vec<String>> {
    let items: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if items.is_empty() || items.iter().any(|s| s == "*") {
        None
    } else {
        Some(items)
    }
}

/// What one pass did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PassReport {
    /// When it started.
    pub started: Option<DateTime<Utc>>,
    /// When it ended.
    pub finished: Option<DateTime<Utc>>,
    /// Events written into this device's file (new or extended).
    pub pushed_events: u64,
    /// Whether this device's file was published anew.
    pub published: bool,
    /// Days of this device's file made equal to the server's (a server that tells its day
    /// digests: `push.rs`).
    pub pushed_days: u64,
    /// Events read from the server for them.
    pub pushed_days_events: u64,
    /// Events written into the server from other devices (new or extended).
    pub pulled_events: u64,
    /// Each other device's file.
    pub peers: Vec<PeerReport>,
    /// What failed (the rest of the pass went on).
    pub errors: Vec<String>,
}

/// One other device's file in a pass.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PeerReport {
    /// The device id (its folder name).
    pub device_id: String,
    /// The file.
    pub path: PathBuf,
    /// The hosts its data was recorded on: at most `MAX_HOSTNAMES`, each cut to
    /// `MAX_HOSTNAME_BYTES` (a peer names what it likes; the report must stay small).
    pub hostnames: Vec<String>,
    /// Its buckets pulled (imports of imports are not).
    pub buckets: usize,
    /// Events written into the server from it.
    pub pulled_events: u64,
    /// What it changed there that was applied here by days (`pull_days.rs`).
    pub days: DayChanges,
    /// Its file has a day table (`day_table.rs`): the device runs ours, and follows this
    /// device's deletions and edits as this one follows its.
    pub follows_changes: bool,
    /// Why it, or one of its buckets, was skipped.
    pub error: Option<String>,
    /// Its events (or buckets) that were skipped because they cannot be synced.
    pub skipped_events: u64,
    /// Why, for the first [`MAX_PROBLEMS`] of them.
    pub problems: Vec<String>,
}

/// What a pass applied of a peer's changes to its own history (`pull_days.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DayChanges {
    /// Days of its buckets applied again because they changed there.
    pub replaced_days: u64,
    /// Events of its copies here replaced by their edited version.
    pub replaced_events: u64,
    /// Events of its copies here deleted because they were deleted there (or moved).
    pub deleted_events: u64,
    /// Copies here deleted because their bucket is gone there (deleted, renamed, merged).
    pub deleted_buckets: u64,
    /// Events left out because they were deleted from the copy here.
    pub kept_deleted: u64,
    /// Events whose text left the copies here (deleted, or their data changed there):
    /// the pass then scrubbed the database's WAL and journal, as a privacy run does.
    pub removed_text: u64,
    /// Days not applied: larger than a pass applies, or not agreeing with their digest.
    pub refused_days: u64,
    /// Days left for the next pass (the bound of days per pass was reached).
    pub days_left: u64,
    /// Events read from its file for the days applied.
    pub events_read: u64,
}

/// Problems listed per peer and pass; the rest are counted.
pub const MAX_PROBLEMS: usize = 20;

/// Host names listed per peer and pass.
pub(crate) const MAX_HOSTNAMES: usize = 16;

/// The longest host name a report keeps (a DNS name has at most 253 characters); longer
/// ones are cut, at a character boundary.
pub(crate) const MAX_HOSTNAME_BYTES: usize = 255;

/// `host` cut to [`MAX_HOSTNAME_BYTES`] at a character boundary: what a pass reports and
/// names buckets after, whatever length a peer's file gives.
pub(crate) fn bounded_host(host: &str) -> &str {
    let mut end = host.len().min(MAX_HOSTNAME_BYTES);
    while !host.is_char_boundary(end) {
        end -= 1;
    }
    &host[..end]
}

impl PeerReport {
    /// Notes that the peer's data names `host` (cut by `bounded_host` already).
    pub fn saw_host(&mut self, host: &str) {
        if self.hostnames.len() < MAX_HOSTNAMES && !self.hostnames.iter().any(|h| h == host) {
            self.hostnames.push(host.to_string());
        }
    }

    /// Counts a skipped event or bucket, and keeps its reason while the list is short.
    pub fn skipped(&mut self, problem: String) {
        self.skipped_events += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem);
        }
    }
}

/// Runs passes; remembers which peer files were checked page by page already, so an
/// unchanged file is not read whole again.
pub struct Syncer {
    options: SyncOptions,
    me: Device,
    checked: HashMap<PathBuf, Checked>,
    stop: Arc<AtomicBool>,
    /// Bucket rows of other devices' files the running pass has read (see
    /// [`Syncer::with_rows_read`]).
    rows_read: Arc<AtomicU64>,
    /// Days of the peer being pulled applied in this pass (`pull_days.rs`).
    days_applied: std::cell::Cell<usize>,
}

/// A peer file as last checked page by page: its size, time of change, and the events it
/// has that can never be read (times or id not integers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Checked {
    size: u64,
    modified: Option<SystemTime>,
    unreadable_events: u64,
}

/// Whether a bucket holds data pulled from another device (never pushed, never pulled
/// again: each device's data travels only from its own file, COMPATIBILITY.md, sync #2).
pub fn is_import(bucket: &Bucket) -> bool {
    bucket.id.contains(SYNCED_FROM) || bucket.data.contains_key(DEVICE_KEY)
}

fn text_of<'a>(bucket: &'a Bucket, key: &str) -> Option<&'a str> {
    bucket.data.get(key).and_then(Value::as_str)
}

impl Syncer {
    /// A syncer for this device.
    pub fn new(options: SyncOptions, me: Device) -> Syncer {
        Syncer {
            options,
            me,
            checked: HashMap::new(),
            stop: Arc::new(AtomicBool::new(false)),
            rows_read: Arc::new(AtomicU64::new(0)),
            days_applied: std::cell::Cell::new(0),
        }
    }

    /// Passes end early, between pages, once `stop` is set (with [`SyncError::Stopped`]);
    /// everything written before stays consistent and the next pass resumes from it.
    pub fn with_stop_flag(mut self, stop: Arc<AtomicBool>) -> Syncer {
        self.stop = stop;
        self
    }

    /// Counts in `rows_read` the bucket rows of other devices' files each pass reads, from
    /// 0 as the pass starts: a pass through a folder of many rows (millions, all skipped)
    /// shows that it moves.
    pub fn with_rows_read(mut self, rows_read: Arc<AtomicU64>) -> Syncer {
        self.rows_read = rows_read;
        self
    }

    fn check_stop(&self) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            Err(SyncError::Stopped)
        } else {
            Ok(())
        }
    }

    /// Runs one pass against `server`. Errors of single peers and buckets are in the
    /// report; an `Err` means nothing could be done (the server's buckets unreadable).
    pub fn pass(&mut self, server: &dyn Server) -> Result<PassReport> {
        self.rows_read.store(0, Ordering::Relaxed);
        let mut report = PassReport {
            started: Some(Utc::now()),
            ..PassReport::default()
        };
        let mut buckets = server.buckets()?;
        if self.options.mode != Mode::Push {
            self.pull(server, &mut buckets, &mut report)?;
        }
        self.check_stop()?;
        if self.options.mode != Mode::Pull {
            match self.push(server, &buckets, &mut report) {
                Ok(published) => report.published = published,
                Err(SyncError::Stopped) => return Err(SyncError::Stopped),
                Err(e) => {
                    log::warn!("Push failed: {e}");
                    report.errors.push(format!("push: {e}"));
                }
            }
        }
        report.finished = Some(Utc::now());
        Ok(report)
    }
}
