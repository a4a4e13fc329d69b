//! `filter_period_intersect` and `period_union`.

use crate::event::{Data, QEvent};

/// The parts of `events` inside the union of the `filter` periods, ascending.
///
/// Two-cursor sweep over both lists sorted by start: an event piece is emitted for every
/// filter period it overlaps (same data and id, clipped to the period), and the event is then
/// trimmed to begin at the piece's end, so overlapping filter periods never count the same
/// time twice. Events with no positive duration are skipped, as are filter periods of negative
/// duration (which cover no time).
pub(crate) fn filter_period_intersect(events: Vec<QEvent>, filter: Vec<QEvent>) -> Vec<QEvent> {
    if events.is_empty() || filter.is_empty() {
        return Vec::new();
    }
    let mut events = events;
    let mut filter = filter;
    events.sort_by_key(|e| e.start);
    filter.sort_by_key(|e| e.start);

    let mut out = Vec::new();
    let mut fi = 0;
    let mut rest = events.into_iter();
    let mut cur = rest.next();
    while let Some(e) = cur.as_mut() {
        if crate::budget::expired() {
            break;
        }
        let Some(f) = filter.get(fi) else {
            break;
        };
        let e_end = e.end();
        if e.duration <= 0 || e_end <= f.start {
            cur = rest.next();
            continue;
        }
        let f_end = f.end();
        if f.duration < 0 || f_end <= e.start {
            fi += 1;
            continue;
        }
        let start = e.start.max(f.start);
        let end = e_end.min(f_end);
        out.push(QEvent {
            id: e.id,
            start,
            duration: end - start,
            data: e.data.clone(),
        });
        e.start = end;
        e.duration = e_end - end;
    }
    // Already ascending unless the input events overlap each other.
    out.sort_by_key(|e| e.start);
    out
}

/// The union of the periods of both lists: overlapping or touching events are joined, every
/// result has empty data and keeps the id of the first event of its group. Ascending.
pub(crate) fn period_union(events1: Vec<QEvent>, events2: Vec<QEvent>) -> Vec<QEvent> {
    let mut all = events1;
    all.extend(events2);
    all.sort_by_key(|e| e.start);
    let empty = Data::new();
    let mut out: Vec<QEvent> = Vec::new();
    for e in all {
        if crate::budget::expired() {
            break;
        }
        if let Some(last) = out.last_mut() {
            let last_end = last.end();
            if e.start <= last_end {
                last.set_end(last_end.max(e.end()));
                continue;
            }
        }
        out.push(QEvent {
            id: e.id,
            start: e.start,
            duration: e.duration,
            data: empty.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::testutil::{ev, spans};

    #[test]
    fn intersect_spec_example() {
        let out =
            filter_period_intersect(vec![ev(1.0, 1.0, &[("a", "x")])], vec![ev(0.0, 1.5, &[])]);
        assert_eq!(spans(&out), vec![(1.0, 0.5)]);
        assert_eq!(out[0].data["a"].as_str(), Some("x"));
    }

    #[test]
    fn intersect_splits_and_does_not_double_count() {
        let events = vec![ev(0.0, 10.0, &[]), ev(12.0, 2.0, &[]), ev(20.0, 0.0, &[])];
        let filter = vec![
            ev(1.0, 2.0, &[]),
            ev(2.0, 3.0, &[]), // overlaps the previous filter period
            ev(8.0, 5.0, &[]),
            ev(19.0, 5.0, &[]),
        ];
        let out = filter_period_intersect(events, filter);
        assert_eq!(
            spans(&out),
            vec![(1.0, 2.0), (3.0, 2.0), (8.0, 2.0), (12.0, 1.0)]
        );
        assert!(filter_period_intersect(vec![], vec![ev(0.0, 1.0, &[])]).is_empty());
        assert!(filter_period_intersect(vec![ev(0.0, 1.0, &[])], vec![]).is_empty());
    }

    #[test]
    fn union_joins_touching_and_clears_data() {
        let mut first = ev(0.0, 1.0, &[("a", "b")]);
        first.id = Some(3);
        let out = period_union(
            vec![first, ev(5.0, 1.0, &[])],
            vec![ev(1.0, 1.0, &[]), ev(0.5, 0.2, &[]), ev(7.0, 1.0, &[])],
        );
        assert_eq!(spans(&out), vec![(0.0, 2.0), (5.0, 1.0), (7.0, 1.0)]);
        assert_eq!(out[0].id, Some(3));
        assert!(out[0].data.is_empty());
    }
}
