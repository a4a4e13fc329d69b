//! Import of an export document, as a JSON body or a multipart file upload (the web UI's
//! form field `buckets.json`).
//!
//! New buckets are created with their events; events are merged into existing buckets
//! without duplicates, so importing a file twice changes nothing. Unlike the reference,
//! event ids in the file are ignored (new ids are assigned): an imported id must never
//! overwrite an event of another bucket.
//!
//! An import keeps what it can and says what it could not: every event that can be stored
//! is imported, and the 200 answer (clients expect 200) is a report,
//! `{"imported": n, "skipped": m, "problems": [{"bucket", "index", "reason"}, …]}` (the
//! first 100 problems), which is also logged and shown by the dashboard's importer. The
//! reference skipped such events silently. A document that is not an export document still
//! gets a 4xx.

use rocket::data::{Data, Limits};
use rocket::http::ContentType;
use rocket::State;

use aw_datastore::ImportProblem;
use serde::Serialize;

use crate::error::{ApiError, ApiResult};
use crate::json_body::{json_error, read_body_text};
use crate::responses::JsonText;
use crate::state::AppState;

/// `Content-Type: application/json`: the body is the export document.
#[rocket::post("/api/0/import", format = "json", data = "<data>")]
pub(crate) async fn json(
    data: Data<'_>,
    limits: &Limits,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    let text = read_body_text(limits, data, "json").await?;
    import(text, state).await
}

/// `Content-Type: multipart/form-data`: the field `buckets.json` (or `buckets`) holds the
/// export document; any other field is a 422.
#[rocket::post("/api/0/import", format = "multipart", data = "<data>", rank = 2)]
pub(crate) async fn multipart(
    content_type: &ContentType,
    data: Data<'_>,
    limits: &Limits,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    let boundary = content_type
        .params()
        .find(|(k, _)| *k == "boundary")
        .map(|(_, v)| v.to_string())
        .ok_or_else(|| ApiError::bad_request("multipart body without a boundary"))?;
    let limit = limits.get("data-form").unwrap_or(Limits::DATA_FORM);
    let mut form = multer::Multipart::with_reader(data.open(limit), boundary);
    let mut document = None;
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| ApiError::bad_request(format!("Invalid multipart body: {e}")))?
    {
        match field.name() {
            Some("buckets.json") | Some("buckets") => {
                let bytes = field
                    .bytes()
                    .await
                    .map_err(|e| ApiError::bad_request(format!("Invalid multipart body: {e}")))?;
                if bytes.len() as u64 >= limit.as_u64() {
                    return Err(ApiError::too_large("Import file is too large"));
                }
                let text = String::from_utf8(bytes.to_vec())
                    .map_err(|_| ApiError::bad_request("Import file is not UTF-8 text"))?;
                document = Some(text);
            }
            other => {
                return Err(ApiError::unprocessable(format!(
                    "Unexpected form field {:?}; send the file as 'buckets.json'",
                    other.unwrap_or("")
                )))
            }
        }
    }
    let text =
        document.ok_or_else(|| ApiError::unprocessable("Missing form field 'buckets.json'"))?;
    import(text, state).await
}

/// What an import did: the answer to `POST /api/0/import`.
#[derive(Serialize)]
struct ImportReport {
    /// Events of the document that are now stored (new, or already there).
    imported: u64,
    /// Events left out because they cannot be stored.
    skipped: u64,
    /// Why, for the first 100 of them.
    problems: Vec<ImportProblem>,
}

/// Parses the document on the CPU pool (a year of data is ~100 MB) and imports it.
async fn import(text: String, state: &State<AppState>) -> ApiResult<JsonText> {
    let document = crate::cpu::run(move || aw_datastore::parse_import_document(&text))
        .await?
        .map_err(json_error)?;
    let report = ImportReport {
        imported: document.events,
        skipped: document.skipped,
        problems: document.problems,
    };
    if report.skipped > 0 {
        log::warn!(
            "Import: {} events imported, {} skipped because they cannot be stored{}",
            report.imported,
            report.skipped,
            report.problems.first().map_or(String::new(), |p| format!(
                " (the first: event {} of bucket '{}': {})",
                p.index, p.bucket, p.reason
            ))
        );
    }
    state
        .datastore
        .import_rows(document.buckets)
        .await
        .map_err(ApiError::import_failed)?;
    let text = serde_json::to_string(&report).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(JsonText(text))
}
