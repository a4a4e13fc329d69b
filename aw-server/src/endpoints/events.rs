//! Events of a bucket: list, insert, count, get one, delete one, heartbeat.

use aw_datastore::RawEvent;
use aw_models::Event;
use rocket::http::Status;
use rocket::State;

use crate::error::ApiResult;
use crate::json_body::JsonBody;
use crate::params::{parse_limit, parse_time, single};
use crate::responses::{Empty, JsonText};
use crate::state::AppState;

/// Responses with more events than this are serialised on the CPU pool.
const INLINE_JSON_ROWS: usize = 2_000;

/// Events overlapping `[start, end]`, clipped, newest first, at most `limit`.
#[rocket::get("/api/0/buckets/<bucket_id>/events?<start>&<end>&<limit>")]
pub(crate) async fn list(
    bucket_id: &str,
    start: Vec<&str>,
    end: Vec<&str>,
    limit: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    let start = parse_time(single(&start, "start")?, "starttime")?;
    let end = parse_time(single(&end, "end")?, "endtime")?;
    let limit = parse_limit(single(&limit, "limit")?);
    let rows = state
        .datastore
        .get_events(bucket_id, start, end, limit)
        .await?;
    if rows.len() <= INLINE_JSON_ROWS {
        return Ok(JsonText(rows.to_json()));
    }
    crate::cpu::run(move || JsonText(rows.to_json())).await
}

/// Inserts events (a JSON array); an event with an `id` replaces that event of this bucket.
/// Answers the stored events with their ids. An empty array is `[]` even for a missing bucket.
#[rocket::post(
    "/api/0/buckets/<bucket_id>/events",
    format = "json",
    data = "<events>"
)]
pub(crate) async fn insert(
    bucket_id: &str,
    events: JsonBody<Vec<Event>>,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    let stored = state.datastore.insert_events(bucket_id, &events.0).await?;
    Ok(JsonText(aw_datastore::EventRows(stored).to_json()))
}

/// The number of events overlapping `[start, end]` (all without them), as a bare integer.
#[rocket::get("/api/0/buckets/<bucket_id>/events/count?<start>&<end>")]
pub(crate) async fn count(
    bucket_id: &str,
    start: Vec<&str>,
    end: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    let start = parse_time(single(&start, "start")?, "starttime")?;
    let end = parse_time(single(&end, "end")?, "endtime")?;
    let n = state
        .datastore
        .get_event_count(bucket_id, start, end)
        .await?;
    Ok(JsonText(n.to_string()))
}

/// One event; 404 when the bucket has no such event.
#[rocket::get("/api/0/buckets/<bucket_id>/events/<event_id>", rank = 2)]
pub(crate) async fn get_one(
    bucket_id: &str,
    event_id: i64,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    event_json(&state.datastore.get_event(bucket_id, event_id).await?)
}

/// Replaces an event's timestamp, duration and data (ours: the reference has no edit); 404
/// when the bucket has no such event, never an insert. Answers the stored event.
#[rocket::put(
    "/api/0/buckets/<bucket_id>/events/<event_id>",
    format = "json",
    data = "<event>"
)]
pub(crate) async fn replace_one(
    bucket_id: &str,
    event_id: i64,
    event: JsonBody<Event>,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    let stored = state
        .datastore
        .replace_event(bucket_id, event_id, &event.0)
        .await?;
    event_json(&stored)
}

/// One stored event as the response; a 500 (not an empty body) when its data is damaged.
fn event_json(row: &RawEvent) -> ApiResult<JsonText> {
    row.to_json().map(JsonText).ok_or_else(|| {
        crate::error::ApiError::internal(format!("event {} has unreadable data", row.id))
    })
}

/// Deletes one event; deleting an id the bucket does not have is a success.
#[rocket::delete("/api/0/buckets/<bucket_id>/events/<event_id>")]
pub(crate) async fn delete_one(
    bucket_id: &str,
    event_id: i64,
    state: &State<AppState>,
) -> ApiResult<Empty> {
    state
        .datastore
        .delete_events_by_id(bucket_id, vec![event_id])
        .await?;
    Ok(Empty(Status::Ok))
}

/// Merges the heartbeat into the bucket's last event when it continues it (same data,
/// within `pulsetime` seconds of its end), else stores it as a new event; answers the result.
#[rocket::post(
    "/api/0/buckets/<bucket_id>/heartbeat?<pulsetime>",
    format = "json",
    data = "<event>"
)]
pub(crate) async fn heartbeat(
    bucket_id: &str,
    pulsetime: f64,
    event: JsonBody<Event>,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    event_json(
        &state
            .datastore
            .heartbeat(bucket_id, &event.0, pulsetime)
            .await?,
    )
}
