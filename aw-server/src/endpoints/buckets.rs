//! Buckets: list, get, create, delete.

use aw_models::Bucket;
use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::State;
use std::collections::HashMap;

use crate::error::ApiResult;
use crate::json_body::JsonBody;
use crate::responses::Empty;
use crate::state::AppState;

/// Every bucket, keyed by id.
#[rocket::get("/api/0/buckets")]
pub(crate) async fn list(state: &State<AppState>) -> ApiResult<Json<HashMap<String, Bucket>>> {
    Ok(Json(state.datastore.get_buckets().await?))
}

/// One bucket.
#[rocket::get("/api/0/buckets/<bucket_id>")]
pub(crate) async fn get(bucket_id: &str, state: &State<AppState>) -> ApiResult<Json<Bucket>> {
    Ok(Json(state.datastore.get_bucket(bucket_id).await?))
}

/// Creates a bucket: 200 empty, or 304 when it exists (clients treat that as success).
/// The path id wins over a body `id`; hostname `!local` becomes this server's hostname and
/// the bucket's `data.device_id` this server's device id.
#[rocket::post("/api/0/buckets/<bucket_id>", format = "json", data = "<body>")]
pub(crate) async fn create(
    bucket_id: &str,
    body: JsonBody<Bucket>,
    state: &State<AppState>,
) -> ApiResult<Empty> {
    let mut bucket = body.0;
    bucket.id = bucket_id.to_string();
    if bucket.hostname == "!local" {
        bucket.hostname = state.info.hostname.clone();
        bucket
            .data
            .insert("device_id".into(), state.info.device_id.clone().into());
    }
    state.datastore.create_bucket(&bucket).await?;
    Ok(Empty(Status::Ok))
}

/// Deletes a bucket and its events (`?force=1` is accepted and not needed).
#[rocket::delete("/api/0/buckets/<bucket_id>")]
pub(crate) async fn delete(bucket_id: &str, state: &State<AppState>) -> ApiResult<Empty> {
    state.datastore.delete_bucket(bucket_id).await?;
    Ok(Empty(Status::Ok))
}
