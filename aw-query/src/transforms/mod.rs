//! Event-list transformations behind the built-in functions.
//!
//! Every transform takes its event lists by value and returns a new list, so owned events
//! move through a chain of calls without copies.

pub(crate) mod categorize;
pub(crate) mod chunk;
pub(crate) mod filter;
pub(crate) mod flood;
pub(crate) mod merge;
pub(crate) mod period;
pub(crate) mod sort;
pub(crate) mod split_url;
pub(crate) mod union;

#[cfg(test)]
mod proptests;

#[cfg(test)]
pub(crate) mod testutil {
    use crate::data::Val;
    use crate::event::{Data, QEvent};

    /// Nanoseconds per second.
    pub(crate) const S: i64 = 1_000_000_000;

    /// An event from seconds and `key=value` string data.
    pub(crate) fn ev(start_s: f64, dur_s: f64, data: &[(&str, &str)]) -> QEvent {
        let pairs: Vec<(&str, Val)> = data.iter().map(|(k, v)| (*k, Val::str(v))).collect();
        let d = Data::from_pairs(&pairs);
        QEvent::new(
            (start_s * S as f64).round() as i64,
            (dur_s * S as f64).round() as i64,
            d,
        )
    }

    /// (start, duration) in seconds.
    pub(crate) fn spans(events: &[QEvent]) -> Vec<(f64, f64)> {
        events
            .iter()
            .map(|e| (e.start as f64 / S as f64, e.duration as f64 / S as f64))
            .collect()
    }
}
