//! The push half of a pass: the server's own buckets into this device's file.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use aw_models::raw_event::data_to_text;
use aw_models::{timestamp, Bucket};
use serde_json::Value;

use super::{is_import, PassReport, Syncer, ORIGIN_KEY};
use crate::error::{Result, SyncError};
use crate::outbox::Outbox;
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
                    match self.push_bucket(server, &own, bucket, exists, report) {
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
        report: &mut PassReport,
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
            // What no reader would take (peer.rs): never written, so never refused.
            let before = page.len();
            page.retain(|e| data_to_text(&e.data).len() <= MAX_VALUE_BYTES);
            too_large += before - page.len();
            written += transfer::write_page(own, &bucket.id, page)? as u64;
            Ok(())
        })?;
        if too_large > 0 {
            log::warn!(
                "Not pushing {too_large} events of '{}' with more than {MAX_VALUE_BYTES} bytes of data",
                bucket.id
            );
            report.errors.push(format!(
                "push '{}': {too_large} events with more than {MAX_VALUE_BYTES} bytes of data are not synced",
                bucket.id
            ));
        }
        if let Some(newest) = own.events(&bucket.id, None, None, Some(1))?.first() {
            let start = extent(newest).0;
            own.set_key_value(&key, &start.to_string()).wait()?;
        }
        Ok(written)
    }
}
