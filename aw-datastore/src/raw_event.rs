//! Events as rows: integer nanoseconds and the stored JSON text of `data`.
//!
//! The worker thread only moves rows; turning them into [`Event`]s (a JSON parse per event)
//! or into response JSON (no parse at all: the stored text is spliced in) happens on the
//! caller's thread, so a large read costs the single worker as little as possible.

use aw_models::{timestamp, Event};
use serde_json::{Map, Value};
use std::fmt::Write;

/// One stored event as read from the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawEvent {
    /// The event id.
    pub id: i64,
    /// Start, ns since the epoch.
    pub start: i64,
    /// End, ns since the epoch.
    pub end: i64,
    /// The compact JSON object text of `data`, keys sorted.
    pub data: String,
}

impl RawEvent {
    /// Clips the event to `[lo, hi]`: the start is raised to `lo`, the end lowered to `hi`.
    pub fn clip(&mut self, lo: i64, hi: i64) {
        if self.start < lo {
            self.start = lo;
        }
        if self.end > hi {
            self.end = hi;
        }
    }

    /// Parses into an [`Event`]; `None` (with a warning) when the stored data is not a JSON
    /// object, so one damaged row cannot fail a whole read.
    pub fn to_event(&self) -> Option<Event> {
        match serde_json::from_str::<Map<String, Value>>(&self.data) {
            Ok(data) => Some(Event {
                id: Some(self.id),
                timestamp: timestamp::from_ns(self.start),
                duration: chrono::Duration::nanoseconds(self.end.saturating_sub(self.start)),
                data,
            }),
            Err(e) => {
                log::warn!("Skipping event {} with unreadable data: {e}", self.id);
                None
            }
        }
    }

    /// Appends the event's API JSON (`{"id","timestamp","duration","data"}`) to `out`.
    /// Returns false (writing nothing) when the stored data is not a JSON object.
    pub fn write_json(&self, out: &mut String) -> bool {
        if !is_json_object(&self.data) {
            log::warn!("Skipping event {} with unreadable data", self.id);
            return false;
        }
        let _ = write!(out, "{{\"id\":{},\"timestamp\":\"", self.id);
        timestamp::write_ns(out, self.start);
        out.push_str("\",\"duration\":");
        write_seconds(out, self.end.saturating_sub(self.start));
        out.push_str(",\"data\":");
        out.push_str(&self.data);
        out.push('}');
        true
    }
}

/// Writes `ns / 1e9` the way serde_json writes an `f64` (always with a `.` or exponent).
pub fn write_seconds(out: &mut String, ns: i64) {
    let mut buf = ryu::Buffer::new();
    out.push_str(buf.format_finite(ns as f64 / 1e9));
}

/// A cheap check that stored text is one JSON object: a validating pass without building it.
fn is_json_object(text: &str) -> bool {
    text.starts_with('{') && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// The result of an event read: rows, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventRows(pub Vec<RawEvent>);

impl EventRows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parses every row into an [`Event`] (skipping damaged rows).
    pub fn into_events(self) -> Vec<Event> {
        self.0.iter().filter_map(RawEvent::to_event).collect()
    }

    /// The rows as a JSON array of API events, built without parsing `data`.
    pub fn to_json(&self) -> String {
        let mut out =
            String::with_capacity(16 + self.0.iter().map(|e| e.data.len() + 80).sum::<usize>());
        self.write_json(&mut out);
        out
    }

    /// Appends the JSON array of [`EventRows::to_json`] to `out`.
    pub fn write_json(&self, out: &mut String) {
        out.push('[');
        let mut first = true;
        for row in &self.0 {
            let mark = out.len();
            if !first {
                out.push(',');
            }
            if row.write_json(out) {
                first = false;
            } else {
                out.truncate(mark);
            }
        }
        out.push(']');
    }
}

/// Serialises event data the way it is stored: compact, keys sorted (a `serde_json::Map`
/// without `preserve_order` is a `BTreeMap`, so serialising it sorts the keys).
pub fn data_to_text(data: &Map<String, Value>) -> String {
    serde_json::to_string(data).unwrap_or_else(|_| "{}".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_matches_serde_output_of_the_event() {
        let row = RawEvent {
            id: 7,
            start: 1_514_768_461_500_000_000,
            end: 1_514_768_463_000_000_000,
            data: r#"{"a":[1,2.5],"b":"x"}"#.into(),
        };
        let mut s = String::new();
        assert!(row.write_json(&mut s));
        let via_serde = serde_json::to_string(&row.to_event().unwrap()).unwrap();
        assert_eq!(s, via_serde);
    }

    #[test]
    fn damaged_rows_are_skipped() {
        let rows = EventRows(vec![
            RawEvent {
                id: 1,
                start: 0,
                end: 0,
                data: "{}".into(),
            },
            RawEvent {
                id: 2,
                start: 0,
                end: 0,
                data: "{bad".into(),
            },
            RawEvent {
                id: 3,
                start: 0,
                end: 1,
                data: "{}".into(),
            },
        ]);
        let json = rows.to_json();
        let v: Vec<Value> = serde_json::from_str(&json).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(rows.into_events().len(), 2);
    }
}
