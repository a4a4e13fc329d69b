//! Reading an export document for import, fast.
//!
//! An export of a year is hundreds of thousands of events. Parsing it into `Event`s builds a
//! JSON tree per event's `data` only to serialise it again for storage; here every event's
//! `data` stays a slice of the input, checked for canonical form in one pass
//! ([`aw_models::canonical`]), and the document text is walked once more per event, not
//! turned into trees. The result is the same as deserialising `aw_models::BucketsExport`
//! and converting with [`NewEvent::from_event`].
//!
//! An import keeps what it can and says what it could not. Old exports from other servers
//! hold odd events (a timestamp `"garbage"`, a missing timestamp, a time outside the years
//! that can be stored, data nested too deeply): every event that can be stored is
//! imported, and each one that cannot is counted and described in the
//! [`ImportDocument`]'s problems (bucket, position, reason; the first [`MAX_PROBLEMS`]).
//! The reference skipped such events silently; refusing the whole document (what this
//! server did before) left a user with years of history nothing to import at all. A
//! document that is not an export document (syntax, a bucket of the wrong shape) is
//! still refused as a whole.

use aw_models::{canonical::canonical_object, duration, timestamp, Bucket, BucketMetadata};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;

use crate::new_event::NewEvent;

#[derive(Deserialize)]
struct Document<'a> {
    #[serde(borrow)]
    buckets: HashMap<String, DocumentBucket<'a>>,
}

#[derive(Deserialize)]
struct DocumentBucket<'a> {
    #[serde(default)]
    id: String,
    #[serde(rename = "type")]
    type_: String,
    client: String,
    hostname: String,
    #[serde(default)]
    created: Option<DateTime<Utc>>,
    #[serde(default)]
    data: Map<String, Value>,
    #[serde(default)]
    last_updated: Option<DateTime<Utc>>,
    #[serde(borrow, default)]
    events: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct DocumentEvent<'a> {
    /// Parsed after the event (as `DateTime<Utc>`'s serde form would), so that an error can
    /// name the field.
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    #[serde(default)]
    duration: f64,
    #[serde(borrow)]
    data: &'a RawValue,
}

/// Problems listed in an import's report; the rest are counted.
pub const MAX_PROBLEMS: usize = 100;

/// An export document read for import: what can be stored, and what cannot.
#[derive(Debug, Default)]
pub struct ImportDocument {
    /// The buckets with the events that can be stored, ready for
    /// [`crate::Datastore::import_rows`].
    pub buckets: Vec<(Bucket, Vec<NewEvent>)>,
    /// Events that can be stored.
    pub events: u64,
    /// Events that cannot, and are left out.
    pub skipped: u64,
    /// Why, for the first [`MAX_PROBLEMS`] of them, in document order (buckets by key).
    pub problems: Vec<ImportProblem>,
}

/// An event of the document that cannot be imported.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ImportProblem {
    /// The bucket's key in the document.
    pub bucket: String,
    /// The event's position in the bucket's `events` (from 0).
    pub index: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses an export document (`{"buckets": {…}}`) into buckets and the events of theirs that
/// can be stored, with a report of those that cannot. Fails like serde would on a
/// malformed document or bucket (400/422 material).
pub fn parse_import_document(text: &str) -> Result<ImportDocument, serde_json::Error> {
    let document: Document = serde_json::from_str(text)?;
    let mut buckets: Vec<_> = document.buckets.into_iter().collect();
    // Problems are listed in the same order on every try.
    buckets.sort_by(|a, b| a.0.cmp(&b.0));
    let mut result = ImportDocument::default();
    for (key, b) in buckets {
        let raw_events = b.events.unwrap_or_default();
        let mut events = Vec::with_capacity(raw_events.len());
        for (index, raw) in raw_events.into_iter().enumerate() {
            match convert(raw) {
                Ok(event) => events.push(event),
                Err(reason) => {
                    result.skipped += 1;
                    if result.problems.len() < MAX_PROBLEMS {
                        result.problems.push(ImportProblem {
                            bucket: key.clone(),
                            index,
                            reason,
                        });
                    }
                }
            }
        }
        result.events += events.len() as u64;
        let bucket = Bucket {
            bid: None,
            id: b.id,
            _type: b.type_,
            client: b.client,
            hostname: b.hostname,
            created: b.created,
            data: b.data,
            metadata: BucketMetadata::default(),
            events: None,
            last_updated: b.last_updated,
        };
        result.buckets.push((bucket, events));
    }
    Ok(result)
}

/// One event of the document, or why it cannot be imported.
fn convert(raw: &RawValue) -> Result<NewEvent, String> {
    let e: DocumentEvent = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    let timestamp = timestamp::parse_event_timestamp(&e.timestamp)?;
    let start = timestamp::to_ns(&timestamp)
        .ok_or("its timestamp is outside the years 1678-2262 that can be stored")?;
    let end = duration::from_secs_f64(e.duration)
        .and_then(|d| d.num_nanoseconds())
        .and_then(|d| start.checked_add(d))
        .ok_or("its duration is not a number of seconds that can be stored")?;
    let data = match canonical_object(e.data.get()) {
        Some(data) => data.into_owned(),
        None if e.data.get().starts_with('{') => {
            // Valid JSON (it is a `RawValue`) that serde_json will not build a tree of:
            // nested too deeply, or a number it cannot hold. Its own words say which.
            let why =
                serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(e.data.get())
                    .err()
                    .map_or_else(|| "it cannot be read".to_string(), |e| e.to_string());
            return Err(format!(
                "its data cannot be stored ({why}; at most 127 levels of nesting)"
            ));
        }
        None => return Err("its data is not a JSON object".into()),
    };
    Ok(NewEvent {
        id: None,
        start,
        end,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_result_as_the_model_path() {
        let text = r#"{"buckets":{"k":{"id":"b","type":"t","client":"c","hostname":"h","created":"2020-01-01T00:00:00Z","data":{"x":1},"events":[
            {"id":5,"timestamp":"2020-01-01T00:00:00.5+01:00","duration":1.001,"data":{"b":2,"a":{"d":1,"c":[1.50]}}},
            {"timestamp":"2020-01-01T00:00:00Z","data":{"ok":true}}
        ]}}}"#;
        let fast = parse_import_document(text).unwrap().buckets;
        let model: aw_models::BucketsExport = serde_json::from_str(text).unwrap();
        let bucket = &model.buckets["k"];
        let slow = NewEvent::from_events(bucket.events.as_ref().unwrap()).unwrap();
        let slow: Vec<NewEvent> = slow
            .into_iter()
            .map(|e| NewEvent { id: None, ..e })
            .collect();
        assert_eq!(fast.len(), 1);
        assert_eq!(fast[0].1, slow);
        assert_eq!(fast[0].0.id, "b");
        assert_eq!(fast[0].0.data, bucket.data);
        assert_eq!(fast[0].1[0].data, r#"{"a":{"c":[1.5],"d":1},"b":2}"#);
    }

    #[test]
    fn events_that_cannot_be_imported_are_reported_and_the_rest_kept() {
        let deep = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        for (event, reason) in [
            (r#"{"timestamp":"bad","data":{}}"#.to_string(), "timestamp"),
            (
                r#"{"timestamp":"3000-01-01T00:00:00Z","data":{}}"#.to_string(),
                "1678-2262",
            ),
            (
                r#"{"timestamp":"2020-01-01T00:00:00Z","duration":1e13,"data":{}}"#.to_string(),
                "duration",
            ),
            (
                r#"{"timestamp":"2020-01-01T00:00:00Z","data":[]}"#.to_string(),
                "not a JSON object",
            ),
            (
                r#"{"timestamp":"2020-01-01T00:00:00Z"}"#.to_string(),
                "missing field `data`",
            ),
            ("7".to_string(), "invalid type"),
            (
                format!(
                    r#"{{"timestamp":"2020-01-01T00:00:00Z","data":{}}}"#,
                    deep(200)
                ),
                "recursion limit exceeded",
            ),
            (
                r#"{"timestamp":"2020-01-01T00:00:00Z","data":{"n":1e400}}"#.to_string(),
                "number out of range",
            ),
        ] {
            let text = format!(
                r#"{{"buckets":{{"k":{{"id":"b","type":"t","client":"c","hostname":"h","events":[
                    {{"timestamp":"2020-01-01T00:00:00Z","data":{{}}}},{event}]}}}}}}"#
            );
            let doc = parse_import_document(&text).unwrap();
            assert_eq!((doc.events, doc.skipped), (1, 1), "{event}");
            assert_eq!(doc.buckets[0].1.len(), 1, "{event}");
            let problem = &doc.problems[0];
            assert_eq!((problem.bucket.as_str(), problem.index), ("k", 1));
            assert!(problem.reason.contains(reason), "{event}: {problem:?}");
        }
        // Thousands of bad events: all counted, the first hundred described.
        let bad = vec![r#"{"timestamp":"garbage","data":{}}"#; 1000].join(",");
        let text = format!(
            r#"{{"buckets":{{"k":{{"id":"b","type":"t","client":"c","hostname":"h","events":[{bad}]}}}}}}"#
        );
        let doc = parse_import_document(&text).unwrap();
        assert_eq!(
            (doc.events, doc.skipped, doc.problems.len()),
            (0, 1000, MAX_PROBLEMS)
        );
        // Depth 120 is stored.
        let text = format!(
            r#"{{"buckets":{{"k":{{"id":"b","type":"t","client":"c","hostname":"h","events":[
                {{"timestamp":"2020-01-01T00:00:00Z","data":{}}}]}}}}}}"#,
            deep(120)
        );
        assert_eq!(parse_import_document(&text).unwrap().buckets[0].1.len(), 1);
    }

    #[test]
    fn malformed_documents_fail() {
        assert!(parse_import_document("{}").is_err());
        assert!(parse_import_document(r#"{"buckets":{"x":{"id":"x"}}}"#).is_err());
        assert!(parse_import_document("{bad").is_err());
    }
}
