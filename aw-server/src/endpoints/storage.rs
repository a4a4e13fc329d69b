//! `GET /api/0/storage`: what takes the space (`storage.rs`); `POST /api/0/storage/reclaim`:
//! the free pages given back. Ours only; they need the API key like the rest of `/api/`.

use rocket::serde::json::Json;
use rocket::State;

use crate::backups::BackupError;
use crate::error::{ApiError, ApiResult};
use crate::params::single;
use crate::state::AppState;
use crate::storage::StorageReport;

/// The files' sizes, the free space inside the database, and the last measure of the
/// events per bucket and per year with when it was taken. `fresh=true` measures now and
/// waits for it (a second or so for a year of events); otherwise a measure older than ten
/// minutes is started in the background and the answer says `measuring`. 400 for a `fresh`
/// that is neither `true` nor `false`; 503 when there is no backup connection to measure
/// over (the server is stopping).
#[rocket::get("/api/0/storage?<fresh>")]
pub(crate) async fn report(
    fresh: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<Json<StorageReport>> {
    let fresh = match single(&fresh, "fresh")? {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "The query parameter 'fresh' must be true or false, not '{other}'"
            )))
        }
    };
    let (storage, backups, db) = (
        state.storage.clone(),
        state.backups.clone(),
        state.db_path.clone(),
    );
    if !fresh {
        return Ok(Json(storage.report(&state.datastore, &db, &backups)));
    }
    let datastore = state.datastore.clone();
    let report = rocket::tokio::task::spawn_blocking(move || {
        storage.report_fresh(&datastore, &db, &backups)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the storage was not measured: {e}")))?;
    report.map(Json).map_err(|e| match e {
        BackupError::Unavailable(_) => ApiError::unavailable(e.to_string()),
        other => ApiError::internal(other.to_string()),
    })
}

/// What `POST /api/0/storage/reclaim` answers.
#[derive(Debug, serde::Serialize)]
pub(crate) struct ReclaimAnswer {
    /// What the datastore did (pages before and after, free pages left).
    #[serde(flatten)]
    pub reclaimed: aw_datastore::Reclaimed,
    /// The database file's size before, in bytes.
    pub file_bytes_before: u64,
    /// Its size after.
    pub file_bytes_after: u64,
    /// How long it took, in milliseconds.
    pub took_ms: u64,
}

/// Gives the free pages inside the database back to the file system while serving: moved
/// in steps between other requests, then the WAL copied into the file and truncated. 409
/// when the file cannot (made by the reference or an older version of ours, in
/// `auto_vacuum=NONE` mode): `aw-server compact`, with the server stopped, converts it.
#[rocket::post("/api/0/storage/reclaim")]
pub(crate) async fn reclaim(state: &State<AppState>) -> ApiResult<Json<ReclaimAnswer>> {
    let size = |path: &std::path::Path| std::fs::metadata(path).map_or(0, |m| m.len());
    let began = std::time::Instant::now();
    let file_bytes_before = size(&state.db_path);
    let reclaimed = state.datastore.reclaim_space().await?;
    if !reclaimed.incremental {
        return Err(ApiError::conflict(
            "This database file keeps its free pages (auto_vacuum is off: it was made by the \
             reference or an older version). Stop the server and run `aw-server compact` once \
             to convert it; from then on its space can be given back while serving.",
        ));
    }
    Ok(Json(ReclaimAnswer {
        reclaimed,
        file_bytes_before,
        file_bytes_after: size(&state.db_path),
        took_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
    }))
}
