//! The sync routes (ours only; the reference has no built-in sync). Need the API key like
//! the rest of `/api/`.
//!
//! `GET /api/0/sync` is the built-in sync's state. The others are what the `aw-sync`
//! program asks of our server so that its passes carry deletions, edits, renames and
//! merges (aw-sync's `day_table.rs`): the day digests of a bucket, the days of another
//! device's bucket applied here, applying one more, and scrubbing after text was removed.
//! The sync built into the server does the same on its datastore, without HTTP.

use std::collections::BTreeMap;

use aw_datastore::{DayDigest, PulledDayApplied};
use aw_sync::DayToApply;
use rocket::serde::json::Json;
use rocket::State;

use crate::builtin_sync::SyncStatus;
use crate::error::{ApiError, ApiResult};
use crate::json_body::JsonBody;
use crate::state::AppState;

/// Whether the server syncs, with which folder, the devices seen, the last push and pull,
/// and the last pass's errors.
#[rocket::get("/api/0/sync")]
pub(crate) fn status(state: &State<AppState>) -> Json<SyncStatus> {
    Json(state.sync.status())
}

/// The digest of each day of the bucket that has events, oldest first: kept between calls
/// and corrected by every write, so a call after a change recomputes only its days (the
/// first call reads the bucket once).
#[rocket::get("/api/0/buckets/<bucket_id>/days")]
pub(crate) async fn day_digests(
    bucket_id: &str,
    state: &State<AppState>,
) -> ApiResult<Json<Vec<DayDigest>>> {
    state.datastore.get_bucket(bucket_id).await?;
    let (sync, datastore, bucket) = (
        state.sync.clone(),
        state.datastore.clone(),
        bucket_id.to_string(),
    );
    let days = rocket::tokio::task::spawn_blocking(move || {
        sync.digest_cache(&datastore).digests(&datastore, &bucket)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the digests were not computed: {e}")))?
    .map_err(sync_error)?;
    Ok(Json(days.into_values().collect()))
}

/// The days of bucket `source` of device `device` applied to its copy here, with the
/// digest applied of each (an object from day to digest; `{}` when none).
/// 400 without `device` or `source`.
#[rocket::get("/api/0/sync/applied?<device>&<source>")]
pub(crate) async fn applied_days(
    device: Option<&str>,
    source: Option<&str>,
    state: &State<AppState>,
) -> ApiResult<Json<BTreeMap<i64, String>>> {
    let (Some(device), Some(source)) = (device, source) else {
        return Err(ApiError::bad_request(
            "both `device` and `source` are required",
        ));
    };
    let key = aw_sync::AppliedDays::new(device, source).index_key();
    match state.datastore.get_key_value(&key).await {
        Ok(text) => Ok(Json(serde_json::from_str(&text).unwrap_or_default())),
        Err(aw_datastore::DatastoreError::NoSuchKey(_)) => Ok(Json(BTreeMap::new())),
        Err(e) => Err(e.into()),
    }
}

/// Applies one day of another device's bucket to its pulled copy here, all or nothing.
/// 400 unless `bucket` is this server's copy of bucket `source` of device `device` (a
/// peer can change only its own copies).
#[rocket::post("/api/0/sync/apply", format = "json", data = "<body>")]
pub(crate) async fn apply_day(
    body: JsonBody<DayToApply>,
    state: &State<AppState>,
) -> ApiResult<Json<PulledDayApplied>> {
    let day = body.0;
    let bucket = state.datastore.get_bucket(&day.bucket).await?;
    let text = |key: &str| bucket.data.get(key).and_then(|v| v.as_str());
    if text("$aw.sync.device") != Some(day.device.as_str())
        || text("$aw.sync.source") != Some(day.source.as_str())
    {
        return Err(ApiError::bad_request(format!(
            "Bucket '{}' is not this server's copy of bucket '{}' of device '{}'",
            day.bucket, day.source, day.device
        )));
    }
    let pulled = day
        .into_pulled_day()
        .map_err(|e| ApiError::unprocessable(e.to_string()))?;
    Ok(Json(state.datastore.apply_pulled_day(pulled).await?))
}

/// Commits, checkpoints the WAL into the database and truncates it, and zeroes the journal:
/// after a pull removed text another device removed from its history, none of it stays
/// readable beside the database (as after a privacy run).
#[rocket::post("/api/0/sync/scrub")]
pub(crate) async fn scrub(state: &State<AppState>) -> ApiResult<Json<serde_json::Value>> {
    state.datastore.scrub().await?;
    Ok(Json(serde_json::json!({})))
}

/// A sync failure as an answer: the datastore's own errors keep their status.
fn sync_error(e: aw_sync::SyncError) -> ApiError {
    match e {
        aw_sync::SyncError::Datastore(e) => e.into(),
        other => ApiError::internal(other.to_string()),
    }
}
