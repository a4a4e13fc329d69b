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
    /// Values answered for each period besides the sum, by their paths in the result
    /// (`[["active"], ["window", "duration"]]`).
    each: Option<Vec<Vec<String>>>,
    /// Only remember the program and its periods, to be evaluated in the background at
    /// the lowest priority (`period_fill.rs`), and answer `null` at once: a dashboard
    /// that opens asks for the periods it may show, so the first look at them finds them
    /// ready.
    prepare: Option<bool>,
}

/// The most paths `each` may name.
const MAX_EACH: usize = 100;

/// The most events a list of a sum may be asked to keep.
const MAX_SUM_LIMIT: u64 = 1_000_000;

/// `POST /api/0/query/sum` (ours; the reference has no such route): the results of the
/// program over every period added up into one, on the server (`aw_query::query_sum`):
/// numbers summed, event lists merged by data (or by the `keys` named for them), longest
/// first and cut to `limit`. The dashboard asks for a week, month or year as its days, so
/// each day's result is evaluated once and kept in the query cache, and a write reaches
/// one day's only. With `each` (paths in the result), the answer is `{"sum", "each"}`:
/// the sum and those values of each period; with `prepare`, nothing is evaluated now (the
/// periods are kept ready in the background) and the answer is `null`. Errors as
/// `POST /api/0/query` (with `prepare`, a program that does not parse); a `limit` of 0
/// or over a million, `keys` not of the shape `{"field": {"list": ["key", …]}}`, or more
/// than 100 paths in `each` (or an empty one), is 400.
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
    let each = request.each.unwrap_or_default();
    if each.len() > MAX_EACH || each.iter().any(|path| path.is_empty() || path.len() > 32) {
        return Err(ApiError::bad_request(format!(
            "each: at most {MAX_EACH} paths, each of 1 to 32 keys"
        )));
    }
    let code: std::sync::Arc<str> = request.query.join("\n").into();
    if request.prepare == Some(true) {
        aw_query::check(&code).map_err(ApiError::from)?;
        remember(state, &code, request.keys.as_ref(), &request.timeperiods).await;
        return Ok(JsonText("null".into()));
    }
    let options = aw_query::SumOptions { keys, limit, each };
    let evaluating = state.period_fill.evaluating();
    let source = DatastoreSource(state.datastore.clone());
    let budget = state.query_timeout;
    let cache = state.query_cache.clone();
    let periods = std::sync::Arc::new(request.timeperiods);
    let (run_code, run_periods) = (code.clone(), periods.clone());
    let answer = crate::cpu::run(move || {
        let deadline = budget.and_then(|b| std::time::Instant::now().checked_add(b));
        aw_query::query_sum(
            &run_code,
            &run_periods,
            &source,
            deadline,
            cache.as_deref(),
            &options,
        )
        .map(JsonText)
        .map_err(ApiError::from)
    })
    .await??;
    drop(evaluating);
    remember(state, &code, request.keys.as_ref(), &periods).await;
    Ok(answer)
}

/// Keeps `code`'s `periods` ready from now on, also after a kill or an import
/// (`period_fill.rs`): saved before the caller answers.
async fn remember(
    state: &AppState,
    code: &str,
    keys: Option<&serde_json::Value>,
    periods: &[aw_models::TimeInterval],
) {
    if let Some(recipes) = state.period_fill.asked(code, keys, periods) {
        crate::period_fill::PeriodFill::save(&state.datastore, &recipes).await;
    }
}

/// What `GET /api/0/query/cache` answers.
#[derive(Debug, serde::Serialize)]
pub(crate) struct CacheReport {
    #[serde(flatten)]
    cache: aw_query::CacheStats,
    /// The period sums kept ready in the background (`period_fill.rs`).
    ready: crate::period_fill::FillStats,
}

/// `GET /api/0/query/cache`: the query-result cache's size and hit rate, and the days kept
/// ready for period sums (ours only; the reference has no cache). With the cache off
/// (`query_cache_bytes = 0`), all zeros.
#[rocket::get("/api/0/query/cache")]
pub(crate) fn cache_stats(state: &State<AppState>) -> rocket::serde::json::Json<CacheReport> {
    rocket::serde::json::Json(CacheReport {
        cache: state
            .query_cache
            .as_ref()
            .map(|c| c.stats())
            .unwrap_or_default(),
        ready: state.period_fill.stats(),
    })
}
