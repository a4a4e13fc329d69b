//! `GET /api/0/info`.

use rocket::serde::json::Json;
use rocket::State;

use crate::state::AppState;

/// Hostname, version, testing flag and device id. Exempt from the API key.
#[rocket::get("/api/0/info")]
pub(crate) fn info(state: &State<AppState>) -> Json<aw_models::Info> {
    Json(state.info.clone())
}
