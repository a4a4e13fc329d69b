//! Values of the query language and their JSON serialisation.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use serde_json::Value;

use crate::builtin::Builtin;
use crate::error::{QueryError, QueryResult};
use crate::event::QEvent;

/// The most deeply nested list/dict value a program may build. Keeps every recursive walk
/// over values (comparison, serialisation, dropping) within [`crate::EVAL_STACK`].
pub const MAX_VALUE_DEPTH: usize = 10_000;

/// Descriptions of values in error messages are cut after about this many bytes.
const DESCRIBE_BUDGET: usize = 1000;

/// A query-language value.
#[derive(Clone, Debug)]
pub(crate) enum DataType {
    /// The result of `print` (there is no literal for it).
    None,
    /// `true` / `false`.
    Bool(bool),
    /// Every number is a 64-bit float.
    Number(f64),
    /// A string.
    String(String),
    /// One event.
    Event(QEvent),
    /// A list; "events" are lists whose every element is an event.
    List(Vec<DataType>),
    /// A list of events, kept as plain events so that event lists move through the built-in
    /// functions without per-element conversion. Semantically it is exactly a `List` whose
    /// elements are all `Event`s: same type, same equality, same JSON.
    ///
    /// Shared: reading a variable where it is not the variable's last use shares its list
    /// instead of copying a year of events, and the functions that only read a list (merging,
    /// filtering, summing) read the shared one. A function that changes a list copies it then,
    /// only if it is still shared (`functions::args::events`).
    Events(Arc<Vec<QEvent>>),
    /// A dict with string keys (sorted, which is also the output order).
    Dict(BTreeMap<String, DataType>),
    /// A built-in function.
    Function(Builtin),
}

impl DataType {
    /// A list of events.
    pub(crate) fn from_events(events: Vec<QEvent>) -> DataType {
        DataType::Events(Arc::new(events))
    }

    /// The elements of a `List` or `Events` value as general values; `None` for other types.
    pub(crate) fn into_list(self) -> Result<Vec<DataType>, DataType> {
        match self {
            DataType::List(items) => Ok(items),
            DataType::Events(events) => Ok(Arc::unwrap_or_clone(events)
                .into_iter()
                .map(DataType::Event)
                .collect()),
            other => Err(other),
        }
    }

    /// Short rendering for error messages, e.g. `Number(1)`, `String("a")`, `List([…])`.
    pub(crate) fn describe(&self) -> String {
        let mut out = String::new();
        self.describe_into(&mut out);
        if out.len() > DESCRIBE_BUDGET {
            let mut cut = DESCRIBE_BUDGET;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
        }
        out
    }

    fn describe_into(&self, out: &mut String) {
        if out.len() > DESCRIBE_BUDGET {
            return;
        }
        match self {
            DataType::None => out.push_str("None"),
            DataType::Bool(b) => {
                let _ = write!(out, "Bool({b})");
            }
            DataType::Number(n) => {
                let _ = write!(out, "Number({n})");
            }
            DataType::String(s) => {
                let shown: String = s.chars().take(200).collect();
                let _ = write!(out, "String({shown:?})");
            }
            DataType::Event(e) => {
                let _ = write!(out, "Event({})", e.to_json());
            }
            DataType::List(items) => {
                out.push_str("List([");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if i >= 10 || out.len() > DESCRIBE_BUDGET {
                        let _ = write!(out, "… {} more", items.len() - i);
                        break;
                    }
                    item.describe_into(out);
                }
                out.push_str("])");
            }
            DataType::Events(events) => {
                out.push_str("List([");
                for (i, e) in events.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if i >= 10 || out.len() > DESCRIBE_BUDGET {
                        let _ = write!(out, "… {} more", events.len() - i);
                        break;
                    }
                    let _ = write!(out, "Event({})", e.to_json());
                }
                out.push_str("])");
            }
            DataType::Dict(map) => {
                out.push_str("Dict({");
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if i >= 10 || out.len() > DESCRIBE_BUDGET {
                        let _ = write!(out, "… {} more", map.len() - i);
                        break;
                    }
                    let _ = write!(out, "{k:?}: ");
                    v.describe_into(out);
                }
                out.push_str("})");
            }
            DataType::Function(f) => {
                let _ = write!(out, "Function({})", f.name());
            }
        }
    }

    /// Structural equality as used inside lists and dicts and by `contains`: values of
    /// different types are simply unequal; numbers compare as floats (NaN ≠ NaN); events
    /// compare timestamp, duration and data but not id.
    pub(crate) fn deep_eq(&self, other: &DataType) -> bool {
        match (self, other) {
            (DataType::None, DataType::None) => true,
            (DataType::Bool(a), DataType::Bool(b)) => a == b,
            (DataType::Number(a), DataType::Number(b)) => a == b,
            (DataType::String(a), DataType::String(b)) => a == b,
            (DataType::Event(a), DataType::Event(b)) => a.query_eq(b),
            (DataType::List(a), DataType::List(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.deep_eq(y))
            }
            (DataType::Events(a), DataType::Events(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.query_eq(y))
            }
            (DataType::List(a), DataType::Events(b)) | (DataType::Events(b), DataType::List(a)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b.iter())
                        .all(|(x, y)| matches!(x, DataType::Event(x) if x.query_eq(y)))
            }
            (DataType::Dict(a), DataType::Dict(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, va), (kb, vb))| ka == kb && va.deep_eq(vb))
            }
            (DataType::Function(a), DataType::Function(b)) => a == b,
            _ => false,
        }
    }

    /// Roughly how many bytes the value holds, for the query memory limit
    /// (`interpreter.rs`). Events count a fixed size each: their data is shared between
    /// copies and with equal data, so a copy of an event list costs its slots, not its data.
    /// Events lists are O(1); other lists and dicts walk their elements.
    pub(crate) fn weight(&self) -> usize {
        /// A value's own slot.
        const SLOT: usize = std::mem::size_of::<DataType>();
        /// An event: id, start, duration and the pointer to its shared data.
        const EVENT: usize = 64;
        match self {
            DataType::None | DataType::Bool(_) | DataType::Number(_) | DataType::Function(_) => {
                SLOT
            }
            DataType::String(s) => SLOT + s.len(),
            DataType::Event(_) => SLOT + EVENT,
            DataType::Events(events) => SLOT + events.len().saturating_mul(EVENT),
            DataType::List(items) => items
                .iter()
                .fold(SLOT, |sum, v| sum.saturating_add(v.weight())),
            DataType::Dict(map) => map.iter().fold(SLOT, |sum, (k, v)| {
                sum.saturating_add(k.len() + SLOT + v.weight())
            }),
        }
    }

    /// Roughly how many bytes the JSON form ([`DataType::to_json`]) takes: unlike the value,
    /// it holds a copy of each event's data per occurrence. For the query memory budget.
    pub(crate) fn json_weight(&self) -> usize {
        /// An event's own JSON object: four keys, the timestamp text, the numbers.
        const EVENT: usize = 320;
        use crate::data::JSON_SLOT as SLOT;
        match self {
            DataType::None | DataType::Bool(_) | DataType::Number(_) | DataType::Function(_) => {
                SLOT
            }
            DataType::String(s) => SLOT + s.len(),
            DataType::Event(e) => EVENT + e.data.json_weight(),
            DataType::Events(events) => events.iter().fold(SLOT, |sum, e| {
                sum.saturating_add(EVENT + e.data.json_weight())
            }),
            DataType::List(items) => items
                .iter()
                .fold(SLOT, |sum, v| sum.saturating_add(v.json_weight())),
            DataType::Dict(map) => map.iter().fold(SLOT, |sum, (k, v)| {
                sum.saturating_add(SLOT + k.len() + v.json_weight())
            }),
        }
    }

    /// Nesting depth of lists/dicts (scalars and events are 0).
    pub(crate) fn depth(&self) -> usize {
        match self {
            DataType::List(items) => 1 + items.iter().map(DataType::depth).max().unwrap_or(0),
            DataType::Events(_) => 1,
            DataType::Dict(map) => 1 + map.values().map(DataType::depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// The JSON form of a query result: numbers are always floats (NaN/±inf → null), None is
    /// `[]`, objects have sorted keys. Function values cannot be serialised and give an
    /// `InvalidType` error (the reference panics there).
    pub(crate) fn to_json(&self) -> QueryResult<Value> {
        Ok(match self {
            DataType::None => Value::Array(Vec::new()),
            DataType::Bool(b) => Value::Bool(*b),
            DataType::Number(n) => Value::from(*n),
            DataType::String(s) => Value::String(s.clone()),
            DataType::Event(e) => e.to_json(),
            DataType::List(items) => Value::Array(
                items
                    .iter()
                    .map(DataType::to_json)
                    .collect::<QueryResult<Vec<Value>>>()?,
            ),
            DataType::Events(events) => Value::Array(events.iter().map(QEvent::to_json).collect()),
            DataType::Dict(map) => {
                let mut obj = serde_json::Map::new();
                for (k, v) in map {
                    obj.insert(k.clone(), v.to_json()?);
                }
                Value::Object(obj)
            }
            DataType::Function(f) => {
                return Err(QueryError::InvalidType(format!(
                    "Cannot return the function '{}' as a query result; call it instead",
                    f.name()
                )))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_like_reference() {
        assert_eq!(DataType::Number(1.0).describe(), "Number(1)");
        assert_eq!(DataType::Number(1.5).describe(), "Number(1.5)");
        assert_eq!(DataType::Bool(true).describe(), "Bool(true)");
        assert_eq!(
            DataType::String("a\"".into()).describe(),
            r#"String("a\"")"#
        );
        let long = DataType::List((0..100).map(|i| DataType::Number(i as f64)).collect());
        assert!(long.describe().contains("… 90 more"));
    }

    #[test]
    fn json_numbers_are_floats() {
        let v = DataType::List(vec![
            DataType::Number(1.0),
            DataType::Number(f64::NAN),
            DataType::Number(f64::INFINITY),
            DataType::None,
        ]);
        assert_eq!(
            serde_json::to_string(&v.to_json().unwrap()).unwrap(),
            "[1.0,null,null,[]]"
        );
    }

    #[test]
    fn event_lists_behave_like_lists_of_events() {
        let e = QEvent::new(0, 1_000_000_000, crate::event::Data::new());
        let a = DataType::from_events(vec![e.clone()]);
        let b = DataType::List(vec![DataType::Event(e)]);
        assert!(a.deep_eq(&b) && b.deep_eq(&a));
        assert_eq!(a.describe(), b.describe());
        assert_eq!(a.depth(), b.depth());
        assert_eq!(a.to_json().unwrap(), b.to_json().unwrap());
        assert!(DataType::from_events(vec![]).deep_eq(&DataType::List(vec![])));
        assert!(!DataType::from_events(vec![]).deep_eq(&DataType::List(vec![DataType::None])));
    }

    #[test]
    fn functions_do_not_serialise() {
        let v = DataType::List(vec![DataType::Function(Builtin::Print)]);
        assert!(matches!(v.to_json(), Err(QueryError::InvalidType(_))));
    }
}
