//! `POST /api/0/query`: runs a query program over one or more time periods.

use aw_models::Query;
use rocket::State;

use crate::error::{ApiError, ApiResult};
use crate::json_body::JsonBody;
use crate::query_source::DatastoreSource;
use crate::responses::JsonText;
use crate::state::AppState;

/// One result per time period, in order. The program is the `query` lines joined with
/// `"\n"`. Query errors are 500 `{"message": "<Variant>(\"detail\")"}` as in the reference;
/// a malformed time period is rejected by the body parser with 422.
///
/// Evaluation runs on the [`crate::query_pool::QueryPool`]: at most one query per core at
/// a time, at low priority, so cheap requests are never stuck behind them.
#[rocket::post("/api/0/query", format = "json", data = "<body>")]
pub async fn query(body: JsonBody<Query>, state: &State<AppState>) -> ApiResult<JsonText> {
    let request = body.0;
    let source = DatastoreSource(state.datastore.clone());
    state
        .queries
        .run(move || {
            let code = request.query.join("\n");
            let results = aw_query::query(&code, &request.timeperiods, &source)
                .map_err(|e| ApiError::internal(e.to_string()))?;
            serde_json::to_string(&results)
                .map(JsonText)
                .map_err(|e| ApiError::internal(e.to_string()))
        })
        .await?
}
