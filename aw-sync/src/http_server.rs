//! The server the `aw-sync` program syncs: any ActivityWatch server over its REST API.
//!
//! Ours answers a few more calls (`GET /api/0/buckets/<id>/days`, `GET /api/0/sync/applied`,
//! `POST /api/0/sync/apply`, `POST /api/0/sync/scrub`), and then a pass carries deletions,
//! edits, backdated events, renames and merges both ways (`day_table.rs`). The reference's
//! API has none of them: against it, pushes and pulls append new events only, as the
//! reference's own aw-sync does (README, "Sync").

use std::collections::{BTreeMap, HashMap};

use aw_client_rust::blocking::AwClient;
use aw_datastore::{DayDigest, PulledDayApplied};
use aw_models::{Bucket, Event};
use chrono::{DateTime, Utc};

use crate::applied::DayToApply;
use crate::error::{Result, SyncError};
use crate::server::Server;

/// A server over HTTP, and whether it syncs by days.
pub struct HttpServer<'a> {
    client: &'a AwClient,
    days: bool,
}

impl<'a> HttpServer<'a> {
    /// Asks the server once whether it answers the day calls (ours does; the reference
    /// answers 404).
    pub fn new(client: &'a AwClient) -> HttpServer<'a> {
        let days = client.get_applied_days("", "").is_ok();
        HttpServer { client, days }
    }
}

fn parsed<T: serde::de::DeserializeOwned>(value: serde_json::Value, what: &str) -> Result<T> {
    serde_json::from_value(value)
        .map_err(|e| SyncError::Config(format!("the server's {what} cannot be read: {e}")))
}

impl Server for HttpServer<'_> {
    fn buckets(&self) -> Result<HashMap<String, Bucket>> {
        Ok(self.client.get_buckets()?)
    }

    fn create_bucket(&self, bucket: &Bucket) -> Result<()> {
        Ok(self.client.create_bucket(bucket)?)
    }

    fn events(
        &self,
        bucket: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
        limit: Option<u64>,
    ) -> Result<Vec<Event>> {
        Ok(self.client.get_events(bucket, start, end, limit)?)
    }

    fn event(&self, bucket: &str, id: i64) -> Result<Event> {
        Ok(self.client.get_event(bucket, id)?)
    }

    fn insert(&self, bucket: &str, events: Vec<Event>) -> Result<()> {
        Ok(self.client.insert_events(bucket, events)?)
    }

    fn delete_bucket(&self, bucket: &str) -> Result<()> {
        Ok(self.client.delete_bucket(bucket)?)
    }

    fn tells_days(&self) -> bool {
        self.days
    }

    fn day_digests(&self, bucket: &str) -> Result<BTreeMap<i64, DayDigest>> {
        let days: Vec<DayDigest> = parsed(self.client.get_day_digests(bucket)?, "day digests")?;
        Ok(days.into_iter().map(|d| (d.day, d)).collect())
    }

    fn apply_pulled_day(&self, day: DayToApply) -> Result<Option<PulledDayApplied>> {
        if !self.days {
            return Ok(None);
        }
        let answer = self.client.apply_pulled_day(&day)?;
        Ok(Some(parsed(answer, "answer to a day applied")?))
    }

    fn applied_days(&self, device: &str, source: &str) -> Result<BTreeMap<i64, String>> {
        if !self.days {
            return Ok(BTreeMap::new());
        }
        parsed(
            self.client.get_applied_days(device, source)?,
            "applied days",
        )
    }

    fn scrub(&self) -> Result<()> {
        if self.days {
            self.client.scrub()?;
        }
        Ok(())
    }

    fn frozen_days(&self) -> Result<BTreeMap<String, i64>> {
        if !self.days {
            return Ok(BTreeMap::new());
        }
        let value = self.client.get_setting(crate::server::FROZEN_SETTING)?;
        Ok(crate::server::frozen_from(&value))
    }
}
