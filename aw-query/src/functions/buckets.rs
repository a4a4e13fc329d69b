//! `query_bucket`, `query_bucket_names`, `find_bucket`: the functions that read the
//! [`DataSource`](crate::DataSource).

use aw_models::TimeInterval;

use super::args::{arity, count_error, string};
use super::CallContext;
use crate::error::{QueryError, QueryResult};
use crate::value::DataType;

/// The interval `query_bucket` reads, from the current value of `TIMEINTERVAL`.
fn current_interval(ctx: &CallContext<'_>) -> QueryResult<TimeInterval> {
    match ctx.timeinterval {
        None => Err(QueryError::TimeIntervalError(
            "TIMEINTERVAL is not defined".to_string(),
        )),
        Some(DataType::String(s)) => s.parse::<TimeInterval>().map_err(|e| {
            QueryError::TimeIntervalError(format!("Failed to parse TIMEINTERVAL: {e}"))
        }),
        Some(other) => Err(QueryError::TimeIntervalError(format!(
            "TIMEINTERVAL is not a string: {}",
            other.describe()
        ))),
    }
}

/// `query_bucket(bucket_id)`: the bucket's events in the current interval, newest first.
pub(super) fn query_bucket(
    args: Vec<DataType>,
    ctx: &mut CallContext<'_>,
) -> QueryResult<DataType> {
    let [id] = arity::<1>(args)?;
    let id = string(id)?;
    let interval = current_interval(ctx)?;
    let failed = |e| QueryError::from_source("Failed to query bucket", &e);
    let (start, end) = (*interval.start(), *interval.end());
    let parts = ctx.ds.query_bucket_rows(&id, start, end);
    let (events, bytes) = crate::event::intern_rows(parts).map_err(failed)?;
    ctx.state.loaded_bytes = bytes;
    Ok(DataType::from_events(events))
}

/// `query_bucket_names()`: all bucket ids (sorted, for stable output).
pub(super) fn query_bucket_names(
    args: Vec<DataType>,
    ctx: &CallContext<'_>,
) -> QueryResult<DataType> {
    let [] = arity::<0>(args)?;
    let buckets = ctx
        .ds
        .buckets()
        .map_err(|e| QueryError::from_source("Failed to get buckets", &e))?;
    let mut ids: Vec<String> = buckets.into_keys().collect();
    ids.sort();
    Ok(DataType::List(
        ids.into_iter().map(DataType::String).collect(),
    ))
}

/// `find_bucket(prefix[, hostname])`: the bucket called exactly `prefix` if it exists,
/// otherwise the (alphabetically first) bucket whose id starts with `prefix`; with a
/// hostname, only buckets of that host qualify.
pub(super) fn find_bucket(args: Vec<DataType>, ctx: &CallContext<'_>) -> QueryResult<DataType> {
    let n = args.len();
    if !(1..=2).contains(&n) {
        return Err(count_error(if n == 0 { 1 } else { 2 }, n));
    }
    let mut it = args.into_iter();
    let prefix = string(it.next().unwrap_or(DataType::None))?;
    let hostname = match it.next() {
        Some(h) => Some(string(h)?),
        None => None,
    };
    let buckets = ctx
        .ds
        .buckets()
        .map_err(|e| QueryError::from_source("Failed to get buckets", &e))?;
    let host_ok = |b: &aw_models::Bucket| hostname.as_ref().is_none_or(|h| &b.hostname == h);
    if buckets.get(&prefix).is_some_and(host_ok) {
        return Ok(DataType::String(prefix));
    }
    let found = buckets
        .iter()
        .filter(|(id, b)| id.starts_with(prefix.as_str()) && host_ok(b))
        .map(|(id, _)| id)
        .min();
    match (found, &hostname) {
        (Some(id), _) => Ok(DataType::String(id.clone())),
        (None, None) => Err(QueryError::BucketQueryError(
            format!("Failed to find bucket matching filter '{prefix}'").into(),
        )),
        (None, Some(h)) => Err(QueryError::BucketQueryError(
            format!("Failed to find bucket matching filter '{prefix}' and hostname '{h}'").into(),
        )),
    }
}
