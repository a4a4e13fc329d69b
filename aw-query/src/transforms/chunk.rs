//! `chunk_events_by_key`.

use crate::event::QEvent;

/// Folds runs of consecutive events with equal `data[key]` into the run's first event
/// (durations summed; its timestamp, data and id kept). Events lacking `key` are dropped and
/// do not break a run.
pub(crate) fn chunk_events_by_key(events: Vec<QEvent>, key: &str) -> Vec<QEvent> {
    let mut out: Vec<QEvent> = Vec::new();
    for e in events {
        if crate::budget::expired() {
            break;
        }
        let Some(v) = e.data.get(key) else {
            continue;
        };
        if let Some(last) = out.last_mut() {
            if last.data.get(key).is_some_and(|w| w.text_eq(v)) {
                last.duration = last.duration.saturating_add(e.duration);
                continue;
            }
        }
        out.push(e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::testutil::{ev, spans};

    #[test]
    fn folds_runs_skipping_keyless() {
        let out = chunk_events_by_key(
            vec![
                ev(0.0, 1.0, &[("app", "a")]),
                ev(1.0, 1.0, &[("x", "y")]),
                ev(2.0, 1.0, &[("app", "a")]),
                ev(3.0, 1.0, &[("app", "b")]),
                ev(4.0, 1.0, &[("app", "a")]),
            ],
            "app",
        );
        assert_eq!(spans(&out), vec![(0.0, 2.0), (3.0, 1.0), (4.0, 1.0)]);
    }
}
