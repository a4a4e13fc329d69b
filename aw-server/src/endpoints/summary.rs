//! `GET /api/0/summary`: "how long did I spend on X" for scripts, without writing a query,
//! with the numbers the built-in dashboard's Activity view shows.
//!
//! The time counted is the dashboard's window time while active: window events cut to the
//! AFK watcher's not-AFK time (extended by audible browser tabs; all window time for a host
//! without an AFK bucket), categorised with the user's categories (the `classes` setting,
//! else the defaults). It is the canonical desktop query (`aw_models::queries`), the one the
//! dashboard sends, so each number is the dashboard's; grouped by application, window
//! title, category or browser domain (browser time then), or per day or hour.
//!
//! Days begin at the user's day start (the `startOfDay` setting, default 04:00) and hours
//! on the hour, in `tz` (an IANA name or an offset; default the server's zone): a day of a
//! daylight-saving change has 23 or 25 hours. Each day or hour is its own period of the
//! query, so past ones are answered from the query cache; groups by a key over several
//! days are the sum of the days' groups, added up on the server (`aw_query::query_sum`),
//! so a year evaluates only the days written since it was last asked for.

use chrono::{DateTime, Duration, NaiveDateTime, NaiveTime, Timelike, Utc};
use rocket::serde::json::Json;
use rocket::State;
use serde::Serialize;
use serde_json::Value;

use aw_models::classes::{default_classes, Category};
use aw_models::queries::{self, DesktopQueryParams};
use aw_models::{timestamp, TimeInterval};

use crate::error::{ApiError, ApiResult};
use crate::params::{required_range, single};
use crate::state::AppState;
use crate::time_zone::Zone;

/// Groups answered at most.
const MAX_LIMIT: u64 = 10_000;

/// How the time is grouped: by a key of the events (one query over the whole range) or by
/// day or hour (one query period each, so past ones come from the cache).
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Key(Key),
    Period(Period),
}

/// The event keys time is grouped by; every `match` on it lists each, so a new one is
/// handled everywhere or does not compile.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    App,
    Title,
    Domain,
    Category,
}

/// The periods time is split into; every `match` on it lists each.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Period {
    Day,
    Hour,
}

impl By {
    /// The `by` parameter; absent is `app`, as the dashboard's first view.
    fn parse(text: Option<&str>) -> ApiResult<By> {
        Ok(match text {
            None | Some("app") => By::Key(Key::App),
            Some("title") => By::Key(Key::Title),
            Some("domain") => By::Key(Key::Domain),
            Some("category") => By::Key(Key::Category),
            Some("day") => By::Period(Period::Day),
            Some("hour") => By::Period(Period::Hour),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Unknown by '{other}': app, title, domain, category, day or hour"
                )))
            }
        })
    }
}

impl Key {
    /// The query's grouped events and the events whose durations make the total: browser
    /// time for domains, window time otherwise.
    fn query_parts(self) -> (&'static str, &'static str) {
        match self {
            Key::App => ("merge_events_by_keys(merge_events_by_keys(events, [\"app\", \"title\"]), [\"app\"])", "events"),
            Key::Title => ("merge_events_by_keys(events, [\"app\", \"title\"])", "events"),
            Key::Category => ("merge_events_by_keys(events, [\"$category\"])", "events"),
            Key::Domain => ("merge_events_by_keys(browser_events, [\"$domain\"])", "browser_events"),
        }
    }

    /// The keys the groups are merged by, as `aw_query::MergeKeys` names them for the
    /// `groups` list.
    fn merge_keys(self) -> aw_query::MergeKeys {
        let keys = match self {
            Key::App => vec!["app"],
            Key::Title => vec!["app", "title"],
            Key::Category => vec!["$category"],
            Key::Domain => vec!["$domain"],
        };
        aw_query::MergeKeys::Fields(
            [(
                "groups".to_string(),
                aw_query::MergeKeys::Keys(keys.into_iter().map(str::to_string).collect()),
            )]
            .into(),
        )
    }

    /// The data field whose value names a group.
    fn field(self) -> &'static str {
        match self {
            Key::App => "app",
            Key::Title => "title",
            Key::Category => "$category",
            Key::Domain => "$domain",
        }
    }
}

impl Period {
    /// From one boundary to the next, in local time.
    fn step(self) -> Duration {
        match self {
            Period::Day => Duration::days(1),
            Period::Hour => Duration::hours(1),
        }
    }

    /// The first boundary at or before the local time `local`.
    fn boundary_before(self, local: NaiveDateTime, day_start: NaiveTime) -> NaiveDateTime {
        match self {
            Period::Hour => local
                .date()
                .and_time(NaiveTime::from_hms_opt(local.time().hour(), 0, 0).unwrap_or_default()),
            Period::Day if local.time() >= day_start => local.date().and_time(day_start),
            Period::Day => local.date().and_time(day_start) - Duration::days(1),
        }
    }

    /// The group's key of the period beginning at the local time `naive`.
    fn label(self, naive: NaiveDateTime) -> String {
        match self {
            Period::Day => format!("{}", naive.format("%Y-%m-%d")),
            Period::Hour => format!("{}", naive.format("%Y-%m-%dT%H:00")),
        }
    }
}

/// The answer.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    /// The range, as given.
    start: String,
    end: String,
    /// The host whose buckets were read.
    hostname: String,
    /// Seconds in the range (browser time when grouped by domain).
    total: f64,
    /// The groups, longest first (days and hours in order).
    groups: Vec<Group>,
}

/// One group.
#[derive(Debug, Serialize)]
pub(crate) struct Group {
    key: String,
    seconds: f64,
}

/// The most days or hours one summary is split into (a century of days, eleven years of
/// hours): more is refused rather than cut short.
const MAX_PERIODS: usize = 100_000;

/// The instants where days (starting at `day_start`) or hours begin in `zone`, from the
/// one at or before `start` to the first after `end`.
fn boundaries(
    zone: &Zone,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    period: Period,
    day_start: NaiveTime,
) -> ApiResult<Vec<(String, DateTime<Utc>)>> {
    let step = period.step();
    // The first boundary at or before `start`, as a local time.
    let mut naive = period.boundary_before(zone.local(start), day_start);
    // In a gap the boundary can land after `start`: the one before it, then.
    if zone.instant(naive).is_some_and(|t| t > start) {
        naive -= step;
    }
    let mut out = Vec::new();
    loop {
        if let Some(at) = zone.instant(naive) {
            out.push((period.label(naive), at));
            if at > end {
                return Ok(out);
            }
        }
        if out.len() > MAX_PERIODS {
            return Err(ApiError::bad_request(format!(
                "The range has more than {MAX_PERIODS} days or hours: ask for a shorter one"
            )));
        }
        naive += step;
    }
}

/// The user's categories: the `classes` setting (a list, or a JSON text of one), else the
/// defaults; the day start: `startOfDay` (`HH:MM`), else 04:00. As the dashboard reads them.
async fn user_settings(state: &AppState) -> (Vec<Category>, NaiveTime) {
    let read = |key: &'static str| async move {
        state
            .datastore
            .get_key_value(&format!("settings.{key}"))
            .await
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    };
    let classes = match read("classes").await {
        Some(Value::String(text)) => serde_json::from_str(&text).ok(),
        Some(list @ Value::Array(_)) => serde_json::from_value(list).ok(),
        _ => None,
    }
    .unwrap_or_else(default_classes);
    let day_start = read("startOfDay")
        .await
        .and_then(|v| {
            v.as_str()
                .and_then(|s| NaiveTime::parse_from_str(s, "%H:%M").ok())
        })
        .unwrap_or_else(|| NaiveTime::from_hms_opt(4, 0, 0).unwrap_or_default());
    (classes, day_start)
}

/// Time per application, title, category, browser domain, day or hour.
#[rocket::get("/api/0/summary?<start>&<end>&<by>&<hostname>&<limit>&<tz>")]
pub(crate) async fn summary(
    start: Vec<&str>,
    end: Vec<&str>,
    by: Vec<&str>,
    hostname: Vec<&str>,
    limit: Vec<&str>,
    tz: Vec<&str>,
    state: &State<AppState>,
) -> ApiResult<Json<Summary>> {
    let (from, until) = required_range(&start, &end)?;
    let by = By::parse(single(&by, "by")?)?;
    let limit = parse_limit(single(&limit, "limit")?)?;
    let zone = Zone::parse(single(&tz, "tz")?).map_err(ApiError::bad_request)?;
    let buckets: Vec<aw_models::Bucket> =
        state.datastore.get_buckets().await?.into_values().collect();
    let host = match single(&hostname, "hostname")? {
        Some(host) => host.to_string(),
        None => queries::default_host(&buckets, &state.info.hostname).to_string(),
    };
    let ids = queries::host_buckets(&buckets, &host);
    let mut answer = Summary {
        start: timestamp::format(&from),
        end: timestamp::format(&until),
        hostname: host,
        total: 0.0,
        groups: Vec::new(),
    };
    if ids.window.is_empty() {
        return Ok(Json(answer));
    }
    let (classes, day_start) = user_settings(state).await;
    let params = DesktopQueryParams {
        bid_window: ids.window,
        bid_afk: ids.afk,
        bid_browsers: ids.browsers,
        bid_manual: ids.manual,
        classes,
        filter_afk: true,
        include_audible: true,
        ..Default::default()
    };
    let events = queries::try_canonical_events(&params)
        .map_err(|e| ApiError::bad_request(format!("The host's buckets cannot be queried: {e}")))?
        .join("\n");
    match by {
        By::Period(period) => {
            let cuts = boundaries(&zone, from, until, period, day_start)?;
            let code = format!("{events}\nRETURN = sum_durations(events);");
            let periods = periods_within(&cuts, from, until);
            let intervals: Vec<TimeInterval> = periods.iter().map(|(_, p)| p.clone()).collect();
            let results = run_query(state, Run::EachPeriod(code), intervals).await?;
            period_groups(&mut answer, periods, results);
        }
        By::Key(key) => {
            // The range as its days (each kept on its own), their groups added up.
            let cuts = boundaries(&zone, from, until, Period::Day, day_start)?;
            let intervals: Vec<TimeInterval> = periods_within(&cuts, from, until)
                .into_iter()
                .map(|(_, p)| p)
                .collect();
            let (merged, total) = key.query_parts();
            let code = format!(
                "{events}\nRETURN = {{\"total\": sum_durations({total}), \"groups\": {merged}}};"
            );
            let sum = Run::Sum {
                code,
                keys: key.merge_keys(),
                limit: usize::try_from(limit).unwrap_or(usize::MAX),
            };
            let results = run_query(state, sum, intervals).await?;
            key_groups(&mut answer, key, results);
        }
    }
    Ok(Json(answer))
}

/// The `limit` parameter: groups answered, 100 when absent.
fn parse_limit(text: Option<&str>) -> ApiResult<u64> {
    match text {
        None => Ok(100),
        Some(text) => text
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=MAX_LIMIT).contains(n))
            .ok_or_else(|| ApiError::bad_request(format!("limit must be 1 to {MAX_LIMIT}"))),
    }
}

/// The days or hours between consecutive `cuts`, clipped to `from..until`, each with its
/// key; empty ones are left out.
fn periods_within(
    cuts: &[(String, DateTime<Utc>)],
    from: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Vec<(String, TimeInterval)> {
    cuts.windows(2)
        .filter_map(|w| {
            let (lo, hi) = (w[0].1.max(from), w[1].1.min(until));
            (lo < hi).then(|| (w[0].0.clone(), TimeInterval::new(lo, hi)))
        })
        .collect()
}

/// How a summary's query runs over its periods.
enum Run {
    /// One result per period.
    EachPeriod(String),
    /// The periods' results added up into one (`aw_query::query_sum`), its `groups` merged
    /// by `keys` and cut to `limit`.
    Sum {
        code: String,
        keys: aw_query::MergeKeys,
        limit: usize,
    },
}

/// Runs the summary's query over `intervals` on the CPU pool, through the query cache and
/// within the query time limit, as `POST /api/0/query` (or `/query/sum`) does: one result
/// per interval, or their sum as one.
async fn run_query(
    state: &AppState,
    run: Run,
    intervals: Vec<TimeInterval>,
) -> ApiResult<Vec<Value>> {
    let source = crate::query_source::DatastoreSource(state.datastore.clone());
    let cache = state.query_cache.clone();
    let budget = state.query_timeout;
    // The background keeps still meanwhile (`period_fill.rs`).
    let _evaluating = state.period_fill.evaluating();
    let text = crate::cpu::run(move || {
        let deadline = budget.and_then(|b| std::time::Instant::now().checked_add(b));
        match run {
            Run::EachPeriod(code) => {
                aw_query::query_json(&code, &intervals, &source, deadline, cache.as_deref())
            }
            Run::Sum { code, keys, limit } => {
                let options = aw_query::SumOptions {
                    keys: Some(keys),
                    limit: Some(limit),
                    ..aw_query::SumOptions::default()
                };
                aw_query::query_sum(
                    &code,
                    &intervals,
                    &source,
                    deadline,
                    cache.as_deref(),
                    &options,
                )
                .map(|sum| format!("[{sum}]"))
            }
        }
    })
    .await?
    .map_err(ApiError::from)?;
    serde_json::from_str(&text).map_err(|e| ApiError::internal(e.to_string()))
}

/// One group per day or hour, in order; the total is their sum.
fn period_groups(answer: &mut Summary, periods: Vec<(String, TimeInterval)>, results: Vec<Value>) {
    for ((key, _), seconds) in periods.into_iter().zip(results) {
        let seconds = seconds.as_f64().unwrap_or(0.0);
        answer.total += seconds;
        answer.groups.push(Group { key, seconds });
    }
}

/// The groups of the one result, longest first, named by the key's value (a category's
/// path joined by " > "); the total is the query's.
fn key_groups(answer: &mut Summary, key: Key, results: Vec<Value>) {
    let result = results.into_iter().next().unwrap_or(Value::Null);
    answer.total = result["total"].as_f64().unwrap_or(0.0);
    let field = key.field();
    for event in result["groups"].as_array().into_iter().flatten() {
        let key = match &event["data"][field] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .map(|p| p.as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join(" > "),
            other => other.to_string(),
        };
        answer.groups.push(Group {
            key,
            seconds: event["duration"].as_f64().unwrap_or(0.0),
        });
    }
}
