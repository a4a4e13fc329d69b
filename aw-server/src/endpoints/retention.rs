//! `POST /api/0/retention/apply`: the retention rules (the `retention_rules` setting) on the
//! stored history, by hand (`retention.rs` has the run and the daily schedule). Ours only.

use rocket::serde::json::Json;
use rocket::State;

use crate::error::ApiResult;
use crate::json_body::JsonBody;
use crate::retention::RetentionAnswer;
use crate::state::AppState;

/// The body of `POST /api/0/retention/apply`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetentionAsked {
    /// Only count, change nothing.
    dry_run: bool,
    /// One count per rule of the setting, as a preview counted: a rule that would now
    /// change more events ends the run with 409, nothing changed.
    #[serde(default)]
    expect: Option<Vec<u64>>,
}

/// Applies the enabled retention rules: a dry run answers per rule the events and seconds
/// it would delete or redact, with samples and the buckets it would leave empty; the run
/// takes a backup, changes them all or nothing (never more events per rule than the
/// preview counted), leaves none of the removed text readable beside the file, gives the
/// free pages back, and is recorded in `GET /api/0/storage`. 400 for a setting that does
/// not validate (naming the rule) or more counts than rules; 409 when a rule would change
/// more events than `expect` says, or delete every event of a bucket without
/// `all_of_bucket`; 500 `backup_failed` when the backup cannot be taken.
#[rocket::post("/api/0/retention/apply", format = "json", data = "<body>")]
pub(crate) async fn apply(
    body: JsonBody<RetentionAsked>,
    state: &State<AppState>,
) -> ApiResult<Json<RetentionAnswer>> {
    let RetentionAsked { dry_run, expect } = body.0;
    let answer = state.retention().apply(dry_run, expect, false).await?;
    Ok(Json(answer))
}
