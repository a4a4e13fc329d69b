//! The query engine's view of the datastore, and what keeps its result cache correct.

use aw_datastore::{Changed, Datastore, DatastoreError, Touched, WriteListener};
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

/// The query-result cache of `budget` bytes, kept correct by `datastore`'s writes and
/// kept beside the database (when `Datastore::save_derived_state` asks, and at a clean
/// stop; `restore_cache` reads it back); `None` when the budget is 0 (the cache is off).
pub(crate) fn attach_cache(datastore: &Datastore, budget: u64) -> Option<Arc<ResultCache>> {
    if budget == 0 {
        return None;
    }
    let cache = Arc::new(ResultCache::new(
        usize::try_from(budget).unwrap_or(usize::MAX),
    ));
    datastore.add_write_listener(Arc::new(DropStaleResults(cache.clone())));
    let saved = cache.clone();
    // Worked out now: at the stop the executable may be a newer one a package manager put
    // in its place, whose engine did not compute these results.
    let identity = build_identity();
    datastore.keep_derived_state(Box::new(move |allowance| {
        // A stop right after the start: the results of the last run are still being
        // read back, and an export now would keep only part of them (a few ms; bounded).
        saved.wait_restored(std::time::Duration::from_secs(2));
        saved.export(identity, allowance)
    }));
    Some(cache)
}

/// Reads back into the cache `ticket` was taken from the results the last run kept (when
/// every write since they were kept is known: `Datastore::take_derived_state`), but those
/// the writes since reached, on a thread of its own. `ticket` must have been taken once the datastore was open and
/// before anything else could write: a write from then on still reaches the results it
/// could change.
pub(crate) fn restore_cache(datastore: &Datastore, ticket: aw_query::RestoreTicket) {
    let datastore = datastore.clone();
    let spawned = std::thread::Builder::new()
        .name("aw-cache-restore".into())
        .spawn(move || {
            let restored = restore_now(&datastore, ticket);
            log::info!("Query results kept from the last run: {restored} read back");
        });
    if let Err(e) = spawned {
        log::warn!("Cannot read back the kept query results: {e}");
    }
}

/// [`restore_cache`]'s work, on the caller's thread: how many results were read back.
pub(crate) fn restore_now(datastore: &Datastore, ticket: aw_query::RestoreTicket) -> usize {
    let Some(kept) = datastore.take_derived_state() else {
        return 0;
    };
    log::debug!(
        "Regions written since the results were kept: {:?}",
        kept.changed
    );
    // Heard by the ticket's watch: the results these writes reach are not read back.
    let cache = ticket.cache();
    for changed in &kept.changed {
        match changed {
            Changed::Events { bucket, start, end } => cache.events_changed(bucket, *start, *end),
            Changed::Bucket(bucket) => cache.bucket_changed(bucket),
            Changed::Everything => cache.clear(),
        }
    }
    ticket.restore(&kept.bytes, build_identity())
}

/// This build of the server, for the kept results (`aw_query::ResultCache::export`): a
/// result is only as right as the engine that computed it, and a rebuilt engine may
/// compute another, even at the same version. The executable's size and modification
/// time stand for its build, as they were when the process first asked (at its start).
fn build_identity() -> &'static str {
    static IDENTITY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IDENTITY.get_or_init(identify_build)
}

fn identify_build() -> String {
    let exe = std::env::current_exe().and_then(std::fs::metadata);
    match exe {
        Ok(meta) => {
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!(
                "aw-server {} ({} bytes, {modified})",
                env!("CARGO_PKG_VERSION"),
                meta.len()
            )
        }
        // Without the executable's identity nothing kept can be trusted to be this build's.
        Err(_) => format!(
            "aw-server {} (unknown build {})",
            env!("CARGO_PKG_VERSION"),
            std::process::id()
        ),
    }
}
