//! The push half of a pass: the server's own buckets into this device's file.
//!
//! Against a server that tells its day digests (ours), the file follows the server day by
//! day: each day whose digest differs from the one the file has is made equal to the
//! server's events of that day, ids included (`Datastore::mirror_day`), and its digest
//! written in the file's day table (`day_table.rs`). So deletions, edits and backdated
//! events reach the file in place, at a cost that grows with the days they touched, and a
//! bucket gone from the server (deleted, renamed, merged away) leaves the file, but the
//! days a retention rule for this device only trimmed (`Server::frozen_days`), which stay
//! as they were published, so the other devices keep their copies. Against
//! the reference's API, new events are appended from the last one pushed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::Ordering;

use aw_datastore::{day_of, NewEvent};
use aw_models::raw_event::data_to_text;
use aw_models::{timestamp, Bucket, Event};
use serde_json::Value;

use super::{is_import, PassReport, Syncer, ORIGIN_KEY};
use crate::error::{Result, SyncError};
use crate::outbox::{DayUpdates, Outbox, PublishedDays};
use crate::peer::MAX_VALUE_BYTES;
use crate::server::Server;
use crate::transfer::{self, extent};

/// Key (in this device's file) of a bucket's push resume point, followed by its id.
const PUSHED_KEY: &str = "aw-sync.pushed.";

impl Syncer {
    /// Writes the server's own buckets into this device's file and publishes it.
    pub(super) fn push(
        &mut self,
        server: &dyn Server,
        buckets: &HashMap<String, Bucket>,
        report: &mut PassReport,
    ) -> Result<bool> {
        let outbox = Outbox::new(&self.options.folder, &self.me, &self.options.work_dir);
        let by_day = server.tells_days();
        let published = match by_day.then(|| outbox.published_days()) {
            Some(Some(published)) => published,
            Some(None) => {
                // A file built by the append-only push: its ids are not the server's.
                outbox.start_anew()?;
                PublishedDays::new()
            }
            None => PublishedDays::new(),
        };
        let mut updates = DayUpdates::default();
        let frozen = if by_day {
            server.frozen_days()?
        } else {
            BTreeMap::new()
        };
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
                        own.close()?;
                        return Err(SyncError::Stopped);
                    }
                    let bucket = &buckets[id];
                    if is_import(bucket) || !self.options.wants_bucket(id) {
                        continue;
                    }
                    let exists = own_buckets.contains_key(id);
                    let pushed = if by_day {
                        let days = (published.get(id), frozen.get(id).copied());
                        self.push_days(server, &own, bucket, exists, days, &mut updates, report)
                    } else {
                        self.push_bucket(server, &own, bucket, exists, report)
                    };
                    match pushed {
                        Err(SyncError::Stopped) => {
                            own.close()?;
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
                if by_day {
                    // Gone from the server (deleted, renamed, merged away): gone from the file.
                    for id in own_buckets.keys().filter(|id| !buckets.contains_key(*id)) {
                        own.delete_bucket(id).wait()?;
                        updates.removed_buckets.push(id.clone());
                    }
                }
            }
            Err(e) => report.errors.push(format!("push: {e}")),
        }
        let days = by_day.then_some(&updates);
        let published = outbox.close_and_publish(own, changed, days)?;
        if published {
            log::info!("Published {}", outbox.published().display());
        }
        Ok(published)
    }

    /// Creates the bucket in this device's file, marked with this device's hostname.
    fn create_own_bucket(&self, own: &aw_datastore::Datastore, bucket: &Bucket) -> Result<()> {
        let mut copy = bucket.clone();
        copy.bid = None;
        copy.events = None;
        if copy.hostname == "unknown" {
            copy.hostname = self.me.device_id.clone();
        }
        copy.data
            .insert(ORIGIN_KEY.into(), Value::String(self.me.hostname.clone()));
        Server::create_bucket(own, &copy)
    }

    /// Makes each day of the bucket in this device's file whose digest differs from the
    /// server's equal to the server's (see the module docs); returns the events written or
    /// deleted.
    #[allow(clippy::too_many_arguments)]
    fn push_days(
        &self,
        server: &dyn Server,
        own: &aw_datastore::Datastore,
        bucket: &Bucket,
        exists: bool,
        (published, frozen): (Option<&BTreeMap<i64, String>>, Option<i64>),
        updates: &mut DayUpdates,
        report: &mut PassReport,
    ) -> Result<u64> {
        if !exists {
            self.create_own_bucket(own, bucket)?;
        }
        let digests = server.day_digests(&bucket.id)?;
        let none = BTreeMap::new();
        let published = published.unwrap_or(&none);
        let mut days: BTreeSet<i64> = digests
            .iter()
            .filter(|(day, d)| published.get(day) != Some(&d.digest))
            .map(|(day, _)| *day)
            .collect();
        days.extend(published.keys().filter(|day| !digests.contains_key(day)));
        let first = self
            .options
            .start_date
            .map(|t| day_of(timestamp::to_ns_saturating(&t)));
        days.retain(|day| first.is_none_or(|f| *day >= f));
        // Days a retention rule for this device only trimmed stay as they were published.
        days.retain(|day| frozen.is_none_or(|f| *day >= f));
        let (mut written, mut too_large) = (0u64, 0usize);
        for day in days {
            self.check_stop()?;
            let mut events = crate::transfer::events_of_day(server, &bucket.id, day)?;
            report.pushed_days += 1;
            report.pushed_days_events += events.len() as u64;
            too_large += drop_too_large(&mut events);
            let events = NewEvent::from_events(&events)?;
            let done = own.mirror_day(&bucket.id, day, events).wait()?;
            written += done.written + done.deleted;
            updates
                .days
                .push((bucket.id.clone(), day, digests.get(&day).cloned()));
        }
        report_too_large(&bucket.id, too_large, report);
        Ok(written)
    }

    fn push_bucket(
        &self,
        server: &dyn Server,
        own: &aw_datastore::Datastore,
        bucket: &Bucket,
        exists: bool,
        report: &mut PassReport,
    ) -> Result<u64> {
        if !exists {
            self.create_own_bucket(own, bucket)?;
        }
        // Pages arrive newest first, so the file's newest event says nothing about whether
        // the older pages made it (the reference resumed from it: COMPATIBILITY.md, sync #7). The
        // resume point is recorded only once the bucket is complete, after its events,
        // in the same file: a crash before it leaves the previous one.
        let key = format!("{PUSHED_KEY}{}", bucket.id);
        let from = match own.get_key_value(&key).wait() {
            Ok(text) => text.parse::<i64>().ok().map(timestamp::from_ns),
            Err(aw_datastore::DatastoreError::NoSuchKey(_)) => None,
            Err(e) => return Err(e.into()),
        };
        let from = from.or(self.options.start_date);
        let (mut written, mut too_large) = (0u64, 0usize);
        transfer::read_pages(server, &bucket.id, from, &mut |mut page| {
            self.check_stop()?;
            too_large += drop_too_large(&mut page);
            written += transfer::write_page(own, &bucket.id, page)? as u64;
            Ok(())
        })?;
        report_too_large(&bucket.id, too_large, report);
        if let Some(newest) = own.events(&bucket.id, None, None, Some(1))?.first() {
            let start = extent(newest).0;
            own.set_key_value(&key, &start.to_string()).wait()?;
        }
        Ok(written)
    }
}

/// Drops the events no reader would take (`peer.rs`): never written, so never refused.
/// Returns how many.
fn drop_too_large(events: &mut Vec<Event>) -> usize {
    let before = events.len();
    events.retain(|e| data_to_text(&e.data).len() <= MAX_VALUE_BYTES);
    before - events.len()
}

/// Logs and reports the events of `bucket` left out for their size.
fn report_too_large(bucket: &str, too_large: usize, report: &mut PassReport) {
    if too_large > 0 {
        log::warn!(
            "Not pushing {too_large} events of '{bucket}' with more than {MAX_VALUE_BYTES} bytes of data"
        );
        report.errors.push(format!(
            "push '{bucket}': {too_large} events with more than {MAX_VALUE_BYTES} bytes of data are not synced"
        ));
    }
}
