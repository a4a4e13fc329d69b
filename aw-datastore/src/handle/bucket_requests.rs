//! The requests about buckets: create, delete, read, rename, merge, import.

use aw_models::Bucket;
use std::collections::HashMap;

use crate::error::DatastoreError;
use crate::handle::{Answer, Datastore};
use crate::new_event::NewEvent;
use crate::store::Merge;
use crate::worker::Request;

impl Datastore {
    /// Creates a bucket; its `events`, if any, are inserted as new events.
    /// Fails with [`DatastoreError::BucketAlreadyExists`] when the id is taken.
    pub fn create_bucket(&self, bucket: &Bucket) -> Answer<()> {
        let events = match bucket.events.as_deref().map(NewEvent::from_events) {
            Some(Err(e)) => return Answer::ready(e),
            Some(Ok(events)) => events,
            None => Vec::new(),
        };
        let mut bucket = bucket.clone();
        bucket.events = None;
        self.ask(|r| Request::CreateBucket(Box::new(bucket), events, r))
    }

    /// Deletes a bucket and all its events.
    pub fn delete_bucket(&self, bucket_id: &str) -> Answer<()> {
        self.ask(|r| Request::DeleteBucket(bucket_id.to_string(), r))
    }

    /// One bucket, with `metadata` (first start, last end).
    pub fn get_bucket(&self, bucket_id: &str) -> Answer<Bucket> {
        self.read_published(|buckets| {
            buckets
                .get(bucket_id)
                .map(|b| b.to_bucket())
                .ok_or_else(|| DatastoreError::NoSuchBucket(bucket_id.to_string()))
        })
    }

    /// Every bucket by id.
    pub fn get_buckets(&self) -> Answer<HashMap<String, Bucket>> {
        self.read_published(|buckets| {
            Ok(buckets
                .iter()
                .map(|(name, b)| (name.clone(), b.to_bucket()))
                .collect())
        })
    }

    /// Renames bucket `bucket_id` to `new_id` and/or moves it to host `new_hostname`.
    /// Fails with [`DatastoreError::BucketAlreadyExists`] when `new_id` is taken.
    pub fn rename_bucket(
        &self,
        bucket_id: &str,
        new_id: Option<&str>,
        new_hostname: Option<&str>,
    ) -> Answer<()> {
        self.ask(|reply| Request::RenameBucket {
            bucket: bucket_id.to_string(),
            name: new_id.map(str::to_string),
            hostname: new_hostname.map(str::to_string),
            reply,
        })
    }

    /// Moves every event of bucket `from` into bucket `into` (events `into` holds already,
    /// same start, end and data, are not doubled) and deletes `from`, all or nothing.
    /// Fails with [`DatastoreError::InvalidEvent`] when their types differ.
    pub fn merge_buckets(&self, from: &str, into: &str) -> Answer<Merge> {
        self.ask(|reply| Request::MergeBuckets {
            from: from.to_string(),
            into: into.to_string(),
            reply,
        })
    }

    /// Imports buckets with their events: new buckets are created, existing ones get the
    /// events they do not have yet. Event ids in the documents are ignored.
    pub fn import_buckets(&self, buckets: Vec<Bucket>) -> Answer<()> {
        let mut rows = Vec::with_capacity(buckets.len());
        for mut bucket in buckets {
            let events = match bucket.events.take().map(|e| NewEvent::from_events(&e)) {
                Some(Err(e)) => return Answer::ready(e),
                Some(Ok(events)) => events,
                None => Vec::new(),
            };
            rows.push((bucket, events));
        }
        self.import_rows(rows)
    }

    /// [`Datastore::import_buckets`] for buckets whose events are already converted, e.g. by
    /// [`crate::parse_import_document`].
    pub fn import_rows(&self, buckets: Vec<(Bucket, Vec<NewEvent>)>) -> Answer<()> {
        self.ask(|r| Request::Import(buckets, r))
    }
}
