//! Events as rows: integer nanoseconds and the stored JSON text of `data`, the one form an
//! event has between the datastore, the query engine and the HTTP responses.
//!
//! The datastore's worker thread only moves rows; turning them into [`Event`]s (a JSON parse per event)
//! or into response JSON (no parse at all: the stored text is spliced in) happens on the
//! caller's thread, so a large read costs the single worker as little as possible.

use crate::{timestamp, Event};
use serde_json::{Map, Value};

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
        clip_span(&mut self.start, &mut self.end, lo, hi);
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

    /// The event's API JSON, or `None` when the stored data is not a JSON object.
    pub fn to_json(&self) -> Option<String> {
        let mut out = String::with_capacity(json_capacity(std::slice::from_ref(self)));
        self.write_json(&mut out).then_some(out)
    }

    /// Appends the event's API JSON (`{"id","timestamp","duration","data"}`) to `out`.
    /// Returns false (writing nothing) when the stored data is not a JSON object.
    pub fn write_json(&self, out: &mut String) -> bool {
        if !is_json_object(&self.data) {
            log::warn!("Skipping event {} with unreadable data", self.id);
            return false;
        }
        out.push_str("{\"id\":");
        out.push_str(itoa::Buffer::new().format(self.id));
        out.push_str(",\"timestamp\":\"");
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
///
/// Durations from 10 µs up to 11 days (almost all of them) are written from the integer
/// directly: such a decimal has at most 15 significant digits, so it is exactly the shortest
/// text that reads back as the same `f64`, which is what serde_json's `ryu` prints, in its
/// fixed notation for that range (`tests::write_seconds_matches_ryu` checks this). The rest go
/// through `ryu`.
pub fn write_seconds(out: &mut String, ns: i64) {
    const NS_PER_S: i64 = 1_000_000_000;
    if (10_000..1_000_000_000_000_000).contains(&ns) {
        out.push_str(itoa::Buffer::new().format(ns / NS_PER_S));
        out.push('.');
        // The fraction's digits without trailing zeros ("0" when there are none).
        let (mut frac, mut len) = (ns % NS_PER_S, 9);
        while frac % 10 == 0 && len > 1 {
            frac /= 10;
            len -= 1;
        }
        let mut digits = [b'0'; 9];
        for d in digits[..len].iter_mut().rev() {
            *d = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        out.push_str(std::str::from_utf8(&digits[..len]).unwrap_or("0"));
        return;
    }
    let mut buf = ryu::Buffer::new();
    out.push_str(buf.format_finite(ns as f64 / 1e9));
}

/// A cheap check that stored text is one JSON object: a validating pass without building it.
fn is_json_object(text: &str) -> bool {
    text.starts_with('{') && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// A part of an event read for the query engine: the rows, and their data texts as stored,
/// one after another in one buffer. The reader copies each row's text with one `memcpy` and
/// no allocation; finding repeated texts (a year of window events repeats a few thousand
/// texts hundreds of thousands of times) is left to the engine, on its own thread, so the
/// datastore's single worker thread (the bottleneck of a long read) does as little per row
/// as it can. The texts are not checked to be UTF-8 here either: the engine checks them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextRows {
    /// The rows' data texts, one after another.
    texts: Vec<u8>,
    /// The rows, newest first.
    rows: Vec<TextRow>,
}

impl TextRows {
    /// Adds a row whose data text is `text`.
    pub fn push(&mut self, id: i64, start: i64, end: i64, text: &[u8]) {
        self.texts.extend_from_slice(text);
        self.rows.push(TextRow {
            id,
            start,
            end,
            text_end: self.texts.len(),
        });
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The texts of all rows, one after another (checking them as UTF-8 at once is faster
    /// than row by row).
    pub fn all_texts(&self) -> &[u8] {
        &self.texts
    }

    /// The rows, each with its text's place in [`TextRows::all_texts`].
    pub fn rows(&self) -> impl Iterator<Item = (&TextRow, std::ops::Range<usize>)> {
        let mut start = 0;
        self.rows.iter().map(move |r| {
            let text = start..r.text_end;
            start = r.text_end;
            (r, text)
        })
    }

    /// The last row.
    pub fn last(&self) -> Option<&TextRow> {
        self.rows.last()
    }

    /// Clips every row to `[lo, hi]`, as [`RawEvent::clip`].
    pub fn clip(&mut self, lo: i64, hi: i64) {
        for r in &mut self.rows {
            r.clip(lo, hi);
        }
    }
}

/// Raises `start` to `lo` and lowers `end` to `hi`.
fn clip_span(start: &mut i64, end: &mut i64, lo: i64, hi: i64) {
    *start = (*start).max(lo);
    *end = (*end).min(hi);
}

impl TextRow {
    /// Clips the event to `[lo, hi]`, as [`RawEvent::clip`].
    pub fn clip(&mut self, lo: i64, hi: i64) {
        clip_span(&mut self.start, &mut self.end, lo, hi);
    }
}

/// A row of [`TextRows`]: the event without its data (see [`TextRows::rows`] for the text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextRow {
    /// The event id.
    pub id: i64,
    /// Start, ns since the epoch.
    pub start: i64,
    /// End, ns since the epoch.
    pub end: i64,
    /// Where its text ends in the part's buffer (it starts where the previous row's ends).
    text_end: usize,
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

    /// Bytes that hold [`EventRows::write_json`]'s output without the string growing.
    pub fn json_capacity(&self) -> usize {
        json_capacity(&self.0)
    }

    /// The rows as a JSON array of API events, built without parsing `data`.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(json_capacity(&self.0));
        self.write_json(&mut out);
        out
    }

    /// Appends the JSON array of [`EventRows::to_json`] to `out`.
    ///
    /// Long lists (a week or a month of window events) are written in parts on the threads
    /// of the rayon pool this is called on (the server's CPU pool): writing an event is as
    /// much work as reading it from SQLite. Called elsewhere, they are written in one go.
    pub fn write_json(&self, out: &mut String) {
        let parts = match self.0.len() / PARALLEL_PART_ROWS {
            0 | 1 => 1,
            // Only on a pool's thread: elsewhere (an async worker) this would start rayon's
            // global pool beside the server's one.
            _ if rayon::current_thread_index().is_none() => 1,
            most => rayon::current_num_threads().min(most),
        };
        self.write_json_in(out, parts);
    }

    /// [`EventRows::write_json`] in `parts` parts, written in parallel on the current rayon
    /// pool (the server calls this on its CPU pool).
    fn write_json_in(&self, out: &mut String, parts: usize) {
        use rayon::prelude::*;
        out.push('[');
        if parts <= 1 {
            write_rows(&self.0, out);
        } else {
            let chunk = self.0.len().div_ceil(parts);
            let written: Vec<String> = self
                .0
                .par_chunks(chunk)
                .map(|rows| {
                    let mut part = String::with_capacity(json_capacity(rows));
                    write_rows(rows, &mut part);
                    part
                })
                .collect();
            for part in written {
                if !part.is_empty() {
                    if !out.ends_with('[') {
                        out.push(',');
                    }
                    out.push_str(&part);
                }
            }
        }
        out.push(']');
    }
}

/// The fewest rows worth a thread of their own in [`EventRows::write_json`].
const PARALLEL_PART_ROWS: usize = 4_096;

/// A capacity that holds the JSON of `rows` without growing (growing a month's 5 MB copies
/// it): an event's JSON is its data plus at most 117 bytes (20-character id, 30-byte
/// timestamp, 24-character duration, keys and punctuation); untouched capacity costs nothing.
fn json_capacity(rows: &[RawEvent]) -> usize {
    16 + rows.iter().map(|e| e.data.len() + 117).sum::<usize>()
}

/// Writes `rows` as comma-separated JSON objects, skipping rows with unreadable data.
fn write_rows(rows: &[RawEvent], out: &mut String) {
    let mut first = true;
    for row in rows {
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
    fn write_seconds_matches_ryu() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut values: Vec<i64> = vec![0, 1, 9_999, 10_000, 10_001, 999_999_999_999_999];
        values.extend([
            1_000_000_000_000_000,
            i64::MAX,
            -1,
            -1_500_000_000,
            i64::MIN,
        ]);
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Spread over every order of magnitude, with round and ragged fractions.
            let v = (x >> (x % 64)) as i64;
            values.extend([v, v - v % 1_000, v - v % 1_000_000, v - v % 1_000_000_000]);
        }
        for ns in values {
            let mut fast = String::new();
            write_seconds(&mut fast, ns);
            let mut buf = ryu::Buffer::new();
            assert_eq!(fast, buf.format_finite(ns as f64 / 1e9), "{ns}");
        }
    }

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
    fn long_lists_written_in_parts_equal_one_pass() {
        let n = 3 * PARALLEL_PART_ROWS + 5;
        for damaged in [
            Box::new(|_: usize| false) as Box<dyn Fn(usize) -> bool>,
            // A whole part damaged, and rows here and there.
            Box::new(|i| i < n / 2 || i % 7 == 0),
            Box::new(|i| i >= n / 3),
            Box::new(|_| true),
        ] {
            let rows = EventRows(
                (0..n)
                    .map(|i| RawEvent {
                        id: i as i64,
                        start: i as i64 * 1_000_000_000,
                        end: i as i64 * 1_000_000_000 + 1_500_000,
                        data: if damaged(i) {
                            "{bad".into()
                        } else {
                            format!("{{\"i\":{i}}}")
                        },
                    })
                    .collect(),
            );
            let mut one_pass = String::from("[");
            write_rows(&rows.0, &mut one_pass);
            one_pass.push(']');
            assert_eq!(rows.to_json(), one_pass);
            // Explicit part counts: `to_json` alone writes in one part on a one-core machine.
            for parts in [2, 3] {
                let mut in_parts = String::new();
                rows.write_json_in(&mut in_parts, parts);
                assert_eq!(in_parts, one_pass, "{parts} parts");
            }
            let parsed: Vec<Value> = serde_json::from_str(&one_pass).unwrap();
            assert_eq!(parsed.len(), (0..n).filter(|&i| !damaged(i)).count());
        }
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
