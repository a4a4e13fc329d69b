//! Export of one bucket or of all, as a download.
//!
//! The document is `{"buckets": {"<id>": bucket-with-events}}`, events newest first with
//! their ids. Event JSON is spliced from the stored text, so exporting a year of data does
//! not parse and re-serialise every event.

use aw_datastore::{Datastore, EventRows};
use aw_models::Bucket;
use rocket::State;
use serde::Serialize;

use crate::error::{ApiError, ApiResult};
use crate::responses::Attachment;
use crate::state::AppState;

/// One bucket and all its events.
#[rocket::get("/api/0/buckets/<bucket_id>/export")]
pub async fn bucket(bucket_id: &str, state: &State<AppState>) -> ApiResult<Attachment> {
    let bucket = state.datastore.get_bucket(bucket_id).await?;
    export(&state.datastore, vec![bucket]).await
}

/// Every bucket and all their events.
#[rocket::get("/api/0/export")]
pub async fn all(state: &State<AppState>) -> ApiResult<Attachment> {
    let mut buckets: Vec<Bucket> = state.datastore.get_buckets().await?.into_values().collect();
    buckets.sort_by(|a, b| a.id.cmp(&b.id));
    export(&state.datastore, buckets).await
}

async fn export(datastore: &Datastore, buckets: Vec<Bucket>) -> ApiResult<Attachment> {
    let mut parts = Vec::with_capacity(buckets.len());
    for bucket in buckets {
        let rows = datastore.get_events(&bucket.id, None, None, None).await?;
        parts.push((bucket, rows));
    }
    let filename = match parts.as_slice() {
        [(only, _)] => format!("aw-bucket-export_{}.json", only.id),
        _ => "aw-buckets-export.json".to_string(),
    };
    let body = rocket::tokio::task::spawn_blocking(move || export_document(&parts))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))??;
    Ok(Attachment { filename, body })
}

/// Writes the export document for buckets with their event rows.
pub fn export_document(parts: &[(Bucket, EventRows)]) -> ApiResult<String> {
    let size: usize = parts.iter().map(|(_, rows)| rows.json_capacity()).sum();
    let mut out = String::with_capacity(size + 64);
    out.push_str("{\"buckets\":{");
    for (i, (bucket, rows)) in parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&to_json(&bucket.id)?);
        out.push(':');
        write_bucket(&mut out, bucket, rows)?;
    }
    out.push_str("}}");
    Ok(out)
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> ApiResult<String> {
    serde_json::to_string(value).map_err(|e| ApiError::internal(e.to_string()))
}

/// A bucket object in the reference's key order with `events` filled from `rows`.
fn write_bucket(out: &mut String, bucket: &Bucket, rows: &EventRows) -> ApiResult<()> {
    let mut head = bucket.clone();
    head.events = None;
    let text = to_json(&head)?;
    // The serialised bucket ends with `"events":null,"last_updated":…}`; put the events
    // where the null is, keeping the reference's key order.
    let marker = ",\"events\":null,\"last_updated\":";
    let at = text
        .rfind(marker)
        .ok_or_else(|| ApiError::internal("unexpected bucket serialisation"))?;
    out.push_str(&text[..at]);
    out.push_str(",\"events\":");
    rows.write_json(out);
    out.push_str(&text[at + ",\"events\":null".len()..]);
    Ok(())
}
