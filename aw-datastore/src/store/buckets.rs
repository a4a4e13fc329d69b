//! Creating, importing into and deleting buckets.

use aw_models::{Bucket, BucketMetadata};
use chrono::Utc;
use std::collections::HashSet;
use std::sync::Arc;

use super::{created_to_text, Store};
use crate::batch::{Batch, Change, INSERT_BUCKET_SQL, NEW_ROW};
use crate::error::{DatastoreError, Result};
use crate::new_event::NewEvent;
use crate::range_read::RangeRead;
use crate::shared::BucketShared;
use crate::write_listeners::Touched;
use aw_models::raw_event::EventRows;

impl Store {
    /// Creates a bucket and inserts `events` into it as new events (their ids are ignored,
    /// so a bucket document can never overwrite another bucket's events).
    pub(crate) fn create_bucket(
        &mut self,
        batch: &mut Batch,
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
        batch.record(Change::CreateBucket {
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
        self.insert_events(batch, &bucket.id, events)?;
        Ok(())
    }

    /// Prepares an import: creates the missing buckets; for existing ones, plans the read of
    /// the events already stored in the imported span, whose copies the import then drops
    /// (see [`ImportBucket::drop_present`]), so that importing a file twice changes nothing.
    /// Event ids are cleared (an imported id must never address another bucket's event).
    pub(crate) fn prepare_import(
        &mut self,
        batch: &mut Batch,
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
                self.create_bucket(batch, bucket, Vec::new())?;
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
    pub(crate) fn delete_bucket(&mut self, batch: &mut Batch, name: &str) -> Result<()> {
        let bid = self.bucketrow(name)?;
        batch.apply(&self.conn, Change::DeleteBucket { row: bid })?;
        self.buckets.remove(name);
        self.publish();
        self.last_heartbeat.remove(&bid);
        self.tell(Touched::Bucket(name));
        Ok(())
    }
}

/// What merging one bucket into another did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Merge {
    /// Events moved into the bucket that stays.
    pub moved: u64,
    /// Events the bucket that stays held already (same start, end and data): deleted with
    /// the bucket merged away.
    pub duplicates: u64,
}

impl Store {
    /// Renames bucket `name` to `new_name` and/or moves it to host `new_host`; its events,
    /// count and span stay. Fails with [`DatastoreError::BucketAlreadyExists`] when
    /// `new_name` is another bucket's id.
    pub(crate) fn rename_bucket(
        &mut self,
        batch: &mut Batch,
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
        batch.apply(
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

    /// Moves every event of bucket `from` into bucket `into` (those `into` holds already
    /// are dropped) and deletes `from`. Fails with [`DatastoreError::InvalidEvent`] when
    /// the two are of different types, or are the same bucket.
    pub(crate) fn merge_buckets(
        &mut self,
        batch: &mut Batch,
        from: &str,
        into: &str,
    ) -> Result<Merge> {
        let (from_row, into_row) = (self.bucketrow(from)?, self.bucketrow(into)?);
        if from_row == into_row {
            return Err(DatastoreError::InvalidEvent(format!(
                "cannot merge bucket '{into}' into itself"
            )));
        }
        let (from_state, into_state) =
            (Arc::clone(self.state(from)?), Arc::clone(self.state(into)?));
        if from_state.bucket()._type != into_state.bucket()._type {
            return Err(DatastoreError::InvalidEvent(format!(
                "cannot merge '{from}' (type '{}') into '{into}' (type '{}'): the types differ",
                from_state.bucket()._type,
                into_state.bucket()._type
            )));
        }
        let total: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM events WHERE bucketrow = ?1")?
            .query_row([from_row], |r| r.get(0))?;
        let moved: i64 = self
            .conn
            .prepare_cached(crate::batch::COUNT_NEW_EVENTS_SQL)?
            .query_row([from_row, into_row], |r| r.get(0))?;
        let (total, moved) = (total.max(0) as u64, moved.max(0) as u64);
        batch.apply(
            &self.conn,
            Change::MergeBuckets {
                from: from_row,
                into: into_row,
            },
        )?;
        into_state.add_count(moved);
        if let Some((start, end)) = from_state.span() {
            into_state.widen(start, end);
        }
        self.buckets.remove(from);
        self.publish();
        self.last_heartbeat.remove(&from_row);
        self.last_heartbeat.remove(&into_row);
        self.tell(Touched::Bucket(from));
        self.tell(Touched::Bucket(into));
        Ok(Merge {
            moved,
            duplicates: total - moved.min(total),
        })
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
