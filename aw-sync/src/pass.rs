//! One sync pass: pull every other device's file into the server, then push the server's
//! own buckets into this device's file.
//!
//! A pass never stops at the first failure: a peer file that cannot be read, or a bucket
//! that fails, is logged, recorded in the [`PassReport`] and skipped; the next pass tries
//! again (the reference panicked and its daemon died, SYNC.md §6 #6).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use aw_models::{timestamp, Bucket};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::cursors::Cursors;
use crate::error::{Result, SyncError};
use crate::folder::{PeerPath, SyncFolder};
use crate::outbox::Outbox;
use crate::peer::{PageCursor, PeerFile};
use crate::server::Server;
use crate::transfer::{self, extent, PAGE_SIZE};

/// Bucket data key: the hostname of the device the data was recorded on (the reference's).
pub const ORIGIN_KEY: &str = "$aw.sync.origin";
/// Bucket data key of pulled buckets: the device id they come from (ours).
pub const DEVICE_KEY: &str = "$aw.sync.device";
/// Bucket data key of pulled buckets: the bucket id on that device (ours).
pub const SOURCE_KEY: &str = "$aw.sync.source";
/// Key (in this device's file) of a bucket's push resume point, followed by its id.
const PUSHED_KEY: &str = "aw-sync.pushed.";
/// What pulled buckets' ids have between the source id and the origin host.
pub const SYNCED_FROM: &str = "-synced-from-";

/// Which directions a pass syncs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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

/// This device, as the sync folder knows it.
#[derive(Clone, Debug, Serialize)]
pub struct Device {
    /// The server's device id: the name of this device's folder.
    pub device_id: String,
    /// The hostname written into pushed buckets' data as [`ORIGIN_KEY`].
    pub hostname: String,
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
    /// Events written into the server from other devices (new or extended).
    pub pulled_events: u64,
    /// Each other device's file.
    pub peers: Vec<PeerReport>,
    /// What failed (the rest of the pass went on).
    pub errors: Vec<String>,
}

/// One other device's file in a pass.
#[derive(Clone, Debug, Serialize)]
pub struct PeerReport {
    /// The device id (its folder name).
    pub device_id: String,
    /// The file.
    pub path: PathBuf,
    /// The hosts its data was recorded on.
    pub hostnames: Vec<String>,
    /// Its buckets pulled (imports of imports are not).
    pub buckets: usize,
    /// Events written into the server from it.
    pub pulled_events: u64,
    /// Why it, or one of its buckets, was skipped.
    pub error: Option<String>,
}

/// Runs passes; remembers which peer files were checked page by page already, so an
/// unchanged file is not read whole again.
pub struct Syncer {
    options: SyncOptions,
    me: Device,
    checked: HashMap<PathBuf, (u64, Option<SystemTime>)>,
    stop: Arc<AtomicBool>,
}

/// Each device's files, most recently written first (the device layout first on a tie).
/// A device's data is pulled from one of them: a device can have one in each layout (this
/// crate publishes both; the reference's daemon and its `sync` write one each, and its
/// `sync` plants empty placeholders), and pulling the same events from two files would
/// compare each with the server's copy, which a privacy filter may have changed. An empty
/// or unreadable file gives way to the next.
fn files_by_device(peers: Vec<PeerPath>) -> Vec<Vec<PeerPath>> {
    let modified = |p: &PeerPath| std::fs::metadata(&p.path).and_then(|m| m.modified()).ok();
    let mut by_device: BTreeMap<String, Vec<PeerPath>> = BTreeMap::new();
    for peer in peers {
        by_device
            .entry(peer.device_id.clone())
            .or_default()
            .push(peer);
    }
    by_device
        .into_values()
        .map(|mut files| {
            files.sort_by_cached_key(|p| {
                (
                    std::cmp::Reverse(modified(p)),
                    p.host_folder.is_some(),
                    p.path.clone(),
                )
            });
            files
        })
        .collect()
}

/// Extends the destination's copy of the last event pulled if the peer has extended it
/// since (it is the peer's newest, still growing). The copy is found by its start and old
/// end and keeps its own data (which the server may have redacted); a copy the server
/// dropped or a user deleted is not brought back. Returns the event's new end and whether
/// the copy was extended, if it grew.
fn extend_grown(
    server: &dyn Server,
    dest: &str,
    file: &PeerFile,
    row: i64,
    at: &PageCursor,
) -> Result<Option<(i64, bool)>> {
    let Some((start, end)) = file.extent_of(row, at.id)? else {
        return Ok(None);
    };
    if start != at.start || end <= at.end {
        return Ok(None);
    }
    let window = (
        timestamp::from_ns(at.start.saturating_sub(1)),
        timestamp::from_ns(at.end),
    );
    let copy = server
        .events(dest, Some(window.0), Some(window.1), None)?
        .into_iter()
        .find(|e| extent(e) == (at.start, at.end) && e.id.is_some());
    let Some(mut copy) = copy else {
        return Ok(Some((end, false)));
    };
    copy.duration = chrono::Duration::nanoseconds(end.saturating_sub(start));
    server.insert(dest, vec![copy])?;
    Ok(Some((end, true)))
}

/// Whether a bucket holds data pulled from another device (never pushed, never pulled
/// again: each device's data travels only from its own file, SYNC.md §6 #2).
pub fn is_import(bucket: &Bucket) -> bool {
    bucket.id.contains(SYNCED_FROM) || bucket.data.contains_key(DEVICE_KEY)
}

fn text_of<'a>(bucket: &'a Bucket, key: &str) -> Option<&'a str> {
    bucket.data.get(key).and_then(Value::as_str)
}

/// The host a peer bucket's data was recorded on: its origin, else its hostname; never
/// `unknown` (the device id stands in, as the reference's push does).
fn origin_host(bucket: &Bucket, device_id: &str) -> String {
    let host = text_of(bucket, ORIGIN_KEY).unwrap_or(&bucket.hostname);
    if host.is_empty() || host == "unknown" {
        device_id.to_string()
    } else {
        host.to_string()
    }
}

impl Syncer {
    /// A syncer for this device.
    pub fn new(options: SyncOptions, me: Device) -> Syncer {
        Syncer {
            options,
            me,
            checked: HashMap::new(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Passes end early, between pages, once `stop` is set (with [`SyncError::Stopped`]);
    /// everything written before stays consistent and the next pass resumes from it.
    pub fn with_stop_flag(mut self, stop: Arc<AtomicBool>) -> Syncer {
        self.stop = stop;
        self
    }

    fn check_stop(&self) -> Result<()> {
        if self.stop.load(Ordering::Relaxed) {
            Err(SyncError::Stopped)
        } else {
            Ok(())
        }
    }

    /// This device.
    pub fn device(&self) -> &Device {
        &self.me
    }

    /// The options passes run with.
    pub fn options(&self) -> &SyncOptions {
        &self.options
    }

    /// The resume points' file.
    fn cursors_path(&self) -> PathBuf {
        self.options
            .work_dir
            .join(format!("{}.pulled.json", self.me.device_id))
    }

    /// Runs one pass against `server`. Errors of single peers and buckets are in the
    /// report; an `Err` means nothing could be done (the server's buckets unreadable).
    pub fn pass(&mut self, server: &dyn Server) -> Result<PassReport> {
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

    fn pull(
        &mut self,
        server: &dyn Server,
        buckets: &mut HashMap<String, Bucket>,
        report: &mut PassReport,
    ) -> Result<()> {
        let mut cursors = Cursors::load(&self.cursors_path());
        let mut peers = self.options.folder.peers(&self.me.device_id)?;
        if let Some(under) = &self.options.peers_under {
            peers.retain(|p| p.path.starts_with(under));
        }
        for candidates in files_by_device(peers) {
            self.check_stop()?;
            let mut peer_report = None;
            for (i, peer) in candidates.iter().enumerate() {
                let last = i + 1 == candidates.len();
                let mut this = PeerReport {
                    device_id: peer.device_id.clone(),
                    path: peer.path.clone(),
                    hostnames: Vec::new(),
                    buckets: 0,
                    pulled_events: 0,
                    error: None,
                };
                match self.pull_peer(server, peer, buckets, &mut cursors, &mut this, !last) {
                    Ok(true) => {}
                    // A placeholder without buckets: the device's other file has its data.
                    Ok(false) => continue,
                    Err(SyncError::Stopped) => return Err(SyncError::Stopped),
                    Err(e) if !last => {
                        log::warn!(
                            "Skipping {}, trying an older file of the device: {e}",
                            peer.path.display()
                        );
                        continue;
                    }
                    Err(e) => {
                        log::warn!("Skipping {}: {e}", peer.path.display());
                        this.error = Some(e.to_string());
                    }
                }
                peer_report = Some(this);
                break;
            }
            let Some(peer_report) = peer_report else {
                continue;
            };
            if let Some(e) = &peer_report.error {
                report.errors.push(e.clone());
            }
            report.pulled_events += peer_report.pulled_events;
            report.peers.push(peer_report);
        }
        Ok(())
    }

    fn pull_peer(
        &mut self,
        server: &dyn Server,
        peer: &PeerPath,
        buckets: &mut HashMap<String, Bucket>,
        cursors: &mut Cursors,
        report: &mut PeerReport,
        skip_if_empty: bool,
    ) -> Result<bool> {
        let meta = std::fs::metadata(&peer.path)
            .map_err(SyncError::io("cannot read", peer.path.clone()))?;
        let stamp = (meta.len(), meta.modified().ok());
        let check = self.checked.get(&peer.path) != Some(&stamp);
        let file = PeerFile::open(&peer.path, check)?;
        self.checked.insert(peer.path.clone(), stamp);
        let sources = file.buckets()?;
        if skip_if_empty && sources.is_empty() {
            return Ok(false);
        }
        for source in sources {
            if source.bucket.id.contains(SYNCED_FROM)
                || !self.options.wants_bucket(&source.bucket.id)
            {
                continue;
            }
            let host = origin_host(&source.bucket, &peer.device_id);
            if let Some(hosts) = &self.options.hosts {
                if !hosts.contains(&host)
                    && peer.host_folder.as_ref().is_none_or(|h| !hosts.contains(h))
                {
                    continue;
                }
            }
            if !report.hostnames.contains(&host) {
                report.hostnames.push(host.clone());
            }
            report.buckets += 1;
            match self.pull_bucket(
                server,
                &file,
                source.row,
                &source.bucket,
                &host,
                peer,
                buckets,
                cursors,
            ) {
                Ok(n) => report.pulled_events += n,
                Err(SyncError::Stopped) => return Err(SyncError::Stopped),
                Err(e) => {
                    log::warn!(
                        "Could not pull '{}' from {}: {e}",
                        source.bucket.id,
                        peer.path.display()
                    );
                    report.error = Some(format!("bucket '{}': {e}", source.bucket.id));
                }
            }
        }
        Ok(true)
    }

    /// The server bucket a peer bucket is pulled into, created if missing. Found by origin
    /// device and source id first, so a renamed host never splits a bucket (SYNC.md §6
    /// #10); else by the reference's name `<base>-synced-from-<host>`, so buckets the
    /// reference aw-sync created go on being used.
    fn destination(
        &self,
        server: &dyn Server,
        source: &Bucket,
        host: &str,
        peer: &PeerPath,
        buckets: &mut HashMap<String, Bucket>,
    ) -> Result<String> {
        let mine = |b: &Bucket| {
            text_of(b, DEVICE_KEY) == Some(peer.device_id.as_str())
                && text_of(b, SOURCE_KEY) == Some(source.id.as_str())
        };
        if let Some(found) = buckets.values().find(|b| mine(b)) {
            return Ok(found.id.clone());
        }
        let base = source.id.split(SYNCED_FROM).next().unwrap_or(&source.id);
        let mut id = format!("{base}{SYNCED_FROM}{host}");
        if let Some(existing) = buckets.get(&id) {
            match text_of(existing, DEVICE_KEY) {
                // Another device with the same hostname: keep them apart.
                Some(other) if other != peer.device_id => id = format!("{id}-{}", peer.device_id),
                _ => return Ok(id),
            }
            if buckets.contains_key(&id) {
                return Ok(id);
            }
        }
        let mut bucket = source.clone();
        bucket.id = id.clone();
        bucket.bid = None;
        bucket.events = None;
        bucket
            .data
            .insert(ORIGIN_KEY.into(), Value::String(host.to_string()));
        bucket
            .data
            .insert(DEVICE_KEY.into(), Value::String(peer.device_id.clone()));
        bucket
            .data
            .insert(SOURCE_KEY.into(), Value::String(source.id.clone()));
        server.create_bucket(&bucket)?;
        log::info!("Created bucket '{id}' for data from {host}");
        buckets.insert(id.clone(), bucket);
        Ok(id)
    }

    #[allow(clippy::too_many_arguments)]
    fn pull_bucket(
        &self,
        server: &dyn Server,
        file: &PeerFile,
        row: i64,
        source: &Bucket,
        host: &str,
        peer: &PeerPath,
        buckets: &mut HashMap<String, Bucket>,
        cursors: &mut Cursors,
    ) -> Result<u64> {
        let dest = self.destination(server, source, host, peer, buckets)?;
        let newest = server
            .events(&dest, None, None, Some(1))?
            .first()
            .map(|e| extent(e).0);
        // Per file: a device's files in both layouts have rows of their own.
        let file_key = peer
            .path
            .strip_prefix(self.options.folder.root())
            .unwrap_or(&peer.path)
            .to_string_lossy()
            .into_owned();
        let saved = cursors.get(&file_key, &source.id);
        let mut written = 0u64;
        let mut cursor = match (saved, newest) {
            // The usual case: on from the last event pulled, after extending it if it grew.
            (Some(mut at), Some(newest)) if newest >= at.start => {
                if let Some((end, extended)) = extend_grown(server, &dest, file, row, &at)? {
                    written += u64::from(extended);
                    // Ties at this start with ends up to the new one are read again
                    // (and skipped by write_page): the position stays exact.
                    at.end = end;
                }
                at
            }
            // The server lost pulled events, or never had them: from its newest event on.
            (_, Some(newest)) => PageCursor::at(newest),
            (_, None) => PageCursor::at(
                self.options
                    .start_date
                    .map_or(i64::MIN, |t| timestamp::to_ns_saturating(&t)),
            ),
        };
        let mut flushed = 0;
        loop {
            self.check_stop()?;
            let page = file.events_after(row, &mut cursor, PAGE_SIZE)?;
            let len = page.len();
            written += transfer::write_page(server, &dest, page)? as u64;
            // Committed before the resume point moves past it.
            if written > flushed {
                server.flush()?;
                flushed = written;
            }
            cursors.set(&file_key, &source.id, cursor)?;
            if len < PAGE_SIZE {
                break;
            }
        }
        if written > 0 {
            log::info!(
                "Pulled {written} events of '{}' from {host} into '{dest}'",
                source.id
            );
        }
        Ok(written)
    }

    /// Writes the server's own buckets into this device's file and publishes it.
    fn push(
        &mut self,
        server: &dyn Server,
        buckets: &HashMap<String, Bucket>,
        report: &mut PassReport,
    ) -> Result<bool> {
        let outbox = Outbox::new(&self.options.folder, &self.me, &self.options.work_dir);
        let own = outbox.open()?;
        let own_buckets = Server::buckets(&own);
        let mut changed = false;
        let mut ids: Vec<&String> = buckets.keys().collect();
        ids.sort();
        match own_buckets {
            Ok(own_buckets) => {
                for id in ids {
                    if self.stop.load(Ordering::Relaxed) {
                        // Closed, not published: the working copy keeps what was written.
                        own.close().wait()?;
                        return Err(SyncError::Stopped);
                    }
                    let bucket = &buckets[id];
                    if is_import(bucket) || !self.options.wants_bucket(id) {
                        continue;
                    }
                    match self.push_bucket(server, &own, bucket, own_buckets.contains_key(id)) {
                        Err(SyncError::Stopped) => {
                            own.close().wait()?;
                            return Err(SyncError::Stopped);
                        }
                        Ok(n) => {
                            changed |= n > 0 || !own_buckets.contains_key(id);
                            report.pushed_events += n;
                        }
                        Err(e) => {
                            log::warn!("Could not push '{id}': {e}");
                            report.errors.push(format!("push '{id}': {e}"));
                        }
                    }
                }
            }
            Err(e) => report.errors.push(format!("push: {e}")),
        }
        let published = outbox.close_and_publish(own, changed)?;
        if published {
            log::info!("Published {}", outbox.published().display());
        }
        Ok(published)
    }

    fn push_bucket(
        &self,
        server: &dyn Server,
        own: &aw_datastore::Datastore,
        bucket: &Bucket,
        exists: bool,
    ) -> Result<u64> {
        if !exists {
            let mut copy = bucket.clone();
            copy.bid = None;
            copy.events = None;
            if copy.hostname == "unknown" {
                copy.hostname = self.me.device_id.clone();
            }
            copy.data
                .insert(ORIGIN_KEY.into(), Value::String(self.me.hostname.clone()));
            Server::create_bucket(own, &copy)?;
        }
        // Pages arrive newest first, so the file's newest event says nothing about whether
        // the older pages made it (the reference resumed from it: SYNC.md §6 #7). The
        // resume point is recorded only once the bucket is complete, after its events,
        // in the same file: a crash before it leaves the previous one.
        let key = format!("{PUSHED_KEY}{}", bucket.id);
        let from = match own.get_key_value(&key).wait() {
            Ok(text) => text.parse::<i64>().ok().map(timestamp::from_ns),
            Err(aw_datastore::DatastoreError::NoSuchKey(_)) => None,
            Err(e) => return Err(e.into()),
        };
        let from = from.or(self.options.start_date);
        let mut written = 0u64;
        transfer::read_pages(server, &bucket.id, from, &mut |page| {
            self.check_stop()?;
            written += transfer::write_page(own, &bucket.id, page)? as u64;
            Ok(())
        })?;
        if let Some(newest) = own.events(&bucket.id, None, None, Some(1))?.first() {
            let start = extent(newest).0;
            own.set_key_value(&key, &start.to_string()).wait()?;
        }
        Ok(written)
    }
}
