//! Export of one bucket or of all, as a download.
//!
//! The document is `{"buckets": {"<id>": bucket-with-events}}`, events newest first with
//! their ids. Event JSON is spliced from the stored text, so exporting a year of data does
//! not parse and re-serialise every event. With `format=csv` (ours), a spreadsheet's CSV
//! instead, optionally of `[start, end]` only, written while it is sent (`csv_export.rs`).

use aw_datastore::{Datastore, EventRows};
use aw_models::Bucket;
use rocket::State;
use serde::Serialize;

use aw_models::timestamp;

use crate::csv_export::CsvExport;
use crate::error::{ApiError, ApiResult};
use crate::params::{parse_time, single};
use crate::responses::{Attachment, CsvDownload};
use crate::state::AppState;

/// What an export route answers: the JSON document, or a CSV.
#[derive(rocket::Responder)]
pub(crate) enum Download {
    /// The export document (the default, as the reference).
    Json(Attachment),
    /// The events as CSV.
    Csv(CsvDownload),
}

/// The export format asked for: `json` (also when absent) or `csv`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Csv,
}

/// A CSV export's range in ns (each end optional).
type Range = (Option<i64>, Option<i64>);

/// What an export route was asked for: the format and, for a CSV, the range.
fn asked(format: &[&str], start: &[&str], end: &[&str]) -> ApiResult<(Format, Range)> {
    Ok((format_of(format)?, csv_range(start, end)?))
}

fn format_of(values: &[&str]) -> ApiResult<Format> {
    match single(values, "format")? {
        None | Some("json") => Ok(Format::Json),
        Some("csv") => Ok(Format::Csv),
        Some(other) => Err(ApiError::bad_request(format!(
            "Unknown export format '{other}': json or csv"
        ))),
    }
}

/// One bucket and all its events (`format=csv`: as CSV, of `[start, end]` when given).
#[rocket::get("/api/0/buckets/<bucket_id>/export?<format>&<start>&<end>")]
pub(crate) async fn bucket(
    bucket_id: &str,
    format: Vec<&str>,
    start: Vec<&str>,
    end: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<Download> {
    let asked = asked(&format, &start, &end)?;
    let bucket = state.datastore.get_bucket(bucket_id).await?;
    let csv_name = format!("aw-bucket-export_{bucket_id}.csv");
    download(&state.datastore, asked, vec![bucket], csv_name).await
}

/// Every bucket and all their events (`format=csv`: as CSV, of `[start, end]` when given).
#[rocket::get("/api/0/export?<format>&<start>&<end>")]
pub(crate) async fn all(
    format: Vec<&str>,
    start: Vec<&str>,
    end: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<Download> {
    let asked = asked(&format, &start, &end)?;
    let mut buckets: Vec<Bucket> = state.datastore.get_buckets().await?.into_values().collect();
    buckets.sort_by(|a, b| a.id.cmp(&b.id));
    let csv_name = "aw-buckets-export.csv".to_string();
    download(&state.datastore, asked, buckets, csv_name).await
}

/// `buckets` in the format asked for (a CSV of the range, named `csv_name`).
async fn download(
    datastore: &Datastore,
    (format, range): (Format, Range),
    buckets: Vec<Bucket>,
    csv_name: String,
) -> ApiResult<Download> {
    match format {
        Format::Json => Ok(Download::Json(export(datastore, buckets).await?)),
        Format::Csv => Ok(Download::Csv(csv(datastore, csv_name, buckets, range))),
    }
}

/// `start` and `end` of a CSV export (each optional; the JSON export ignores them, as the
/// reference ignores unknown parameters).
fn csv_range(start: &[&str], end: &[&str]) -> ApiResult<Range> {
    let start = parse_time(single(start, "start")?, "starttime")?;
    let end = parse_time(single(end, "end")?, "endtime")?;
    if let (Some(start), Some(end)) = (start, end) {
        if start > end {
            return Err(ApiError::bad_request("start must not be after end"));
        }
    }
    Ok((
        start.as_ref().map(timestamp::to_ns_saturating),
        end.as_ref().map(timestamp::to_ns_saturating),
    ))
}

/// Starts writing the CSV of `buckets` on a blocking thread; the download sends it.
fn csv(
    datastore: &Datastore,
    filename: String,
    buckets: Vec<Bucket>,
    range: (Option<i64>, Option<i64>),
) -> CsvDownload {
    // A few chunks in flight: the writer waits for a slow client.
    let (send, chunks) = rocket::tokio::sync::mpsc::channel(4);
    let export = CsvExport {
        datastore: datastore.clone(),
        buckets,
        range,
    };
    rocket::tokio::task::spawn_blocking(move || {
        if let Err(e) = export.run(|chunk| send.blocking_send(Ok(chunk)).is_ok()) {
            log::warn!("CSV export cut short: {e}");
            // The body fails, so the client sees a broken download, not a short file.
            let _ = send.blocking_send(Err(std::io::Error::other(e.to_string())));
        }
    });
    CsvDownload { filename, chunks }
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
