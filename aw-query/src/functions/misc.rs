//! `contains` and `print`.

use super::args::{arity, type_error};
use crate::error::{QueryError, QueryResult};
use crate::value::DataType;

/// `contains(list, x)`: deep membership; `contains(dict, key)`: key presence.
pub(super) fn contains(args: Vec<DataType>) -> QueryResult<DataType> {
    let [container, x] = arity::<2>(args)?;
    match container {
        DataType::List(items) => Ok(DataType::Bool(items.iter().any(|i| i.deep_eq(&x)))),
        DataType::Events(events) => Ok(DataType::Bool(match &x {
            DataType::Event(e) => events.iter().any(|i| i.query_eq(e)),
            _ => false,
        })),
        DataType::Dict(map) => match x {
            DataType::String(key) => Ok(DataType::Bool(map.contains_key(&key))),
            other => Err(type_error("String", &other)),
        },
        other => Err(QueryError::InvalidFunctionParameters(format!(
            "Expected function parameter of type List or Dict, got {}",
            other.describe()
        ))),
    }
}

/// `print(a, …)`: logs every argument at info level and returns None.
pub(super) fn print(args: Vec<DataType>) -> QueryResult<DataType> {
    for a in &args {
        log::info!("query print: {}", a.describe());
    }
    Ok(DataType::None)
}
