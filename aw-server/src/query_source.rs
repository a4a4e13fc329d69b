//! The query engine's view of the datastore.

use aw_datastore::{Datastore, DatastoreError};
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

    fn buckets(&self) -> Result<HashMap<String, Bucket>, DataSourceError> {
        self.0.get_buckets().wait().map_err(source_error)
    }
}
