//! `POST /api/0/query`: runs a query program over one or more time periods.

use aw_models::Query;
use rocket::State;

use crate::error::{ApiError, ApiResult};
use crate::json_body::JsonBody;
use crate::query_source::DatastoreSource;
use crate::responses::JsonText;
use crate::state::AppState;

/// One result per time period, in order; each period's result comes from the query cache
/// when no write has touched what it read since it was computed (`aw_query::ResultCache`). The program is the `query` lines joined with
/// `"\n"`. Query errors are 500 `{"message": "<Variant>(\"detail\")"}` as in the reference;
/// a malformed time period is rejected by the body parser with 422.
///
/// Evaluation runs on the CPU pool ([`crate::cpu::run`]): at most one query per core at a
/// time, at low priority, so cheap requests are never stuck behind them. A query that
/// evaluates longer than the config's `query_timeout` is stopped with
/// `500 {"message": "Timeout(\"…\")"}`, in the shape of every other query error.
#[rocket::post("/api/0/query", format = "json", data = "<body>")]
pub(crate) async fn query(body: JsonBody<Query>, state: &State<AppState>) -> ApiResult<JsonText> {
    let request = body.0;
    let source = DatastoreSource(state.datastore.clone());
    let budget = state.query_timeout;
    let cache = state.query_cache.clone();
    crate::cpu::run(move || {
        // The budget counts from the start of evaluation, not from the wait in line. A
        // budget too large to add to the clock is no limit.
        let deadline = budget.and_then(|b| std::time::Instant::now().checked_add(b));
        let code = request.query.join("\n");
        aw_query::query_json(
            &code,
            &request.timeperiods,
            &source,
            deadline,
            cache.as_deref(),
        )
        .map(JsonText)
        .map_err(ApiError::from)
    })
    .await?
}

/// `GET /api/0/query/cache`: the query-result cache's size and hit rate (ours only; the
/// reference has no cache). With the cache off (`query_cache_bytes = 0`), all zeros.
#[rocket::get("/api/0/query/cache")]
pub(crate) fn cache_stats(
    state: &State<AppState>,
) -> rocket::serde::json::Json<aw_query::CacheStats> {
    rocket::serde::json::Json(
        state
            .query_cache
            .as_ref()
            .map(|c| c.stats())
            .unwrap_or_default(),
    )
}
