//! `GET /api/0/backups` lists the database's backups; `POST /api/0/backups` takes one now
//! (the dashboard's button and `aw-server backup` use it). Ours only; both need the API key
//! like the rest of `/api/`.

use rocket::serde::json::Json;
use rocket::State;

use crate::backups::{BackupEntry, BackupStatus};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The backup settings, every backup (newest first, with size, time and verdict) and the
/// last attempt.
#[rocket::get("/api/0/backups")]
pub(crate) fn list(state: &State<AppState>) -> Json<BackupStatus> {
    Json(state.backups.status())
}

/// Takes a verified backup now and answers with it: 507 when the disk is too full for it,
/// 500 when copying or verifying failed.
#[rocket::post("/api/0/backups")]
pub(crate) async fn take(state: &State<AppState>) -> ApiResult<Json<BackupEntry>> {
    let backups = state.backups.clone();
    let taken = rocket::tokio::task::spawn_blocking(move || backups.take_now())
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(Json(taken?))
}
