//! The query engine's view of the datastore, and what keeps its result cache correct.

use aw_datastore::{Datastore, DatastoreError, Touched, WriteListener};
use aw_models::Bucket;
use aw_query::ResultCache;
use aw_query::{DataSource, DataSourceError, RowChunks};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Arc;

/// Serves `query_bucket`/`find_bucket` from the datastore. Used on the CPU pool's threads
/// (query evaluation never runs on the async thread), so it may wait for the worker.
pub(crate) struct DatastoreSource(pub Datastore);

/// The datastore's error as the engine sees it, its kind kept when a client is told of it.
fn source_error(e: DatastoreError) -> DataSourceError {
    match (crate::error::storage_trouble(&e), e) {
        (_, DatastoreError::NoSuchBucket(id)) => DataSourceError::NoSuchBucket(id),
        (Some(trouble), other) => DataSourceError::Trouble(trouble, other.to_string()),
        (None, other) => DataSourceError::Other(other.to_string()),
    }
}

impl DataSource for DatastoreSource {
    /// Rows with their stored data texts, a read step at a time: the engine interns each
    /// part (parsing each distinct text once) while the worker reads the next.
    fn query_bucket_rows(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> RowChunks<'_> {
        let parts = self.0.stream_events(bucket_id, Some(start), Some(end));
        Box::new(parts.map(|part| part.map_err(source_error)))
    }

    fn buckets(&self) -> Result<HashMap<String, Bucket>, DataSourceError> {
        self.0.get_buckets().wait().map_err(source_error)
    }
}

/// Makes every datastore write drop the cached query results it could change: the
/// datastore tells the cache before it answers the write (`aw_datastore::WriteListener`).
struct DropStaleResults(Arc<ResultCache>);

impl WriteListener for DropStaleResults {
    fn touched(&self, change: Touched<'_>) {
        match change {
            Touched::Events { bucket, start, end } => self.0.events_changed(bucket, start, end),
            Touched::Bucket(bucket) => self.0.bucket_changed(bucket),
            Touched::Everything => self.0.clear(),
        }
    }
}

/// The query-result cache of `budget` bytes, kept correct by `datastore`'s writes; `None`
/// when the budget is 0 (the cache is off).
pub(crate) fn attach_cache(datastore: &Datastore, budget: u64) -> Option<Arc<ResultCache>> {
    if budget == 0 {
        return None;
    }
    let cache = Arc::new(ResultCache::new(
        usize::try_from(budget).unwrap_or(usize::MAX),
    ));
    datastore.add_write_listener(Arc::new(DropStaleResults(cache.clone())));
    Some(cache)
}
