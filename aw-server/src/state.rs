//! What every handler shares: the datastore handle and fixed facts about this server.

use aw_datastore::Datastore;
use aw_models::Info;

/// Rocket managed state. The datastore handle is a channel sender; the query cache has
/// its own short lock (held for map look-ups only); the rest is read-only.
pub(crate) struct AppState {
    /// The handle to the datastore worker.
    pub datastore: Datastore,
    /// Hostname, version, testing flag and device id, as `GET /api/0/info` shows them.
    pub info: Info,
    /// How long one query may evaluate (`None`: no limit).
    pub query_timeout: Option<std::time::Duration>,
    /// Query results per (program, period), dropped by the datastore's writes (`None`: off).
    pub query_cache: Option<std::sync::Arc<aw_query::ResultCache>>,
    /// The watch for the results the last run kept, from the open until the server listens
    /// and reads them back (`query_source::restore_cache`).
    pub cache_restore: std::sync::Mutex<Option<aw_query::RestoreTicket>>,
    /// The period sums kept ready in the background (`period_fill.rs`).
    pub period_fill: std::sync::Arc<crate::period_fill::PeriodFill>,
    /// The sync with other devices built into the server (see `builtin_sync.rs`; off without a
    /// `[sync]` folder).
    pub sync: std::sync::Arc<crate::builtin_sync::BackgroundSync>,
    /// The database's backups (see `backups.rs`).
    pub backups: std::sync::Arc<crate::backups::Backups>,
    /// The last measure of what takes the space (`storage.rs`).
    pub storage: std::sync::Arc<crate::storage::Storage>,
    /// How many requests are being handled (`shutdown.rs`), for `GET /api/0/health`.
    pub requests_in_flight: crate::shutdown::RequestsInFlight,
    /// The database file (for the restore command an undoable operation names).
    pub db_path: std::path::PathBuf,
    /// Held by an operation that rewrites stored history (`endpoints/history.rs`), so two
    /// run one after the other, each with its own backup.
    pub rewrites: std::sync::Arc<rocket::tokio::sync::Mutex<()>>,
}

impl AppState {
    /// What a retention run needs (`retention.rs`).
    pub(crate) fn retention(&self) -> crate::retention::Retention {
        crate::retention::Retention {
            datastore: self.datastore.clone(),
            backups: self.backups.clone(),
            db_path: self.db_path.clone(),
            rewrites: self.rewrites.clone(),
        }
    }
}
