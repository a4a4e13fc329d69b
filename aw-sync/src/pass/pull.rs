//! The pull half of a pass: every other device's file into the server.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use aw_models::{timestamp, Bucket};

use super::{text_of, Checked, PassReport, PeerReport, Syncer, ORIGIN_KEY, SYNCED_FROM};
use crate::cursors::Cursors;
use crate::error::{Result, SyncError};
use crate::folder::PeerPath;
use crate::peer::{PageCursor, PeerFile, ReadGuard};
use crate::server::Server;
use crate::transfer::{self, extent, PAGE_SIZE};

/// Bucket row ids read from a peer file at a time.
pub(super) const ROWS_PER_PAGE: usize = 1000;

/// How many reasons the one log line about a peer's unreadable bucket rows gives.
const REASONS_LOGGED: usize = 3;

/// A peer's bucket rows that could not be read in one pass: counted, with the first few
/// reasons, and logged once (a file of 200,000 such rows made 87 MB of log in two passes
/// when each was a line).
#[derive(Default)]
pub(super) struct BadBuckets {
    pub(super) count: u64,
    reasons: Vec<String>,
}

impl BadBuckets {
    pub(super) fn note(&mut self, e: &SyncError) {
        self.count += 1;
        if self.reasons.len() < REASONS_LOGGED {
            self.reasons.push(e.to_string());
        }
    }

    fn log(&self, peer: &std::path::Path) {
        if self.count > 0 {
            log::warn!(
                "Skipped {} bucket rows of {} that cannot be synced; the first: {}",
                self.count,
                peer.display(),
                self.reasons.join("; ")
            );
        }
    }
}

impl Syncer {
    /// The resume points' file.
    fn cursors_path(&self) -> PathBuf {
        self.options
            .work_dir
            .join(crate::cursors::file_name(&self.me.device_id))
    }

    /// Forgets where every pull stopped: after the server's database lost writes (a
    /// salvage, a restore), the next pull starts from each bucket's newest event and
    /// brings back what the server lost.
    pub fn forget_pulls(&self) -> Result<()> {
        let path = self.cursors_path();
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(SyncError::io("cannot remove", path)(e)),
        }
    }

    pub(super) fn pull(
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
                    ..PeerReport::default()
                };
                match self.pull_peer(server, peer, buckets, &mut cursors, &mut this, !last) {
                    Ok(true) => {}
                    // A placeholder without buckets: the device's other file has its data.
                    Ok(false) => continue,
                    Err(SyncError::Stopped) => return Err(SyncError::Stopped),
                    // Unreadable, not merely slow: the device's older file may do.
                    Err(e @ SyncError::BadPeer { .. }) if !last => {
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
        // Text a peer removed from its history leaves this server's files too.
        if report.peers.iter().any(|p| p.days.removed_text > 0) {
            server.scrub()?;
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
        let meta = std::fs::symlink_metadata(&peer.path)
            .map_err(SyncError::io("cannot read", peer.path.clone()))?;
        let (size, modified) = (meta.len(), meta.modified().ok());
        let known = self
            .checked
            .get(&peer.path)
            .filter(|c| c.size == size && c.modified == modified)
            .copied();
        let guard = ReadGuard {
            stop: Arc::clone(&self.stop),
            time_limit: self.options.peer_time_limit,
        };
        let file = PeerFile::open_guarded(&peer.path, known.is_none(), guard)?;
        let unreadable_events = known.map_or(file.unreadable_events(), |c| c.unreadable_events);
        self.checked.insert(
            peer.path.clone(),
            Checked {
                size,
                modified,
                unreadable_events,
            },
        );
        let first = file.bucket_rows_after(None, ROWS_PER_PAGE)?;
        if skip_if_empty && first.is_empty() {
            return Ok(false);
        }
        // Reported in the pass that checks a new or changed file, as rows are in the pass
        // that reads them: each is counted once.
        if known.is_none() && unreadable_events > 0 {
            log::warn!(
                "Skipping {unreadable_events} events of {} whose times or id are not integers",
                peer.path.display()
            );
            report.skipped_events += unreadable_events;
            report.problems.push(format!(
                "{unreadable_events} events whose times or id are not integers"
            ));
        }
        // By days when both sides can (`pull_days.rs`); a day table that is there but
        // cannot be read is reported, and the file pulled as the reference's would be.
        let by_day = server.tells_days()
            && match file.has_days() {
                Ok(has) => has,
                Err(e) => {
                    report.skipped(e.to_string());
                    false
                }
            };
        report.follows_changes = by_day || file.has_days().unwrap_or(false);
        self.days_applied.set(0);
        if by_day {
            self.forget_vanished(server, &file, &peer.device_id, buckets, report)?;
        }
        let mut bad = BadBuckets::default();
        let walked = self.pull_bucket_rows(
            server, &file, peer, first, buckets, cursors, report, &mut bad, by_day,
        );
        bad.log(&peer.path);
        walked.map(|()| true)
    }

    /// Pulls the buckets of `file`, a page of row ids at a time from `first`; checks the
    /// stop flag and the peer's time limit before every row, so a file of millions of rows
    /// that are all skipped never holds up a stop or outlasts its time. Rows that cannot be
    /// read are counted in `bad` (logged once per peer and pass by the caller).
    #[allow(clippy::too_many_arguments)]
    fn pull_bucket_rows(
        &mut self,
        server: &dyn Server,
        file: &PeerFile,
        peer: &PeerPath,
        first: Vec<i64>,
        buckets: &mut HashMap<String, Bucket>,
        cursors: &mut Cursors,
        report: &mut PeerReport,
        bad: &mut BadBuckets,
        by_day: bool,
    ) -> Result<()> {
        let mut page = first;
        while let Some(&last) = page.last() {
            for row in std::mem::take(&mut page) {
                file.check_time()?;
                self.rows_read.fetch_add(1, Ordering::Relaxed);
                let source = match file.bucket(row) {
                    Ok(source) => source.bucket,
                    Err(e) => {
                        bad.note(&e);
                        report.skipped(e.to_string());
                        continue;
                    }
                };
                if source.id.contains(SYNCED_FROM) || !self.options.wants_bucket(&source.id) {
                    continue;
                }
                let host = origin_host(&source, &peer.device_id);
                if let Some(hosts) = &self.options.hosts {
                    if !hosts.contains(&host)
                        && peer.host_folder.as_ref().is_none_or(|h| !hosts.contains(h))
                    {
                        continue;
                    }
                }
                report.saw_host(&host);
                report.buckets += 1;
                let from = Source {
                    file,
                    row,
                    bucket: &source,
                    host: &host,
                    peer,
                    by_day,
                };
                match self.pull_bucket(server, &from, buckets, cursors, report) {
                    Ok(n) => report.pulled_events += n,
                    Err(e @ (SyncError::Stopped | SyncError::PeerTimeLimit { .. })) => {
                        return Err(e)
                    }
                    Err(e) => {
                        log::warn!(
                            "Could not pull '{}' from {}: {e}",
                            source.id,
                            peer.path.display()
                        );
                        report.error = Some(format!("bucket '{}': {e}", source.id));
                    }
                }
            }
            page = file.bucket_rows_after(Some(last), ROWS_PER_PAGE)?;
        }
        Ok(())
    }

    fn pull_bucket(
        &self,
        server: &dyn Server,
        from: &Source<'_>,
        buckets: &mut HashMap<String, Bucket>,
        cursors: &mut Cursors,
        report: &mut PeerReport,
    ) -> Result<u64> {
        let Source {
            file,
            row,
            bucket: source,
            host,
            peer,
            by_day,
        } = *from;
        let (dest, created) = self.destination(server, source, host, peer, buckets)?;
        if by_day {
            return self.pull_days(server, from, &dest, created, cursors, report);
        }
        let newest = server
            .events(&dest, None, None, Some(1))?
            .first()
            .map(|e| extent(e).0);
        let file_key = from.file_key(self);
        // A bucket created now (a pulled bucket the user deleted) is pulled from its start:
        // its old resume point goes at once, so a pass that fails before its first page
        // does not leave it to the next.
        if created {
            cursors.remove(&file_key, &source.id)?;
        }
        let saved = cursors.get(&file_key, &source.id);
        let mut written = 0u64;
        let mut cursor = match (saved, newest) {
            // On from the last event pulled, after extending it if it grew; also when the
            // server's copy ends before it (the user deleted those events: see `cursors.rs`).
            (Some(mut at), newest)
                if server.keeps_what_it_flushed() || newest.is_some_and(|n| n >= at.start) =>
            {
                if let Some((end, extended)) = extend_grown(server, &dest, file, row, &at)? {
                    written += u64::from(extended);
                    // Ties at this start with ends up to the new one are read again
                    // (and skipped by write_page): the position stays exact.
                    at.end = end;
                }
                at
            }
            // Never pulled into this server, the resume points were forgotten (the server
            // lost writes), or a server over HTTP whose copy ends before the resume point:
            // from its newest event on.
            (_, Some(newest)) => PageCursor::at(newest),
            (_, None) => PageCursor::at(
                self.options
                    .start_date
                    .map_or(i64::MIN, |t| timestamp::to_ns_saturating(&t)),
            ),
        };
        let mut flushed = 0;
        loop {
            file.check_time()?;
            let page = file.events_after(row, &mut cursor, PAGE_SIZE)?;
            for (id, reason) in page.skipped {
                log::warn!(
                    "Skipping event {id} of '{}' in {}: {reason}",
                    source.id,
                    peer.path.display()
                );
                report.skipped(format!("bucket '{}', event {id}: {reason}", source.id));
            }
            written += transfer::write_page(server, &dest, page.events)? as u64;
            // Committed before the resume point moves past it.
            if written > flushed {
                server.flush()?;
                flushed = written;
            }
            cursors.set(&file_key, &source.id, cursor)?;
            if !page.more {
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
}

/// A bucket of a peer file being pulled, and where it comes from.
pub(super) struct Source<'a> {
    pub(super) file: &'a PeerFile,
    pub(super) row: i64,
    pub(super) bucket: &'a Bucket,
    pub(super) host: &'a str,
    pub(super) peer: &'a PeerPath,
    /// The file has a day table and the server applies days (`pull_days.rs`).
    pub(super) by_day: bool,
}

impl Source<'_> {
    /// The key of the file's resume points: its path in the sync folder (a device's files
    /// in both layouts have rows of their own).
    pub(super) fn file_key(&self, syncer: &Syncer) -> String {
        self.peer
            .path
            .strip_prefix(syncer.options.folder.root())
            .unwrap_or(&self.peer.path)
            .to_string_lossy()
            .into_owned()
    }
}

/// Each device's files, most recently written first (the device layout first on a tie).
/// A device's data is pulled from one of them: a device can have one in each layout (this
/// crate publishes both; the reference's daemon and its `sync` write one each, and its
/// `sync` plants empty placeholders), and pulling the same events from two files would
/// compare each with the server's copy, which a privacy filter may have changed. An empty
/// or unreadable file gives way to the next.
fn files_by_device(peers: Vec<PeerPath>) -> Vec<Vec<PeerPath>> {
    let modified = |p: &PeerPath| {
        std::fs::symlink_metadata(&p.path)
            .and_then(|m| m.modified())
            .ok()
    };
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

/// The host a peer bucket's data was recorded on: its origin, else its hostname; never
/// `unknown` (the device id stands in, as the reference's push does).
fn origin_host(bucket: &Bucket, device_id: &str) -> String {
    let host = text_of(bucket, ORIGIN_KEY).unwrap_or(&bucket.hostname);
    if host.is_empty() || host == "unknown" {
        device_id.to_string()
    } else {
        super::bounded_host(host).to_string()
    }
}
