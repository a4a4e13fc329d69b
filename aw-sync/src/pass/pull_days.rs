//! The pull by days: what a peer did to its own history (deleted, edited, added at any
//! age, renamed, merged) applied to its pulled copies here.
//!
//! Used when the peer's file has a day table (`day_table.rs`) and the server applies days
//! (`Server::tells_days`: ours). Per peer bucket, the file's digest of each day is compared
//! with the one applied last (kept in the server's settings by
//! `Datastore::apply_pulled_day`, in the same request as the events); each day that
//! differs, or that the peer no longer has, is applied whole: the copy's events of that
//! day become the peer's, after this server's privacy rules and without the events the
//! user deleted here (`aw_datastore::PulledDay`).
//!
//! Bounds: [`MAX_DAYS_PER_PASS`] days per peer and pass (the rest wait for the next pass;
//! the report says how many), a day of more than [`crate::day_table::MAX_EVENTS_PER_DAY`]
//! events or [`crate::day_table::MAX_BYTES_PER_DAY`] of data is refused and reported, and
//! a digest that does not agree with the file (a day with events but no digest, or a count
//! that is not the number of its events) is refused and reported: a damaged or hostile
//! table never makes more than the day it names change, and never a day it does not name.
//!
//! A peer bucket gone from a file that has a day table (deleted, renamed or merged away
//! there) takes its copy here with it: each of its days is applied as empty, noting the
//! events deleted here on the way (so they stay deleted in the bucket that took them),
//! then the copy is deleted. This runs before the file's buckets are pulled, so after a
//! merge no event is ever in both copies.

use std::collections::{BTreeMap, HashMap, HashSet};

use aw_datastore::{NewEvent, PulledDayApplied};
use aw_models::Bucket;

use super::pull::{BadBuckets, Source};
use super::{text_of, PeerReport, Syncer, DEVICE_KEY, SOURCE_KEY};
use crate::applied::DayToApply;
use crate::cursors::Cursors;
use crate::day_table::{MAX_DAYS_PER_BUCKET, MAX_DAYS_PER_PASS};
use crate::error::{Result, SyncError};
use crate::peer::PeerFile;
use crate::server::Server;

/// How one day is to be applied.
struct DayJob<'a> {
    device: &'a str,
    source: &'a str,
    dest: &'a str,
    day: i64,
    /// The peer's digest and count of the day; `None`: it has none any more.
    theirs: Option<&'a (u64, String)>,
    /// Apply as a day without a record (the copy was created anew).
    adopt: bool,
    pulled_until: Option<i64>,
}

impl Syncer {
    /// Pulls one peer bucket by days (see the module docs); returns the events written.
    pub(super) fn pull_days(
        &self,
        server: &dyn Server,
        from: &Source<'_>,
        dest: &str,
        created: bool,
        cursors: &Cursors,
        report: &mut PeerReport,
    ) -> Result<u64> {
        let theirs = from
            .file
            .day_digests(&from.bucket.id, MAX_DAYS_PER_BUCKET)?;
        // A copy created now (never pulled, or deleted here as a whole) starts from nothing:
        // what was recorded of the old one is no longer true.
        let ours = if created {
            BTreeMap::new()
        } else {
            server.applied_days(&from.peer.device_id, &from.bucket.id)?
        };
        let mut days: Vec<i64> = theirs
            .iter()
            .filter(|(day, (_, digest))| ours.get(day) != Some(digest))
            .map(|(day, _)| *day)
            .collect();
        days.extend(ours.keys().filter(|day| !theirs.contains_key(day)));
        // `--start-date`: nothing before its day (a date is a whole day in UTC).
        let first = self
            .options
            .start_date
            .map(|t| aw_datastore::day_of(aw_models::timestamp::to_ns_saturating(&t)));
        days.retain(|day| first.is_none_or(|f| *day >= f));
        days.sort_unstable();
        // Where the append-only pull had got to: events before it that the copy lacks
        // were deleted here (see `aw_datastore::PulledDay::pulled_until`).
        let pulled_until = if created {
            None
        } else {
            cursors
                .get(&from.file_key(self), &from.bucket.id)
                .map(|c| c.start)
        };
        let mut written = 0;
        for (i, &day) in days.iter().enumerate() {
            let job = DayJob {
                device: &from.peer.device_id,
                source: &from.bucket.id,
                dest,
                day,
                theirs: theirs.get(&day),
                adopt: created,
                pulled_until,
            };
            match self.apply_day(server, from.file, Some(from.row), &job, report)? {
                Some(applied) => written += applied.inserted + applied.replaced,
                None => {
                    report.days.days_left += (days.len() - i) as u64;
                    break;
                }
            }
        }
        Ok(written)
    }

    /// Applies one day, within the pass's bound of days; `None` once the bound is reached.
    fn apply_day(
        &self,
        server: &dyn Server,
        file: &PeerFile,
        row: Option<i64>,
        job: &DayJob<'_>,
        report: &mut PeerReport,
    ) -> Result<Option<PulledDayApplied>> {
        if self.days_applied.get() >= MAX_DAYS_PER_PASS {
            return Ok(None);
        }
        self.check_stop()?;
        file.check_time()?;
        let read = match row {
            Some(row) => file.day_events(row, job.day)?,
            None => Some(Default::default()),
        };
        let Some(read) = read else {
            report.days.refused_days += 1;
            report.skipped(format!(
                "bucket copy '{}', day {}: more events or data than a pass applies",
                job.dest, job.day
            ));
            return Ok(Some(PulledDayApplied::default()));
        };
        let found = (read.events.len() + read.skipped.len()) as u64;
        report.days.events_read += found;
        let agrees = match job.theirs {
            Some((count, _)) => *count == found,
            None => found == 0,
        };
        if !agrees {
            report.days.refused_days += 1;
            report.skipped(format!(
                "bucket copy '{}', day {}: its digest does not agree with its {found} events",
                job.dest, job.day
            ));
            return Ok(Some(PulledDayApplied::default()));
        }
        for (id, reason) in read.skipped {
            report.skipped(format!("bucket copy '{}', event {id}: {reason}", job.dest));
        }
        let mut events = Vec::with_capacity(read.events.len());
        for (id, event) in read.events {
            match NewEvent::from_event(&event) {
                Ok(_) => events.push(event),
                Err(e) => report.skipped(format!("bucket copy '{}', event {id}: {e}", job.dest)),
            }
        }
        self.days_applied.set(self.days_applied.get() + 1);
        let Some(applied) = server.apply_pulled_day(DayToApply {
            device: job.device.to_string(),
            source: job.source.to_string(),
            bucket: job.dest.to_string(),
            day: job.day,
            digest: job.theirs.map(|(_, d)| d.clone()).unwrap_or_default(),
            events,
            adopt: job.adopt,
            pulled_until: job.pulled_until,
        })?
        else {
            return Err(SyncError::Config(
                "the server does not apply pulled days".into(),
            ));
        };
        report.days.replaced_days += 1;
        report.days.replaced_events += applied.replaced;
        report.days.deleted_events += applied.deleted;
        report.days.kept_deleted += applied.kept_deleted;
        report.days.removed_text += applied.removed_text;
        Ok(Some(applied))
    }

    /// Deletes the copies here of the peer's buckets that its file no longer has (see the
    /// module docs). Only when every bucket row of the file was read: a row that could not
    /// be read might be the bucket.
    pub(super) fn forget_vanished(
        &self,
        server: &dyn Server,
        file: &PeerFile,
        device_id: &str,
        buckets: &mut HashMap<String, Bucket>,
        report: &mut PeerReport,
    ) -> Result<()> {
        let mut present = HashSet::new();
        let mut bad = BadBuckets::default();
        let mut page = file.bucket_rows_after(None, super::pull::ROWS_PER_PAGE)?;
        while let Some(&last) = page.last() {
            for row in std::mem::take(&mut page) {
                file.check_time()?;
                match file.bucket(row) {
                    Ok(b) => {
                        present.insert(b.bucket.id);
                    }
                    Err(e) => bad.note(&e),
                }
            }
            page = file.bucket_rows_after(Some(last), super::pull::ROWS_PER_PAGE)?;
        }
        if bad.count > 0 {
            return Ok(());
        }
        let mut gone: Vec<(String, String)> = buckets
            .values()
            .filter(|b| text_of(b, DEVICE_KEY) == Some(device_id))
            .filter_map(|b| Some((b.id.clone(), text_of(b, SOURCE_KEY)?.to_string())))
            .filter(|(_, source)| !present.contains(source))
            .collect();
        gone.sort();
        for (dest, source) in gone {
            let ours = server.applied_days(device_id, &source)?;
            if ours.is_empty() {
                // Never pulled by days: an older version's copy, left as it was.
                continue;
            }
            for (i, day) in ours.keys().enumerate() {
                let job = DayJob {
                    device: device_id,
                    source: &source,
                    dest: &dest,
                    day: *day,
                    theirs: None,
                    adopt: false,
                    pulled_until: None,
                };
                if self.apply_day(server, file, None, &job, report)?.is_none() {
                    report.days.days_left += (ours.len() - i) as u64;
                    return Ok(());
                }
            }
            server.delete_bucket(&dest)?;
            buckets.remove(&dest);
            report.days.deleted_buckets += 1;
            log::info!("Deleted '{dest}': its bucket '{source}' is gone from {device_id}");
        }
        Ok(())
    }
}
