//! Events as CSV, the form a spreadsheet opens (`GET /api/0/export?format=csv`).
//!
//! The header is `bucket,host,timestamp,duration` and then one `data.<key>` column per key
//! found in the events' data, sorted; one row per event, oldest first within each bucket
//! (buckets by id). Timestamps are RFC 3339 in UTC with `Z`, durations in seconds, nested
//! values their JSON text; cells are quoted as RFC 4180 says and lines end with CRLF. A text
//! cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`,
//! so a spreadsheet shows a window title such as `=HYPERLINK(…)` instead of running it
//! (numbers are written as they are).
//!
//! The export is streamed: each bucket is read a window of [`WINDOW_NS`] at a time (an
//! event across a window's edge is written once, in the window where it starts), twice —
//! once for the column names, once for the rows — and written in chunks that wait for the
//! client (a bounded channel), so memory stays at about one window's events whatever the
//! history holds. With `start`/`end`, the events overlapping the range are written, cut to
//! it as event reads cut them.

use std::collections::BTreeSet;

use aw_datastore::{Datastore, DatastoreError};
use aw_models::raw_event::write_seconds;
use aw_models::{timestamp, Bucket};
use serde_json::{Map, Value};

/// The span read from a bucket at a time: a busy month is a few tens of thousands of events.
pub(crate) const WINDOW_NS: i64 = 30 * 86_400 * 1_000_000_000;

/// Data keys that get a column of their own (the first, sorted); the rest of an event's
/// data goes into one last column `data.*` as a JSON object, so events with made-up keys
/// cannot multiply the file's size by the number of keys.
pub(crate) const MAX_DATA_COLUMNS: usize = 1_000;

/// Bytes gathered before a chunk is handed to the response.
const CHUNK_BYTES: usize = 256 << 10;

/// One event as the export writes it.
struct Row {
    start: i64,
    end: i64,
    id: i64,
    data: Vec<u8>,
}

/// What to export.
pub(crate) struct CsvExport {
    /// The datastore to read from.
    pub datastore: Datastore,
    /// The buckets, in the order written.
    pub buckets: Vec<Bucket>,
    /// Only events overlapping `[lo, hi]` (ns), cut to it.
    pub range: (Option<i64>, Option<i64>),
}

impl CsvExport {
    /// Writes the whole CSV through `send`, a chunk at a time; stops early (with `Ok`)
    /// once `send` says the client is gone.
    pub(crate) fn run(&self, mut send: impl FnMut(Vec<u8>) -> bool) -> Result<(), DatastoreError> {
        let mut keys = BTreeSet::new();
        for bucket in &self.buckets {
            self.each_row(bucket, |row| {
                if let Ok(object) = serde_json::from_slice::<
                    std::collections::BTreeMap<String, serde::de::IgnoredAny>,
                >(&row.data)
                {
                    keys.extend(object.into_keys());
                }
                true
            })?;
        }
        let overflow = keys.len() > MAX_DATA_COLUMNS;
        let keys: BTreeSet<String> = keys.into_iter().take(MAX_DATA_COLUMNS).collect();
        let columns = Columns { keys, overflow };
        let mut out = String::with_capacity(CHUNK_BYTES + 4096);
        for (i, name) in ["bucket", "host", "timestamp", "duration"]
            .into_iter()
            .map(str::to_string)
            .chain(columns.keys.iter().map(|k| format!("data.{k}")))
            .chain(overflow.then(|| "data.*".to_string()))
            .enumerate()
        {
            if i > 0 {
                out.push(',');
            }
            push_text(&mut out, &name);
        }
        out.push_str("\r\n");
        for bucket in &self.buckets {
            let mut going = true;
            self.each_row(bucket, |row| {
                write_row(&mut out, bucket, &columns, row);
                if out.len() >= CHUNK_BYTES {
                    going = send(std::mem::take(&mut out).into_bytes());
                    out.reserve(CHUNK_BYTES + 4096);
                }
                going
            })?;
            if !going {
                return Ok(());
            }
        }
        if !out.is_empty() {
            send(out.into_bytes());
        }
        Ok(())
    }

    /// Calls `f` with each event of `bucket` in the range, oldest first, each once, cut to
    /// the range; stops when `f` returns `false`.
    fn each_row(
        &self,
        bucket: &Bucket,
        mut f: impl FnMut(&Row) -> bool,
    ) -> Result<(), DatastoreError> {
        let (Some(first), Some(last)) = (bucket.metadata.start, bucket.metadata.end) else {
            return Ok(());
        };
        let (lo, hi) = (
            self.range.0.unwrap_or(i64::MIN),
            self.range.1.unwrap_or(i64::MAX),
        );
        let from = timestamp::to_ns_saturating(&first).max(lo);
        let until = timestamp::to_ns_saturating(&last).min(hi);
        // The first window also finds the events that start before `lo` and reach into it.
        let mut window_lo = from;
        let mut first_window = true;
        loop {
            let window_hi = window_lo
                .saturating_add(WINDOW_NS)
                .min(until.max(window_lo));
            let mut rows = Vec::new();
            for part in self.datastore.stream_whole_events(
                &bucket.id,
                Some(timestamp::from_ns(window_lo)),
                Some(timestamp::from_ns(window_hi)),
            ) {
                let part = part?;
                let texts = part.all_texts();
                for (row, text) in part.rows() {
                    // Written in the window it starts in (the first takes all it touches).
                    if first_window || row.start > window_lo {
                        rows.push(Row {
                            start: row.start.max(lo),
                            end: row.end.min(hi),
                            id: row.id,
                            data: texts[text].to_vec(),
                        });
                    }
                }
            }
            rows.sort_by_key(|r| (r.start, r.end, r.id));
            for row in &rows {
                if !f(row) {
                    return Ok(());
                }
            }
            if window_hi >= until {
                return Ok(());
            }
            window_lo = window_hi;
            first_window = false;
        }
    }
}

/// The data columns: the keys with their own, and whether `data.*` holds the rest.
struct Columns {
    keys: BTreeSet<String>,
    overflow: bool,
}

/// One event's line.
fn write_row(out: &mut String, bucket: &Bucket, columns: &Columns, row: &Row) {
    let keys = &columns.keys;
    push_text(out, &bucket.id);
    out.push(',');
    push_text(out, &bucket.hostname);
    out.push(',');
    timestamp::write_ns(out, row.start);
    out.push(',');
    write_seconds(out, row.end.saturating_sub(row.start));
    let data: Map<String, Value> = serde_json::from_slice(&row.data).unwrap_or_default();
    for key in keys {
        out.push(',');
        match data.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => push_text(out, s),
            Some(Value::Number(n)) => out.push_str(&n.to_string()),
            Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Some(nested) => push_text(out, &nested.to_string()),
        }
    }
    if columns.overflow {
        out.push(',');
        let rest: Map<String, Value> = data
            .into_iter()
            .filter(|(k, _)| !keys.contains(k))
            .collect();
        if !rest.is_empty() {
            push_text(out, &Value::Object(rest).to_string());
        }
    }
    out.push_str("\r\n");
}

/// A text cell: a leading `'` when a spreadsheet would read it as a formula, quoted when it
/// holds a comma, a quote or a line break (RFC 4180: quotes doubled).
pub(crate) fn push_text(out: &mut String, text: &str) {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    let quoted = text.contains([',', '"', '\r', '\n']);
    if quoted {
        out.push('"');
    }
    if formula {
        out.push('\'');
    }
    if quoted {
        out.push_str(&text.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(text: &str) -> String {
        let mut out = String::new();
        push_text(&mut out, text);
        out
    }

    #[test]
    fn cells_are_quoted_and_formulas_defused() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("two\nlines"), "\"two\nlines\"");
        assert_eq!(cell("=1+1"), "'=1+1");
        assert_eq!(cell("-rf"), "'-rf");
        assert_eq!(cell("@cmd"), "'@cmd");
        assert_eq!(cell("\tx"), "'\tx");
        assert_eq!(cell("\rx"), "\"'\rx\"");
        assert_eq!(
            cell("=HYPERLINK(\"x\",\"y\")"),
            "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\""
        );
        assert_eq!(cell(""), "");
    }

    #[test]
    fn a_row_writes_every_column_in_order() {
        let bucket: Bucket = serde_json::from_value(serde_json::json!({
            "id": "w", "type": "t", "client": "c", "hostname": "h"
        }))
        .unwrap();
        let keys: BTreeSet<String> = ["app", "n", "nested", "none", "title"]
            .into_iter()
            .map(str::to_string)
            .collect();
        let mut out = String::new();
        write_row(
            &mut out,
            &bucket,
            &Columns {
                keys,
                overflow: false,
            },
            &Row {
                start: 1_500_000_000,
                end: 3_000_000_000,
                id: 1,
                data: br#"{"app":"-x","n":-3,"nested":{"a":[1]},"title":"a,b"}"#.to_vec(),
            },
        );
        assert_eq!(
            out,
            "w,h,1970-01-01T00:00:01.500Z,1.5,'-x,-3,\"{\"\"a\"\":[1]}\",,\"a,b\"\r\n"
        );
    }

    #[test]
    fn keys_past_the_column_limit_share_one_json_column() {
        let bucket: Bucket = serde_json::from_value(serde_json::json!({
            "id": "w", "type": "t", "client": "c", "hostname": "h"
        }))
        .unwrap();
        let columns = Columns {
            keys: ["a".to_string()].into_iter().collect(),
            overflow: true,
        };
        let mut out = String::new();
        let row = |data: &str| Row {
            start: 0,
            end: 0,
            id: 1,
            data: data.as_bytes().to_vec(),
        };
        write_row(
            &mut out,
            &bucket,
            &columns,
            &row(r#"{"a":1,"y":"=x","z":2}"#),
        );
        write_row(&mut out, &bucket, &columns, &row(r#"{"a":2}"#));
        assert_eq!(
            out,
            "w,h,1970-01-01T00:00:00Z,0.0,1,\"{\"\"y\"\":\"\"=x\"\",\"\"z\"\":2}\"\r\n\
             w,h,1970-01-01T00:00:00Z,0.0,2,\r\n"
        );
    }
}
