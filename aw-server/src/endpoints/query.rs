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

/// The body of `POST /api/0/query/sum`: a query's, and how many events each list keeps.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct SumRequest {
    /// The periods whose results are added up (the days of a week, month or year).
    timeperiods: Vec<aw_models::TimeInterval>,
    /// The program, as lines.
    query: Vec<String>,
    /// Events kept in each list of the sum, longest first (all when absent).
    limit: Option<u64>,
    /// The keys each list was merged by in the program, where it is in the result
    /// (`aw_query::MergeKeys`): such a list is added up by those keys.
    keys: Option<serde_json::Value>,
}

/// The most events a list of a sum may be asked to keep.
const MAX_SUM_LIMIT: u64 = 1_000_000;

/// `POST /api/0/query/sum` (ours; the reference has no such route): the results of the
/// program over every period added up into one, on the server (`aw_query::query_sum`):
/// numbers summed, event lists merged by data (or by the `keys` named for them), longest
/// first and cut to `limit`. The dashboard asks for a week, month or year as its days, so
/// each day's result is evaluated once and kept in the query cache, and a write reaches
/// one day's only. Errors as `POST /api/0/query`; a `limit` of 0 or over a million, or
/// `keys` not of the shape `{"field": {"list": ["key", …]}}`, is 400.
#[rocket::post("/api/0/query/sum", format = "json", data = "<body>")]
pub(crate) async fn sum(
    body: JsonBody<SumRequest>,
    state: &State<AppState>,
) -> ApiResult<JsonText> {
    let request = body.0;
    let limit = match request.limit {
        None => None,
        Some(n @ 1..=MAX_SUM_LIMIT) => usize::try_from(n).ok(),
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "limit must be 1 to {MAX_SUM_LIMIT}"
            )))
        }
    };
    let keys = match &request.keys {
        None => None,
        Some(keys) => Some(
            aw_query::MergeKeys::from_json(keys)
                .map_err(|e| ApiError::bad_request(format!("keys: {e}")))?,
        ),
    };
    let source = DatastoreSource(state.datastore.clone());
    let budget = state.query_timeout;
    let cache = state.query_cache.clone();
    crate::cpu::run(move || {
        let deadline = budget.and_then(|b| std::time::Instant::now().checked_add(b));
        let code = request.query.join("\n");
        aw_query::query_sum(
            &code,
            keys.as_ref(),
            &request.timeperiods,
            &source,
            deadline,
            cache.as_deref(),
            limit,
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
