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
pub(crate) async fn bucket(bucket_id: &str, state: &State<AppState>) -> ApiResult<Attachment> {
    let bucket = state.datastore.get_bucket(bucket_id).await?;
    export(&state.datastore, vec![bucket]).await
}

/// Every bucket and all their events.
#[rocket::get("/api/0/export")]
pub(crate) async fn all(state: &State<AppState>) -> ApiResult<Attachment> {
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
    let body = crate::cpu::run(move || export_document(&parts)).await??;
    Ok(Attachment { filename, body })
}

/// Writes the export document for buckets with their event rows.
pub(crate) fn export_document(parts: &[(Bucket, EventRows)]) -> ApiResult<String> {
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

/// A bucket object with the fields of [`Bucket`] in its serialisation order (the
/// reference's), each serialised on its own, and `events` written from `rows` (spliced
/// stored text, no parse).
fn write_bucket(out: &mut String, bucket: &Bucket, rows: &EventRows) -> ApiResult<()> {
    let fields = [
        ("id", to_json(&bucket.id)?),
        ("type", to_json(&bucket._type)?),
        ("client", to_json(&bucket.client)?),
        ("hostname", to_json(&bucket.hostname)?),
        ("created", to_json(&bucket.created)?),
        ("data", to_json(&bucket.data)?),
        ("metadata", to_json(&bucket.metadata)?),
    ];
    out.push('{');
    for (key, value) in fields {
        out.push('"');
        out.push_str(key);
        out.push_str("\":");
        out.push_str(&value);
        out.push(',');
    }
    out.push_str("\"events\":");
    rows.write_json(out);
    out.push_str(",\"last_updated\":");
    out.push_str(&to_json(&bucket.last_updated)?);
    out.push('}');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aw_datastore::RawEvent;

    /// The hand-written object is exactly serde's serialisation of the same bucket, so the
    /// export keeps the API's bucket form whatever fields it has.
    #[test]
    fn a_written_bucket_equals_the_serialised_model() {
        let mut bucket: Bucket = serde_json::from_value(serde_json::json!({
            "id": "b \"q\"", "type": "t", "client": "c", "hostname": "h",
            "created": "2020-01-01T00:00:00.5Z", "data": {"k": [1, "x"]},
            "metadata": {"start": "2020-01-01T00:00:00Z", "end": null},
            "last_updated": "2021-01-01T00:00:00Z"
        }))
        .unwrap();
        let rows = EventRows(vec![
            RawEvent {
                id: 2,
                start: 1_000_000_000,
                end: 2_500_000_000,
                data: r#"{"a":1}"#.into(),
            },
            RawEvent {
                id: 1,
                start: 0,
                end: 0,
                data: "{}".into(),
            },
        ]);
        let mut written = String::new();
        write_bucket(&mut written, &bucket, &rows).unwrap();
        bucket.events = Some(rows.into_events());
        assert_eq!(written, serde_json::to_string(&bucket).unwrap());
    }
}
