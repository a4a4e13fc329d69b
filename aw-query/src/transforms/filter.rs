//! `filter_keyvals`, `exclude_keyvals` (with numbers compared by value as
//! COMPATIBILITY.md, server #10 requires) and `filter_keyvals_regex`.

use crate::data::Val;
use crate::event::{Data, PerObject, QEvent};
use crate::transforms::categorize::RuleSet;
use std::sync::Arc;

/// Keeps (`keep = true`) or drops (`keep = false`) the events whose `data[key]` exists and
/// equals one of `values` (numbers compared by value, `1 == 1.0`). Events lacking `key` never
/// match: dropped by the filter, kept by the exclusion.
///
/// The decision for each shared data object is remembered ([`PerObject`]).
pub(crate) fn filter_keyvals(
    events: Arc<Vec<QEvent>>,
    key: &str,
    values: &[Val],
    keep: bool,
) -> Vec<QEvent> {
    let mut decided = PerObject::new();
    let matches = |data: &Data| {
        data.get(key)
            .is_some_and(|v| values.iter().any(|x| v.value_eq(x)))
    };
    retain(events, |e| decided.get(&e.data, matches) == keep)
}

/// Keeps the events whose `data[key]` is a string in which the single rule of `rules`
/// matches.
pub(crate) fn filter_keyvals_regex(events: Arc<Vec<QEvent>>, rules: &mut RuleSet) -> Vec<QEvent> {
    let mut hits = rules.hit_buffer();
    retain(events, |e| {
        rules.matches(&e.data, &mut hits);
        RuleSet::is_hit(&hits, 0)
    })
}

/// The events for which `keep` holds, in order: kept in place when the list is not shared,
/// else copied out of the shared list (which is then released off this thread). Stops,
/// keeping nothing more, once the query's time is up.
fn retain(events: Arc<Vec<QEvent>>, mut keep: impl FnMut(&QEvent) -> bool) -> Vec<QEvent> {
    let mut keep = |e: &QEvent| !crate::budget::expired() && keep(e);
    match Arc::try_unwrap(events) {
        Ok(mut owned) => {
            owned.retain(|e| keep(e));
            owned
        }
        Err(shared) => {
            let kept = shared.iter().filter(|e| keep(e)).cloned().collect();
            crate::reaper::drop_later(shared);
            kept
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Interner;
    use serde_json::{json, Value};

    fn val(v: Value) -> Val {
        Val::from_json(&v, &mut Interner::default())
    }

    fn with(v: Value) -> QEvent {
        QEvent::new(0, 1, Data::from_pairs(&[("n", val(v))]))
    }

    #[test]
    fn numbers_compare_by_value() {
        let events = vec![
            with(json!(1)),
            with(json!(1.0)),
            with(json!(2)),
            with(json!("1")),
        ];
        assert_eq!(
            filter_keyvals(Arc::new(events.clone()), "n", &[val(json!(1.0))], true).len(),
            2
        );
        assert_eq!(
            filter_keyvals(Arc::new(events), "n", &[val(json!(1.0))], false).len(),
            2
        );
    }

    /// COMPATIBILITY.md, server #10 above 2^53: a stored integer matches a query number only if the number
    /// is exactly that integer (the query's numbers are floats).
    #[test]
    fn large_integers_match_exactly() {
        let two53 = 9_007_199_254_740_992i64;
        let events = vec![
            with(json!(two53)),
            with(json!(two53 + 1)),
            with(json!(two53 + 2)),
        ];
        let kept = filter_keyvals(
            Arc::new(events.clone()),
            "n",
            &[val(json!(two53 as f64))],
            true,
        );
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].data.get("n").map(|v| v.to_json()),
            Some(json!(two53))
        );
        // 2^53 + 2 is a float exactly; 2^53 + 1 is not, so nothing equals it.
        let kept = filter_keyvals(
            Arc::new(events.clone()),
            "n",
            &[val(json!((two53 + 2) as f64))],
            true,
        );
        assert_eq!(kept.len(), 1);
        assert_eq!(
            filter_keyvals(Arc::new(events), "n", &[val(json!(two53 as f64))], false).len(),
            2
        );
    }

    #[test]
    fn missing_keys() {
        let events = vec![QEvent::new(0, 1, Data::new()), with(json!("x"))];
        assert_eq!(
            filter_keyvals(Arc::new(events.clone()), "n", &[val(json!("x"))], true).len(),
            1
        );
        // Exclusion keeps the event lacking the key.
        assert_eq!(
            filter_keyvals(Arc::new(events), "n", &[val(json!("x"))], false).len(),
            1
        );
    }
}
