//! The interpreter's event representation.
//!
//! Events are held with integer-nanosecond times and immutable, reference-counted, compact
//! data (see [`crate::data`]) so that reading a variable (which copies its value) costs a
//! reference-count increment per event instead of a deep copy, and events with identical
//! data share one data object. A transform that changes data builds the new object once per
//! distinct object ([`patch_data`]).

use aw_models::timestamp;
use serde_json::{Map, Value};

use crate::data::{Interner, Key, Obj, Val};
use crate::fxhash::FxHashMap;

/// The data object of an event.
pub(crate) type Data = Obj;

/// One event inside the interpreter: like [`aw_models::Event`] but cheap to copy.
#[derive(Clone, Debug)]
pub(crate) struct QEvent {
    /// Database id; `None` for events synthesised by a transform.
    pub id: Option<i64>,
    /// Start, nanoseconds since the Unix epoch.
    pub start: i64,
    /// Length in nanoseconds (may be zero or, for odd stored data, negative).
    pub duration: i64,
    /// The event's data, shared between copies (and between events with equal data).
    pub data: Data,
}

impl QEvent {
    /// An event without an id.
    #[cfg(test)]
    pub(crate) fn new(start: i64, duration: i64, data: Data) -> Self {
        QEvent {
            id: None,
            start,
            duration,
            data,
        }
    }

    /// The end instant (`start + duration`), saturating.
    pub(crate) fn end(&self) -> i64 {
        self.start.saturating_add(self.duration)
    }

    /// Sets the end, keeping the start.
    pub(crate) fn set_end(&mut self, end: i64) {
        self.duration = end.saturating_sub(self.start);
    }

    /// Whether two events have equal data (cheap when they share it).
    pub(crate) fn same_data(&self, other: &QEvent) -> bool {
        Data::ptr_eq(&self.data, &other.data) || self.data.text_eq(&other.data)
    }

    /// Equality as the `==` operator defines it: timestamp, duration and data, not the id.
    pub(crate) fn query_eq(&self, other: &QEvent) -> bool {
        self.start == other.start && self.duration == other.duration && self.same_data(other)
    }

    /// The JSON form `{"data", "duration", "id", "timestamp"}` (keys in that sorted order;
    /// data keys sorted as well).
    pub(crate) fn to_json(&self) -> Value {
        let mut ts = String::with_capacity(32);
        timestamp::write_ns(&mut ts, self.start);
        let mut obj = Map::new();
        obj.insert("data".to_string(), Value::Object(self.data.to_json()));
        obj.insert(
            "duration".to_string(),
            Value::from(self.duration as f64 / 1e9),
        );
        obj.insert(
            "id".to_string(),
            self.id.map(Value::from).unwrap_or(Value::Null),
        );
        obj.insert("timestamp".to_string(), Value::String(ts));
        Value::Object(obj)
    }
}

/// Converts the rows of a data source into events, taken a part at a time as the source
/// hands them over (the next part is read while this one is interned): each distinct data
/// text is parsed once and its object shared by every event with that text.
///
/// Activity data repeats a lot (the same app and window title all year), so a year of
/// hundreds of thousands of events typically has only thousands of distinct data objects.
/// Sharing them keeps later passes over the events in the CPU cache, lets `flood` compare
/// data by address, lets `categorize`/`split_url_events` work once per distinct object and
/// lets `merge_events_by_keys` group by address. Sharing is invisible to the language: data
/// objects are immutable.
/// Rows whose text is not
/// a JSON object are skipped with a warning per distinct text, and rows whose text is not
/// UTF-8 with a warning each (one damaged row must not fail a query). Returns the events and
/// the bytes of data text they came from.
pub(crate) fn intern_rows(
    parts: impl Iterator<Item = Result<aw_models::TextRows, crate::DataSourceError>>,
) -> Result<(Vec<QEvent>, usize), crate::DataSourceError> {
    use std::collections::hash_map::Entry;
    let mut strings = Interner::default();
    // Text hash → the text's object (`None`: unreadable) and where the text is (the number
    // of its part in `kept`, its range there). A text whose hash another text has is parsed
    // on its own each time (64-bit hashes: this does not happen in practice).
    let mut by_hash: FxHashMap<u64, (Option<Data>, usize, std::ops::Range<usize>)> =
        FxHashMap::default();
    // The parts read so far: the texts `by_hash` points to.
    let mut kept: Vec<aw_models::TextRows> = Vec::new();
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for part in parts {
        kept.push(part?);
        let this = kept.len() - 1;
        let Some(part) = kept.last() else { break };
        // One UTF-8 check for the whole part; row by row only when it fails.
        let all = std::str::from_utf8(part.all_texts()).ok();
        out.reserve(part.len());
        for (row, range) in part.rows() {
            let text = match all {
                Some(all) => all.get(range.clone()),
                None => part
                    .all_texts()
                    .get(range.clone())
                    .and_then(|t| std::str::from_utf8(t).ok()),
            };
            let Some(text) = text else {
                log::warn!("Skipping an event whose data is not UTF-8 (id {})", row.id);
                continue;
            };
            let data = match by_hash.entry(crate::fxhash::hash_str(text)) {
                Entry::Occupied(known) => {
                    let (object, p, r) = known.get();
                    let same = kept
                        .get(*p)
                        .and_then(|k| k.all_texts().get(r.clone()))
                        .is_some_and(|t| t == text.as_bytes());
                    if same {
                        object.clone()
                    } else {
                        parse_data_text(text, &mut strings)
                    }
                }
                Entry::Vacant(slot) => {
                    let object = parse_data_text(text, &mut strings);
                    slot.insert((object.clone(), this, range));
                    object
                }
            };
            let Some(data) = data else {
                continue;
            };
            bytes = bytes.saturating_add(text.len());
            out.push(QEvent {
                id: Some(row.id),
                start: row.start,
                duration: row.end.saturating_sub(row.start),
                data,
            });
        }
    }
    crate::reaper::drop_later((by_hash, kept));
    Ok((out, bytes))
}

/// The object of a stored data text, or `None` (with a warning) when it is not a JSON
/// object.
fn parse_data_text(text: &str, strings: &mut Interner) -> Option<Data> {
    match crate::data_text::parse_obj(text, strings) {
        Ok(object) => Some(object),
        Err(e) => {
            log::warn!("Skipping events with unreadable data: {e}");
            None
        }
    }
}

/// A value computed once per shared data object, remembered by the object's address:
/// events sharing an object (see [`intern_rows`]) get it without the object being read again.
/// Objects held by one event only (most browser events) are not remembered: no later event
/// can have them, and the map stays small.
///
/// The memo keeps a clone of every object it remembers, so an address it holds belongs to
/// that object for as long as the memo lives: no other object can be given it, whatever
/// the caller frees or allocates meanwhile. (A clone is a reference-count increment per
/// distinct shared object: a few thousand for a year of events.) The clones are released
/// by the reaper, as `patch_data`'s are.
pub(crate) struct PerObject<T: Send + 'static>(FxHashMap<usize, (Data, T)>);

impl<T: Copy + Send + 'static> PerObject<T> {
    /// An empty memo.
    pub(crate) fn new() -> Self {
        PerObject(FxHashMap::default())
    }

    /// `compute(data)`, remembered for a shared `data`.
    pub(crate) fn get(&mut self, data: &Data, compute: impl FnOnce(&Data) -> T) -> T {
        if !data.is_shared() {
            return compute(data);
        }
        match self.0.entry(data.addr()) {
            std::collections::hash_map::Entry::Occupied(known) => known.get().1,
            std::collections::hash_map::Entry::Vacant(slot) => {
                let value = compute(data);
                slot.insert((data.clone(), value));
                value
            }
        }
    }
}

impl<T: Send + 'static> Drop for PerObject<T> {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            crate::reaper::drop_later(std::mem::take(&mut self.0));
        }
    }
}

/// Fields to set in an event's data.
pub(crate) type Patch = Vec<(Key, Val)>;

/// Applies `patch_for` to the data of every event, computing it once per distinct shared data
/// object: events that shared data before share the patched data after. `patch_for` returns
/// `None` when the data should stay as it is.
pub(crate) fn patch_data(events: &mut [QEvent], mut patch_for: impl FnMut(&Data) -> Option<Patch>) {
    // Address of an original shared object → (that object, kept alive so its address cannot
    // be reused during the call; its patched replacement, if any).
    let mut done: FxHashMap<usize, (Data, Option<Data>)> = FxHashMap::default();
    // The replaced objects are released by the reaper: the originals are shared by events
    // all over the list (and other threads work on other parts of it), so releasing each
    // here would contend on their reference counts.
    let mut replaced: Vec<Data> = Vec::new();
    for e in events {
        if crate::budget::expired() {
            break;
        }
        if !e.data.is_shared() {
            if let Some(patch) = patch_for(&e.data) {
                let patched = e.data.patched(patch);
                replaced.push(std::mem::replace(&mut e.data, patched));
            }
            continue;
        }
        let addr = e.data.addr();
        if let Some((_, replacement)) = done.get(&addr) {
            if let Some(r) = replacement {
                replaced.push(std::mem::replace(&mut e.data, r.clone()));
            }
            continue;
        }
        let original = e.data.clone();
        let replacement = patch_for(&original).map(|patch| original.patched(patch));
        if let Some(r) = &replacement {
            replaced.push(std::mem::replace(&mut e.data, r.clone()));
        }
        done.insert(addr, (original, replacement));
    }
    crate::reaper::drop_vec_later(replaced);
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    /// Events of one second at 0 with these data, through the production path: their
    /// stored texts, interned as rows.
    fn intern(data: Vec<Value>) -> Vec<QEvent> {
        let mut part = aw_models::TextRows::default();
        for (id, d) in data.iter().enumerate() {
            let Value::Object(d) = d else { panic!() };
            let text = aw_models::raw_event::data_to_text(d);
            part.push(id as i64, 0, 1_000_000_000, text.as_bytes());
        }
        intern_rows(std::iter::once(Ok(part))).unwrap().0
    }

    #[test]
    fn rows_share_one_object_per_text_across_parts_and_skip_damaged_texts() {
        let part = |rows: &[(i64, &[u8])]| {
            let mut p = aw_models::TextRows::default();
            for (id, text) in rows {
                p.push(*id, *id * 10, *id * 10 + 5, text);
            }
            Ok(p)
        };
        let a: &[u8] = br#"{"app":"a","title":"x"}"#;
        let b: &[u8] = br#"{"app":"b"}"#;
        let parts = vec![
            part(&[(1, a), (2, b), (3, b"not json"), (4, a)]),
            // Not UTF-8: this part is checked row by row.
            part(&[(5, b), (6, b"{\"app\":\"\xff\"}"), (7, a), (8, b"not json")]),
        ];
        let (events, bytes) = intern_rows(parts.into_iter()).unwrap();
        let ids: Vec<i64> = events.iter().filter_map(|e| e.id).collect();
        assert_eq!(ids, vec![1, 2, 4, 5, 7]);
        assert_eq!(bytes, 3 * a.len() + 2 * b.len());
        assert!(Data::ptr_eq(&events[0].data, &events[2].data));
        assert!(Data::ptr_eq(&events[0].data, &events[4].data));
        assert!(Data::ptr_eq(&events[1].data, &events[3].data));
        assert_eq!(events[1].data["app"].as_str(), Some("b"));
        assert_eq!((events[4].start, events[4].duration), (70, 5));
        // An error from the source ends the read with it.
        let failing = vec![
            part(&[(1, a)]),
            Err(crate::DataSourceError::NoSuchBucket("x".into())),
        ];
        assert!(intern_rows(failing.into_iter()).is_err());
    }

    #[test]
    fn json_form_has_sorted_keys_and_float_duration() {
        let mut e = intern(vec![json!({"b": 1, "a": "x"})]).remove(0);
        e.start = 1_514_764_865_500_000_000;
        e.duration = 1_500_000_000;
        e.id = Some(7);
        assert_eq!(
            serde_json::to_string(&e.to_json()).unwrap(),
            r#"{"data":{"a":"x","b":1},"duration":1.5,"id":7,"timestamp":"2018-01-01T00:01:05.500Z"}"#
        );
        let e = QEvent::new(0, 1_000_000_000, Data::new());
        assert_eq!(
            serde_json::to_string(&e.to_json()).unwrap(),
            r#"{"data":{},"duration":1.0,"id":null,"timestamp":"1970-01-01T00:00:00Z"}"#
        );
    }

    #[test]
    fn interning_shares_identical_data_only() {
        let out = intern(vec![
            json!({"a": 1}),
            json!({"a": 1}),
            json!({"a": 1.0}),
            json!({"a": -0.0}),
            json!({"a": 0.0}),
        ]);
        assert!(Data::ptr_eq(&out[0].data, &out[1].data));
        assert!(!Data::ptr_eq(&out[0].data, &out[2].data));
        assert!(!Data::ptr_eq(&out[3].data, &out[4].data));
        assert_eq!(out[3].data["a"].to_json().to_string(), "-0.0");
    }

    #[test]
    fn patches_once_per_shared_object() {
        let mut events = intern(vec![
            json!({"a": 1}),
            json!({"a": 2}),
            json!({"a": 1}),
            json!({"b": 1}),
        ]);
        let mut calls = 0;
        let x = Key::from("x");
        patch_data(&mut events, |d| {
            calls += 1;
            d.get("a").map(|a| vec![(x.clone(), a.clone())])
        });
        assert_eq!(calls, 3);
        assert!(Data::ptr_eq(&events[0].data, &events[2].data));
        assert_eq!(events[0].data["x"].to_json(), json!(1));
        assert_eq!(events[1].data["x"].to_json(), json!(2));
        assert!(events[3].data.get("x").is_none());
    }
}
