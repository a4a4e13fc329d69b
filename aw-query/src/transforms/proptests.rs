//! Property tests of the transforms.

use proptest::prelude::*;

use super::flood::{flood, PULSETIME_NS};
use super::merge::merge_events_by_keys;
use super::period::{filter_period_intersect, period_union};
use super::testutil::ev;
use crate::event::QEvent;

const MS: i64 = 1_000_000;

/// Events with millisecond times (so half-gaps are whole nanoseconds), data from a small
/// alphabet so that equal-data neighbours are common.
fn events(max: usize) -> impl Strategy<Value = Vec<QEvent>> {
    prop::collection::vec((0i64..100_000, 0i64..20_000, 0usize..3), 0..max).prop_map(|v| {
        v.into_iter()
            .map(|(s, d, k)| {
                let mut e = ev(0.0, 0.0, &[("k", ["a", "b", "c"][k])]);
                e.start = s * MS;
                e.duration = d * MS;
                e
            })
            .collect()
    })
}

/// Non-overlapping events in ascending order.
fn sequential(max: usize) -> impl Strategy<Value = Vec<QEvent>> {
    prop::collection::vec((0i64..10_000, 0i64..10_000), 0..max).prop_map(|v| {
        let mut t = 0;
        v.into_iter()
            .map(|(gap, d)| {
                let mut e = ev(0.0, 0.0, &[]);
                e.start = t + gap * MS;
                e.duration = d * MS;
                t = e.end();
                e
            })
            .collect()
    })
}

/// The union of the intervals as sorted disjoint (start, end) pairs, ignoring empty ones.
fn cover(events: &[QEvent]) -> Vec<(i64, i64)> {
    let mut iv: Vec<(i64, i64)> = events
        .iter()
        .filter(|e| e.duration > 0)
        .map(|e| (e.start, e.end()))
        .collect();
    iv.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in iv {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn measure(iv: &[(i64, i64)]) -> i64 {
    iv.iter().map(|(s, e)| e - s).sum()
}

fn intersect(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for &(s1, e1) in a {
        for &(s2, e2) in b {
            let (s, e) = (s1.max(s2), e1.min(e2));
            if s < e {
                out.push((s, e));
            }
        }
    }
    out
}

proptest! {
    #[test]
    fn flood_sorted_and_neighbours_touch(input in events(40)) {
        let out = flood(input.clone());
        prop_assert!(out.len() <= input.len());
        for w in out.windows(2) {
            let (c, n) = (&w[0], &w[1]);
            prop_assert!(c.start <= n.start, "not ascending");
            let gap = n.start - c.end();
            if c.same_data(n) {
                // Same data closer than the pulse time would have been merged.
                prop_assert!(gap >= PULSETIME_NS, "same-data neighbours {gap} ns apart");
            } else if (0..PULSETIME_NS).contains(&gap) {
                // Different data with a small gap: the gap is split, they touch exactly
                // (with nanosecond-odd gaps the halves are truncated, leaving 1 ns).
                prop_assert_eq!(gap, 0);
            }
        }
        // Flooding never loses covered time.
        let before = cover(&input);
        let after = cover(&out);
        prop_assert_eq!(measure(&intersect(&before, &after)), measure(&before));
    }

    #[test]
    fn merge_preserves_total_duration_of_kept_events(input in events(60)) {
        let keys = vec!["k".to_string()];
        let kept: i64 = input.iter().filter(|e| e.data.contains_key("k")).map(|e| e.duration).sum();
        let out = merge_events_by_keys(&input, &keys);
        prop_assert_eq!(out.iter().map(|e| e.duration).sum::<i64>(), kept);
        let mut names: Vec<&str> = out.iter().filter_map(|e| e.data["k"].as_str()).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        prop_assert_eq!(names.len(), n, "one event per group");
    }

    #[test]
    fn intersect_stays_inside_both_inputs(a in events(30), f in events(30)) {
        let out = filter_period_intersect(a.clone(), f.clone());
        for p in &out {
            prop_assert!(p.duration >= 0);
            prop_assert!(a.iter().any(|e| e.start <= p.start && p.end() <= e.end()), "outside events");
            prop_assert!(f.iter().any(|e| e.start <= p.start && p.end() <= e.end()), "outside filter");
        }
        for w in out.windows(2) {
            prop_assert!(w[0].start <= w[1].start);
        }
    }

    #[test]
    fn intersect_of_sequential_events_is_exact(a in sequential(20), f in events(30)) {
        let out = filter_period_intersect(a.clone(), f.clone());
        let expected = measure(&intersect(&cover(&a), &cover(&f)));
        prop_assert_eq!(out.iter().map(|e| e.duration).sum::<i64>(), expected);
    }

    #[test]
    fn period_union_is_commutative(a in events(30), b in events(30)) {
        let ab = period_union(a.clone(), b.clone());
        let ba = period_union(b.clone(), a.clone());
        let spans = |v: &[QEvent]| v.iter().map(|e| (e.start, e.end())).collect::<Vec<_>>();
        prop_assert_eq!(spans(&ab), spans(&ba));
        let mut all = a;
        all.extend(b);
        prop_assert_eq!(cover(&ab), cover(&all));
        for w in ab.windows(2) {
            prop_assert!(w[0].end() < w[1].start, "results must be disjoint and not touching");
        }
    }
}
