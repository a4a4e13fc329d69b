//! Creating, importing into and deleting buckets.

use aw_models::{Bucket, BucketMetadata};
use chrono::Utc;
use std::collections::HashSet;
use std::sync::Arc;

use super::created::created_to_text;
use super::Store;
use crate::error::{DatastoreError, Result};
use crate::new_event::NewEvent;
use crate::store::change::{Change, Changes, INSERT_BUCKET_SQL, NEW_ROW};
use crate::store::published::BucketShared;
use crate::store::range_read::RangeRead;
use crate::store::write_listeners::Touched;
use aw_models::raw_event::EventRows;

impl Store {
    /// Creates a bucket and inserts `events` into it as new events (their ids are ignored,
    /// so a bucket document can never overwrite another bucket's events).
    pub(crate) fn create_bucket(
        &mut self,
        changes: &mut Changes,
        mut bucket: Bucket,
        mut events: Vec<NewEvent>,
    ) -> Result<()> {
        if self.buckets.contains_key(&bucket.id) {
            return Err(DatastoreError::BucketAlreadyExists(bucket.id));
        }
        let created = *bucket.created.get_or_insert_with(Utc::now);
        let columns = [
            bucket.id.clone(),
            bucket._type.clone(),
            bucket.client.clone(),
            bucket.hostname.clone(),
            created_to_text(&created),
            serde_json::to_string(&bucket.data).unwrap_or_else(|_| "{}".into()),
        ];
        let [name, type_, client, hostname, created, data] = &columns;
        self.conn
            .prepare_cached(INSERT_BUCKET_SQL)?
            .execute(rusqlite::params![
                NEW_ROW, name, type_, client, hostname, created, data
            ])?;
        let row = self.conn.last_insert_rowid();
        changes.record(Change::CreateBucket {
            row,
            columns: Box::new(columns),
        });
        bucket.bid = Some(row);
        bucket.events = None;
        bucket.metadata = BucketMetadata::default();
        let shared = BucketShared::new(bucket.clone());
        // A new bucket has no events: its count is known.
        shared.set_count(0);
        self.buckets.insert(bucket.id.clone(), Arc::new(shared));
        self.publish();
        self.tell(Touched::Bucket(&bucket.id));
        for e in &mut events {
            e.id = None;
        }
        self.insert_events(changes, &bucket.id, events)?;
        Ok(())
    }

    /// Prepares an import: creates the missing buckets; for existing ones, plans the read of
    /// the events already stored in the imported span, whose copies the import then drops
    /// (see [`ImportBucket::drop_present`]), so that importing a file twice changes nothing.
    /// Event ids are cleared (an imported id must never address another bucket's event).
    pub(crate) fn prepare_import(
        &mut self,
        changes: &mut Changes,
        buckets: Vec<(Bucket, Vec<NewEvent>)>,
    ) -> Result<Vec<ImportBucket>> {
        let mut imports = Vec::with_capacity(buckets.len());
        for (bucket, mut events) in buckets {
            for e in &mut events {
                e.id = None;
            }
            let name = bucket.id.clone();
            let mut present = None;
            if !self.buckets.contains_key(&name) {
                self.create_bucket(changes, bucket, Vec::new())?;
            } else if let (Some(lo), Some(hi)) = (
                events.iter().map(|e| e.start.min(e.end)).min(),
                events.iter().map(|e| e.end.max(e.start)).max(),
            ) {
                present = Some(self.range_read(&name, Some(lo), Some(hi), None, false)?);
            }
            imports.push(ImportBucket {
                name,
                events,
                present,
            });
        }
        Ok(imports)
    }

    /// Deletes a bucket and all its events.
    pub(crate) fn delete_bucket(&mut self, changes: &mut Changes, name: &str) -> Result<()> {
        let bid = self.bucketrow(name)?;
        changes.apply(&self.conn, Change::DeleteBucket { row: bid })?;
        self.buckets.remove(name);
        self.publish();
        self.last_heartbeat.remove(&bid);
        self.tell(Touched::Bucket(name));
        Ok(())
    }
}

impl Store {
    /// Renames bucket `name` to `new_name` and/or moves it to host `new_host`; its events,
    /// count and span stay. Fails with [`DatastoreError::BucketAlreadyExists`] when
    /// `new_name` is another bucket's id.
    pub(crate) fn rename_bucket(
        &mut self,
        changes: &mut Changes,
        name: &str,
        new_name: Option<&str>,
        new_host: Option<&str>,
    ) -> Result<()> {
        let bid = self.bucketrow(name)?;
        let new_name = new_name.unwrap_or(name);
        if new_name != name && self.buckets.contains_key(new_name) {
            return Err(DatastoreError::BucketAlreadyExists(new_name.to_string()));
        }
        let old = Arc::clone(self.state(name)?);
        let new_host = new_host.unwrap_or(&old.bucket().hostname);
        changes.apply(
            &self.conn,
            Change::RenameBucket {
                row: bid,
                name: new_name.to_string(),
                hostname: new_host.to_string(),
            },
        )?;
        self.buckets.remove(name);
        self.buckets.insert(
            new_name.to_string(),
            Arc::new(old.renamed(new_name, new_host)),
        );
        self.publish();
        self.last_heartbeat.remove(&bid);
        self.tell(Touched::Bucket(name));
        self.tell(Touched::Bucket(new_name));
        Ok(())
    }
}

/// One bucket of an import in progress.
pub(crate) struct ImportBucket {
    /// The bucket's id.
    pub name: String,
    /// The events still to insert.
    pub events: Vec<NewEvent>,
    /// For a bucket that existed, the read of its events in the imported span (run in
    /// steps like any long read, so a re-import of a year never holds the worker long).
    pub present: Option<RangeRead>,
}

impl ImportBucket {
    /// Drops the events already stored (same start, end and data) from `events`.
    pub(crate) fn drop_present(&mut self, stored: &EventRows) {
        let seen: HashSet<(i64, i64, &str)> = stored
            .0
            .iter()
            .map(|e| (e.start, e.end, e.data.as_str()))
            .collect();
        self.events
            .retain(|e| !seen.contains(&(e.start, e.end, e.data.as_str())));
    }
}
