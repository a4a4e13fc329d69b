//! What every handler shares: the datastore handle and fixed facts about this server.

use aw_datastore::Datastore;
use aw_models::Info;

/// Rocket managed state. No mutex anywhere: the datastore handle is a channel sender, the
/// rest is read-only.
pub struct AppState {
    /// The handle to the datastore worker.
    pub datastore: Datastore,
    /// Hostname, version, testing flag and device id, as `GET /api/0/info` shows them.
    pub info: Info,
    /// How long one query may evaluate (`None`: no limit).
    pub query_timeout: Option<std::time::Duration>,
}
