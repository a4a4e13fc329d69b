//! Argument count and type checks with the reference's error messages.

use std::sync::Arc;

use serde_json::Number;

use crate::data::Val;
use crate::error::{QueryError, QueryResult};
use crate::event::QEvent;
use crate::value::DataType;

/// `Expected N parameters in function, got M`.
pub(super) fn count_error(expected: usize, got: usize) -> QueryError {
    QueryError::InvalidFunctionParameters(format!(
        "Expected {expected} parameters in function, got {got}"
    ))
}

/// The arguments as an array of exactly `N`, or the count error.
pub(super) fn arity<const N: usize>(args: Vec<DataType>) -> QueryResult<[DataType; N]> {
    let got = args.len();
    args.try_into().map_err(|_| count_error(N, got))
}

/// `Expected function parameter of type T, got X`.
pub(super) fn type_error(expected: &str, got: &DataType) -> QueryError {
    QueryError::InvalidFunctionParameters(format!(
        "Expected function parameter of type {expected}, got {}",
        got.describe()
    ))
}

/// `Expected function parameter of type List of T, list contains X`.
pub(super) fn element_error(expected: &str, got: &DataType) -> QueryError {
    QueryError::InvalidFunctionParameters(format!(
        "Expected function parameter of type List of {expected}, list contains {}",
        got.describe()
    ))
}

/// A list argument.
pub(super) fn list(v: DataType) -> QueryResult<Vec<DataType>> {
    v.into_list().map_err(|other| type_error("List", &other))
}

/// An event-list argument, to be changed: taken apart without copying the events, unless
/// the list is shared with a variable (then it is copied).
pub(super) fn events(v: DataType) -> QueryResult<Vec<QEvent>> {
    shared_events(v).map(Arc::unwrap_or_clone)
}

/// An event-list argument that is only read: the list a variable holds, not a copy.
pub(super) fn shared_events(v: DataType) -> QueryResult<Arc<Vec<QEvent>>> {
    let items = match v {
        DataType::Events(events) => return Ok(events),
        DataType::List(items) => items,
        other => return Err(type_error("List", &other)),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            DataType::Event(e) => out.push(e),
            other => return Err(element_error("Events", &other)),
        }
    }
    Ok(Arc::new(out))
}

/// A string argument.
pub(super) fn string(v: DataType) -> QueryResult<String> {
    match v {
        DataType::String(s) => Ok(s),
        other => Err(type_error("String", &other)),
    }
}

/// A number argument.
pub(super) fn number(v: &DataType) -> QueryResult<f64> {
    match v {
        DataType::Number(n) => Ok(*n),
        other => Err(type_error("Number", other)),
    }
}

/// A list-of-strings argument.
pub(super) fn strings(v: DataType) -> QueryResult<Vec<String>> {
    list(v)?
        .into_iter()
        .map(|item| match item {
            DataType::String(s) => Ok(s),
            other => Err(element_error("Strings", &other)),
        })
        .collect()
}

/// A list of values to compare with event data, as JSON (None → null, numbers as floats,
/// lists recursively). Dicts, events and functions are rejected.
pub(super) fn json_values(v: DataType) -> QueryResult<Vec<Val>> {
    list(v)?.into_iter().map(to_json_value).collect()
}

fn to_json_value(v: DataType) -> QueryResult<Val> {
    Ok(match v {
        DataType::None => Val::Null,
        DataType::Bool(b) => Val::Bool(b),
        // NaN and infinities have no JSON form; like serde_json, they become null.
        DataType::Number(n) => Number::from_f64(n).map(Val::Num).unwrap_or(Val::Null),
        DataType::String(s) => Val::Str(Arc::from(s)),
        DataType::List(items) => Val::Arr(
            items
                .into_iter()
                .map(to_json_value)
                .collect::<QueryResult<Vec<Val>>>()?
                .into(),
        ),
        other => {
            return Err(element_error(
                "Strings, Numbers, Bools, Nones or Lists",
                &other,
            ))
        }
    })
}
