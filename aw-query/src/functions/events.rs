//! The event-list built-ins: argument checking around the [`transforms`](crate::transforms).

use super::args::{arity, events, json_values, number, shared_events, string, strings};
use crate::error::QueryResult;
use crate::transforms::{chunk, filter, flood as fl, merge, period, sort, split_url, union};
use crate::value::DataType;

/// `flood(events)`.
pub(super) fn flood(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e] = arity::<1>(args)?;
    Ok(DataType::from_events(fl::flood(events(e)?)))
}

/// `merge_events_by_keys(events, keys)`.
pub(super) fn merge_events_by_keys(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e, keys] = arity::<2>(args)?;
    let e = shared_events(e)?;
    let keys = strings(keys)?;
    let merged = merge::merge_events_by_keys(&e, &keys);
    crate::reaper::drop_later(e);
    Ok(DataType::from_events(merged))
}

/// `chunk_events_by_key(events, key)`.
pub(super) fn chunk_events_by_key(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e, key] = arity::<2>(args)?;
    let e = events(e)?;
    let key = string(key)?;
    Ok(DataType::from_events(chunk::chunk_events_by_key(e, &key)))
}

/// `sort_by_duration(events)`.
pub(super) fn sort_by_duration(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e] = arity::<1>(args)?;
    Ok(DataType::from_events(sort::sort_by_duration(events(e)?)))
}

/// `sort_by_timestamp(events)`.
pub(super) fn sort_by_timestamp(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e] = arity::<1>(args)?;
    Ok(DataType::from_events(sort::sort_by_timestamp(events(e)?)))
}

/// `sum_durations(events)`.
pub(super) fn sum_durations(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e] = arity::<1>(args)?;
    let e = shared_events(e)?;
    let total = sort::sum_durations(&e);
    // Often the last use of a large list: free it off the query's thread.
    crate::reaper::drop_later(e);
    Ok(DataType::Number(total))
}

/// `limit_events(events, n)`.
pub(super) fn limit_events(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e, n] = arity::<2>(args)?;
    let e = events(e)?;
    let n = number(&n)?;
    Ok(DataType::from_events(sort::limit_events(e, n)))
}

/// `filter_keyvals(events, key, values)` (`keep`) and `exclude_keyvals` (`!keep`).
pub(super) fn filter_keyvals(args: Vec<DataType>, keep: bool) -> QueryResult<DataType> {
    let [e, key, values] = arity::<3>(args)?;
    let e = shared_events(e)?;
    let key = string(key)?;
    let values = json_values(values)?;
    Ok(DataType::from_events(filter::filter_keyvals(
        e, &key, &values, keep,
    )))
}

/// `filter_period_intersect(events, filter)`.
pub(super) fn filter_period_intersect(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e, f] = arity::<2>(args)?;
    let e = events(e)?;
    let f = events(f)?;
    Ok(DataType::from_events(period::filter_period_intersect(e, f)))
}

/// `period_union(events1, events2)`.
pub(super) fn period_union(args: Vec<DataType>) -> QueryResult<DataType> {
    let [a, b] = arity::<2>(args)?;
    let a = events(a)?;
    let b = events(b)?;
    Ok(DataType::from_events(period::period_union(a, b)))
}

/// `union_no_overlap(events1, events2)`.
pub(super) fn union_no_overlap(args: Vec<DataType>) -> QueryResult<DataType> {
    let [a, b] = arity::<2>(args)?;
    let a = events(a)?;
    let b = events(b)?;
    Ok(DataType::from_events(union::union_no_overlap(a, b)))
}

/// `split_url_events(events)`.
pub(super) fn split_url_events(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e] = arity::<1>(args)?;
    Ok(DataType::from_events(split_url::split_url_events(events(
        e,
    )?)))
}

/// `concat(l1, l2, …)`: any number of event lists, concatenated in order.
pub(super) fn concat(args: Vec<DataType>) -> QueryResult<DataType> {
    let mut out = Vec::new();
    for a in args {
        out.extend(events(a)?);
    }
    Ok(DataType::from_events(out))
}
