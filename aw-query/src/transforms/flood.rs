//! `flood`: fills small gaps between events (the reference aw-server-rust's algorithm).

use crate::event::QEvent;

/// Gaps shorter than this are filled (5 s, fixed as in the reference).
pub(crate) const PULSETIME_NS: i64 = 5_000_000_000;

/// Sorts ascending, merges same-data neighbours that overlap or are less than
/// [`PULSETIME_NS`] apart, and splits smaller gaps between different-data neighbours in the
/// middle. Overlapping different-data events and zero-duration events are left alone.
pub(crate) fn flood(mut events: Vec<QEvent>) -> Vec<QEvent> {
    events.sort_by_key(|e| e.start);
    // Compaction in place: `events[w]` is the current event, `events[..w]` are final, and
    // slots between `w` and the read position hold absorbed events, dropped at the end.
    let mut w = 0;
    for r in 1..events.len() {
        if crate::budget::expired() {
            break;
        }
        let (done, rest) = events.split_at_mut(r);
        let (Some(cur), Some(next)) = (done.get_mut(w), rest.first_mut()) else {
            break;
        };
        let gap = next.start.saturating_sub(cur.end());
        if gap < PULSETIME_NS && cur.same_data(next) {
            // Overlapping or close with the same data: one event from the earliest start
            // to the latest end; the next event is absorbed (and may absorb more).
            let end = cur.end().max(next.end());
            cur.start = cur.start.min(next.start);
            cur.set_end(end);
            continue;
        }
        if (0..PULSETIME_NS).contains(&gap) {
            let half = gap / 2;
            cur.duration = cur.duration.saturating_add(half);
            next.start -= half;
            next.duration = next.duration.saturating_add(half);
        }
        w += 1;
        events.swap(w, r);
    }
    events.truncate(w + 1);
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::testutil::{ev, spans};

    /// The time budget is checked inside the loop: with a deadline already past, a flood of
    /// 200,000 events stops after about a thousand of them (the interpreter then answers
    /// `Timeout` and drops the partial result).
    #[test]
    fn stops_early_once_the_budget_has_expired() {
        let a = [("k", "a")];
        let b = [("k", "b")];
        let events: Vec<QEvent> = (0..200_000)
            .map(|i| ev(i as f64 * 10.0, 1.0, if i % 2 == 0 { &a } else { &b }))
            .collect();
        let full = flood(events.clone()).len();
        assert_eq!(full, 200_000);
        let _budget = crate::budget::enter(Some(std::time::Instant::now()));
        let partial = flood(events).len();
        assert!(crate::budget::has_expired());
        assert!(
            partial < 5_000,
            "{partial} events flooded after the deadline"
        );
    }

    #[test]
    fn spec_examples() {
        let a = [("k", "a")];
        let b = [("k", "b")];
        assert_eq!(
            spans(&flood(vec![ev(0.0, 1.0, &a), ev(3.0, 1.0, &a)])),
            vec![(0.0, 4.0)]
        );
        assert_eq!(
            spans(&flood(vec![ev(0.0, 1.0, &a), ev(3.0, 1.0, &b)])),
            vec![(0.0, 2.0), (2.0, 2.0)]
        );
        assert_eq!(
            spans(&flood(vec![ev(0.0, 10.0, &a), ev(5.0, 10.0, &a)])),
            vec![(0.0, 15.0)]
        );
        assert_eq!(
            spans(&flood(vec![ev(0.0, 10.0, &a), ev(1.0, 5.0, &b)])),
            vec![(0.0, 10.0), (1.0, 5.0)]
        );
    }

    #[test]
    fn large_gaps_zero_durations_and_order() {
        let a = [("k", "a")];
        let b = [("k", "b")];
        // Input newest first; 5 s gap is not filled; zero-duration events survive.
        let out = flood(vec![ev(20.0, 0.0, &b), ev(10.0, 1.0, &a), ev(0.0, 5.0, &a)]);
        assert_eq!(spans(&out), vec![(0.0, 5.0), (10.0, 1.0), (20.0, 0.0)]);
        assert!(flood(vec![]).is_empty());
    }

    #[test]
    fn merged_events_keep_first_id_and_data() {
        let mut x = ev(0.0, 1.0, &[("k", "a")]);
        x.id = Some(1);
        let mut y = ev(1.0, 1.0, &[("k", "a")]);
        y.id = Some(2);
        let out = flood(vec![y, x]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].id, Some(1));
    }

    #[test]
    fn odd_gap_halves_truncate_to_ns() {
        let a = [("k", "a")];
        let b = [("k", "b")];
        let mut e2 = ev(0.0, 0.0, &b);
        e2.start = 1_000_000_001 + 1; // gap of 1 ns after a 0–1.000000001 s event
        let mut e1 = ev(0.0, 0.0, &a);
        e1.duration = 1_000_000_001;
        let out = flood(vec![e1, e2]);
        assert_eq!(out[0].duration, 1_000_000_001);
        assert_eq!(out[1].start, 1_000_000_002);
    }
}
