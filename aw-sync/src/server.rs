//! The calls a sync makes on an ActivityWatch store, whichever side of the sync it is on:
//! the local server over HTTP (the `aw-sync` binary), the server's own datastore (the sync
//! built into `aw-server`: no HTTP hop), or this device's sync file.
//!
//! The calls are the reference REST API's, with its semantics: event reads are clipped to
//! the window and come newest first. `transfer.rs` turns them into exact copies.

use std::collections::HashMap;

use aw_datastore::Datastore;
use aw_models::{Bucket, Event};
use chrono::{DateTime, Utc};

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

    fn flush(&self) -> Result<()> {
        Ok(self.force_commit().wait()?)
    }

    fn keeps_what_it_flushed(&self) -> bool {
        true
    }
}

#[cfg(feature = "cli")]
impl Server for aw_client_rust::blocking::AwClient {
    fn buckets(&self) -> Result<HashMap<String, Bucket>> {
        Ok(self.get_buckets()?)
    }

    fn create_bucket(&self, bucket: &Bucket) -> Result<()> {
        Ok(aw_client_rust::blocking::AwClient::create_bucket(
            self, bucket,
        )?)
    }

    fn events(
        &self,
        bucket: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
        limit: Option<u64>,
    ) -> Result<Vec<Event>> {
        Ok(self.get_events(bucket, start, end, limit)?)
    }

    fn event(&self, bucket: &str, id: i64) -> Result<Event> {
        Ok(self.get_event(bucket, id)?)
    }

    fn insert(&self, bucket: &str, events: Vec<Event>) -> Result<()> {
        Ok(self.insert_events(bucket, events)?)
    }
}
