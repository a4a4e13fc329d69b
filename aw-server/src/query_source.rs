//! The query engine's view of the datastore.

use aw_datastore::{Datastore, DatastoreError};
use aw_models::RawEvent;
use aw_models::{Bucket, Event};
use aw_query::{DataSource, DataSourceError};
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// Serves `query_bucket`/`find_bucket` from the datastore. Used on blocking-pool threads
/// (query evaluation never runs on an async worker), so it may wait for the worker.
pub struct DatastoreSource(pub Datastore);

fn source_error(e: DatastoreError) -> DataSourceError {
    match e {
        DatastoreError::NoSuchBucket(id) => DataSourceError::NoSuchBucket(id),
        other => DataSourceError::Other(other.to_string()),
    }
}

impl DataSource for DatastoreSource {
    fn query_bucket(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<Event>, DataSourceError> {
        let rows = self
            .0
            .get_events(bucket_id, Some(start), Some(end), None)
            .wait()
            .map_err(source_error)?;
        Ok(rows.into_events())
    }

    /// Rows with their stored data text: the engine parses each distinct text once.
    fn query_bucket_rows(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Option<Result<Vec<RawEvent>, DataSourceError>> {
        let rows = self
            .0
            .get_events(bucket_id, Some(start), Some(end), None)
            .wait();
        Some(rows.map_err(source_error).map(|rows| rows.0))
    }

    fn buckets(&self) -> Result<HashMap<String, Bucket>, DataSourceError> {
        self.0.get_buckets().wait().map_err(source_error)
    }
}
