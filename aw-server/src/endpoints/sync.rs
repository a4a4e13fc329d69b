//! `GET /api/0/sync`: the built-in sync's state (ours only; the reference has no built-in
//! sync). Needs the API key like the rest of `/api/`.

use rocket::serde::json::Json;
use rocket::State;

use crate::builtin_sync::SyncStatus;
use crate::state::AppState;

/// Whether the server syncs, with which folder, the devices seen, the last push and pull,
/// and the last pass's errors.
#[rocket::get("/api/0/sync")]
pub(crate) fn status(state: &State<AppState>) -> Json<SyncStatus> {
    Json(state.sync.status())
}
