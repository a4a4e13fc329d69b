//! Sorting, limiting and summing event lists.

use crate::event::QEvent;

/// Stable sort, longest first.
pub(crate) fn sort_by_duration(mut events: Vec<QEvent>) -> Vec<QEvent> {
    events.sort_by_key(|e| std::cmp::Reverse(e.duration));
    events
}

/// Stable sort, oldest first.
pub(crate) fn sort_by_timestamp(mut events: Vec<QEvent>) -> Vec<QEvent> {
    events.sort_by_key(|e| e.start);
    events
}

/// Total duration in seconds, truncated (toward zero) to whole milliseconds as the
/// reference does.
pub(crate) fn sum_durations(events: &[QEvent]) -> f64 {
    let total: i128 = events.iter().map(|e| i128::from(e.duration)).sum();
    (total / 1_000_000) as f64 / 1000.0
}

/// The first `n` events; `n` is truncated toward zero, negative and NaN mean 0.
pub(crate) fn limit_events(mut events: Vec<QEvent>, n: f64) -> Vec<QEvent> {
    // Float-to-int `as` saturates and maps NaN to 0, which is exactly the wanted rule.
    let n = n as usize;
    events.truncate(n);
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::testutil::{ev, spans};

    #[test]
    fn sorts_are_stable() {
        let events = vec![
            ev(2.0, 1.0, &[("i", "0")]),
            ev(1.0, 3.0, &[("i", "1")]),
            ev(0.0, 1.0, &[("i", "2")]),
        ];
        let by_d = sort_by_duration(events.clone());
        let ids: Vec<&str> = by_d.iter().map(|e| e.data["i"].as_str().unwrap()).collect();
        assert_eq!(ids, vec!["1", "0", "2"]);
        assert_eq!(
            spans(&sort_by_timestamp(events)),
            vec![(0.0, 1.0), (1.0, 3.0), (2.0, 1.0)]
        );
    }

    #[test]
    fn sum_truncates_to_ms() {
        let events = vec![ev(0.0, 5.0, &[]), ev(0.0, 0.0015, &[])];
        assert_eq!(sum_durations(&events), 5.001);
        assert_eq!(sum_durations(&[]), 0.0);
    }

    #[test]
    fn limit_rules() {
        let events = vec![ev(0.0, 1.0, &[]), ev(1.0, 1.0, &[])];
        assert_eq!(limit_events(events.clone(), -1.0).len(), 0);
        assert_eq!(limit_events(events.clone(), f64::NAN).len(), 0);
        assert_eq!(limit_events(events.clone(), 1.9).len(), 1);
        assert_eq!(limit_events(events.clone(), 5.0).len(), 2);
        assert_eq!(limit_events(events, f64::INFINITY).len(), 2);
    }
}
