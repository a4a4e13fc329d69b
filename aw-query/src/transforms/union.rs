//! `union_no_overlap`.

use crate::event::QEvent;

/// Merges two lists that are assumed sorted ascending (they are not re-sorted), `events1`
/// taking precedence: where an event of `events2` overlaps one of `events1`, only the parts of
/// it outside are kept. Split pieces are new events (id `None`) with the original data.
/// Touching events do not overlap.
pub(crate) fn union_no_overlap(events1: Vec<QEvent>, events2: Vec<QEvent>) -> Vec<QEvent> {
    let mut out = Vec::with_capacity(events1.len() + events2.len());
    let mut it1 = events1.into_iter();
    let mut it2 = events2.into_iter();
    let mut a = it1.next();
    let mut b = it2.next();
    loop {
        if crate::budget::expired() {
            return out;
        }
        let (x, y) = match (a.take(), b.take()) {
            (Some(x), Some(y)) => (x, y),
            (x, y) => {
                out.extend(x);
                out.extend(it1);
                out.extend(y);
                out.extend(it2);
                return out;
            }
        };
        let (x_end, y_end) = (x.end(), y.end());
        let overlap = x.start < y_end && y.start < x_end;
        if !overlap {
            if x.start <= y.start {
                out.push(x);
                a = it1.next();
                b = Some(y);
            } else {
                out.push(y);
                a = Some(x);
                b = it2.next();
            }
        } else if x.start <= y.start {
            out.push(x);
            a = it1.next();
            b = if y_end > x_end {
                Some(QEvent {
                    id: None,
                    start: x_end,
                    duration: y_end - x_end,
                    data: y.data,
                })
            } else {
                it2.next()
            };
        } else {
            out.push(QEvent {
                id: None,
                start: y.start,
                duration: x.start - y.start,
                data: y.data.clone(),
            });
            b = Some(QEvent {
                id: None,
                start: x.start,
                duration: y_end - x.start,
                data: y.data,
            });
            a = Some(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::testutil::{ev, spans};

    #[test]
    fn events1_wins_and_splits_events2() {
        let mut e1 = ev(2.0, 2.0, &[("s", "1")]);
        e1.id = Some(1);
        let mut e2 = ev(0.0, 10.0, &[("s", "2")]);
        e2.id = Some(2);
        let out = union_no_overlap(vec![e1, ev(6.0, 1.0, &[("s", "1")])], vec![e2]);
        assert_eq!(
            spans(&out),
            vec![(0.0, 2.0), (2.0, 2.0), (4.0, 2.0), (6.0, 1.0), (7.0, 3.0)]
        );
        let ids: Vec<Option<i64>> = out.iter().map(|e| e.id).collect();
        assert_eq!(ids, vec![None, Some(1), None, None, None]);
        assert_eq!(out[0].data["s"].as_str(), Some("2"));
    }

    #[test]
    fn covered_dropped_touching_kept_leftovers_appended() {
        let out = union_no_overlap(
            vec![ev(0.0, 10.0, &[])],
            vec![ev(1.0, 2.0, &[]), ev(10.0, 1.0, &[]), ev(12.0, 1.0, &[])],
        );
        assert_eq!(spans(&out), vec![(0.0, 10.0), (10.0, 1.0), (12.0, 1.0)]);
        let out = union_no_overlap(vec![], vec![ev(1.0, 2.0, &[])]);
        assert_eq!(spans(&out), vec![(1.0, 2.0)]);
        // Same start: events1 first.
        let out = union_no_overlap(vec![ev(0.0, 1.0, &[])], vec![ev(0.0, 3.0, &[])]);
        assert_eq!(spans(&out), vec![(0.0, 1.0), (1.0, 2.0)]);
    }
}
