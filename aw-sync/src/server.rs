//! The calls a sync makes on an ActivityWatch store, whichever side of the sync it is on:
//! the local server over HTTP (the `aw-sync` binary), the server's own datastore (the sync
//! built into `aw-server`: no HTTP hop), or this device's sync file.
//!
//! The calls are the reference REST API's, with its semantics: event reads are clipped to
//! the window and come newest first. `transfer.rs` turns them into exact copies.

use std::collections::{BTreeMap, HashMap};

use aw_datastore::{Datastore, DayDigest, PulledDayApplied};
use aw_models::{Bucket, Event};
use chrono::{DateTime, Utc};

use crate::applied::{AppliedDays, DayToApply};
use crate::digests::{compute_all, DayDigestCache};
use crate::error::Result;

/// An ActivityWatch store a sync reads from or writes to.
pub trait Server {
    /// Every bucket, by id (without events).
    fn buckets(&self) -> Result<HashMap<String, Bucket>>;
    /// Creates a bucket; a sync passes buckets without events (events travel in pages).
    fn create_bucket(&self, bucket: &Bucket) -> Result<()>;
    /// Events overlapping or touching `[start, end]` (absent = open), clipped to it, newest
    /// first, at most `limit`.
    fn events(
        &self,
        bucket: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
        limit: Option<u64>,
    ) -> Result<Vec<Event>>;
    /// One event, unclipped.
    fn event(&self, bucket: &str, id: i64) -> Result<Event>;
    /// Inserts events; an event with an `id` replaces that event of the bucket.
    fn insert(&self, bucket: &str, events: Vec<Event>) -> Result<()>;
    /// Deletes a bucket and its events.
    fn delete_bucket(&self, bucket: &str) -> Result<()>;
    /// Makes the writes so far durable, before a resume point past them is saved. A server
    /// over HTTP has committed what it acknowledged as far as a client can tell.
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    /// Whether what [`Server::flush`] made durable stays, so a resume point can be trusted
    /// even where the server's copy ends before it (the user deleted those events). Only
    /// the datastore itself can say so, and its owner forgets the resume points when the
    /// database lost writes (a restore, a salvage); a server over HTTP (perhaps the
    /// reference, which can lose acknowledged writes in a crash) cannot: there the pull
    /// starts again from the server's newest event when its copy ends earlier.
    fn keeps_what_it_flushed(&self) -> bool {
        false
    }
    /// Whether the store tells its day digests ([`Server::day_digests`]) and applies a
    /// peer's days ([`Server::apply_pulled_day`]): ours does, the reference's API does
    /// not (then pushes and pulls append new events only, as the reference's do).
    fn tells_days(&self) -> bool {
        false
    }
    /// The digest of each day of the bucket that has events (`aw_datastore::DayDigest`);
    /// empty where [`Server::tells_days`] is false.
    fn day_digests(&self, _bucket: &str) -> Result<BTreeMap<i64, DayDigest>> {
        Ok(BTreeMap::new())
    }
    /// Applies one day of another device's bucket to its pulled copy, all or nothing, or
    /// `None` when the store cannot (the reference's API): then pulls append new events
    /// only.
    fn apply_pulled_day(&self, _day: DayToApply) -> Result<Option<PulledDayApplied>> {
        Ok(None)
    }
    /// The days of bucket `source` of device `device` applied to its copy here, with the
    /// digest applied (`applied.rs`); empty where [`Server::tells_days`] is false.
    fn applied_days(&self, _device: &str, _source: &str) -> Result<BTreeMap<i64, String>> {
        Ok(BTreeMap::new())
    }
    /// Leaves no removed text readable beside the database (`Datastore::scrub`): after a
    /// pull removed text a peer removed from its history.
    fn scrub(&self) -> Result<()> {
        Ok(())
    }
    /// Per bucket, the first day (days since 1970-01-01 UTC) whose changes this device
    /// still publishes: retention rules for this device only removed what is before it
    /// (aw-server's `retention.rs`, the setting `retention_frozen`), and those days stay
    /// in the published file as they were, so the other devices keep their copies. Empty
    /// where [`Server::tells_days`] is false.
    fn frozen_days(&self) -> Result<BTreeMap<String, i64>> {
        Ok(BTreeMap::new())
    }
}

/// The key of the setting [`Server::frozen_days`] reads.
pub(crate) const FROZEN_SETTING: &str = "retention_frozen";

/// [`Server::frozen_days`] from the setting's value (anything else than an object of whole
/// numbers counts as none).
pub(crate) fn frozen_from(value: &serde_json::Value) -> BTreeMap<String, i64> {
    serde_json::from_value(value.clone()).unwrap_or_default()
}

/// A datastore whose day digests are kept between passes by a [`DayDigestCache`]
/// listening to its writes: what the sync built into the server passes.
pub struct CachedDatastore<'a> {
    /// The server's datastore.
    pub store: &'a Datastore,
    /// Its digests (registered as a write listener of `store`).
    pub digests: &'a DayDigestCache,
}

impl Server for CachedDatastore<'_> {
    fn buckets(&self) -> Result<HashMap<String, Bucket>> {
        Server::buckets(self.store)
    }

    fn create_bucket(&self, bucket: &Bucket) -> Result<()> {
        Server::create_bucket(self.store, bucket)
    }

    fn events(
        &self,
        bucket: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
        limit: Option<u64>,
    ) -> Result<Vec<Event>> {
        Server::events(self.store, bucket, start, end, limit)
    }

    fn event(&self, bucket: &str, id: i64) -> Result<Event> {
        Server::event(self.store, bucket, id)
    }

    fn insert(&self, bucket: &str, events: Vec<Event>) -> Result<()> {
        Server::insert(self.store, bucket, events)
    }

    fn delete_bucket(&self, bucket: &str) -> Result<()> {
        Server::delete_bucket(self.store, bucket)
    }

    fn flush(&self) -> Result<()> {
        Server::flush(self.store)
    }

    fn keeps_what_it_flushed(&self) -> bool {
        true
    }

    fn tells_days(&self) -> bool {
        true
    }

    fn day_digests(&self, bucket: &str) -> Result<BTreeMap<i64, DayDigest>> {
        self.digests.digests(self.store, bucket)
    }

    fn apply_pulled_day(&self, day: DayToApply) -> Result<Option<PulledDayApplied>> {
        Server::apply_pulled_day(self.store, day)
    }

    fn applied_days(&self, device: &str, source: &str) -> Result<BTreeMap<i64, String>> {
        Server::applied_days(self.store, device, source)
    }

    fn scrub(&self) -> Result<()> {
        Server::scrub(self.store)
    }

    fn frozen_days(&self) -> Result<BTreeMap<String, i64>> {
        self.store.frozen_days()
    }
}

impl Server for Datastore {
    fn buckets(&self) -> Result<HashMap<String, Bucket>> {
        Ok(self.get_buckets().wait()?)
    }

    fn create_bucket(&self, bucket: &Bucket) -> Result<()> {
        Ok(Datastore::create_bucket(self, bucket).wait()?)
    }

    fn events(
        &self,
        bucket: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
        limit: Option<u64>,
    ) -> Result<Vec<Event>> {
        Ok(self
            .get_events(bucket, start, end, limit)
            .wait()?
            .into_events())
    }

    fn event(&self, bucket: &str, id: i64) -> Result<Event> {
        let raw = self.get_event(bucket, id).wait()?;
        raw.to_event().ok_or_else(|| {
            aw_datastore::DatastoreError::InvalidEvent(format!(
                "event {id} of '{bucket}' has data that is not a JSON object"
            ))
            .into()
        })
    }

    fn insert(&self, bucket: &str, events: Vec<Event>) -> Result<()> {
        self.insert_events(bucket, &events).wait()?;
        Ok(())
    }

    fn delete_bucket(&self, bucket: &str) -> Result<()> {
        Ok(Datastore::delete_bucket(self, bucket).wait()?)
    }

    fn flush(&self) -> Result<()> {
        Ok(self.force_commit().wait()?)
    }

    fn keeps_what_it_flushed(&self) -> bool {
        true
    }

    /// Computed whole at every call: a long-running caller uses [`CachedDatastore`].
    fn tells_days(&self) -> bool {
        true
    }

    fn day_digests(&self, bucket: &str) -> Result<BTreeMap<i64, DayDigest>> {
        compute_all(self, bucket)
    }

    fn frozen_days(&self) -> Result<BTreeMap<String, i64>> {
        match self
            .get_key_value(&format!("settings.{FROZEN_SETTING}"))
            .wait()
        {
            Ok(text) => Ok(serde_json::from_str(&text)
                .map(|v| frozen_from(&v))
                .unwrap_or_default()),
            Err(aw_datastore::DatastoreError::NoSuchKey(_)) => Ok(BTreeMap::new()),
            Err(e) => Err(e.into()),
        }
    }

    fn apply_pulled_day(&self, day: DayToApply) -> Result<Option<PulledDayApplied>> {
        let day = day.into_pulled_day()?;
        Ok(Some(Datastore::apply_pulled_day(self, day).wait()?))
    }

    fn applied_days(&self, device: &str, source: &str) -> Result<BTreeMap<i64, String>> {
        let key = AppliedDays::new(device, source).index_key();
        match self.get_key_value(&key).wait() {
            // Unreadable: none (each day is then applied again, as a day without a record).
            Ok(text) => Ok(serde_json::from_str(&text).unwrap_or_default()),
            Err(aw_datastore::DatastoreError::NoSuchKey(_)) => Ok(BTreeMap::new()),
            Err(e) => Err(e.into()),
        }
    }

    fn scrub(&self) -> Result<()> {
        Ok(Datastore::scrub_blocking(self)?)
    }
}
