//! Reading an export document for import, fast.
//!
//! An export of a year is hundreds of thousands of events. Parsing it into `Event`s builds a
//! JSON tree per event's `data` only to serialise it again for storage; here every event's
//! `data` stays a slice of the input, checked for canonical form in one pass
//! ([`aw_models::canonical`]), and the document text is walked once more per event, not
//! turned into trees. The result is the same as deserialising `aw_models::BucketsExport`
//! and converting with [`NewEvent::from_event`]: events that do not parse or cannot be stored
//! are skipped, like the reference's lenient list.

use aw_models::{canonical::canonical_object, duration, timestamp, Bucket, BucketMetadata};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
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
    timestamp: DateTime<Utc>,
    #[serde(default)]
    duration: f64,
    #[serde(borrow)]
    data: &'a RawValue,
}

/// Parses an export document (`{"buckets": {…}}`) into buckets and their events, ready for
/// [`crate::Datastore::import_rows`]. Fails like serde would on a malformed document or
/// bucket (400/422 material); skips malformed events.
pub fn parse_import_document(text: &str) -> serde_json::Result<Vec<(Bucket, Vec<NewEvent>)>> {
    let document: Document = serde_json::from_str(text)?;
    Ok(document
        .buckets
        .into_values()
        .map(|b| {
            let events = b
                .events
                .unwrap_or_default()
                .into_iter()
                .filter_map(convert)
                .collect();
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
            (bucket, events)
        })
        .collect())
}

fn convert(raw: &RawValue) -> Option<NewEvent> {
    let e: DocumentEvent = serde_json::from_str(raw.get()).ok()?;
    let start = timestamp::to_ns(&e.timestamp)?;
    let dur = duration::from_secs_f64(e.duration)?.num_nanoseconds()?;
    let end = start.checked_add(dur)?;
    let data = canonical_object(e.data.get())?.into_owned();
    Some(NewEvent {
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
            {"timestamp":"2020-01-01T00:00:00Z","data":{"ok":true}},
            {"timestamp":"bad","data":{}},
            {"timestamp":"2020-01-01T00:00:00Z","duration":1e13,"data":{}},
            {"timestamp":"2020-01-01T00:00:00Z","data":[]},
            7
        ]}}}"#;
        let fast = parse_import_document(text).unwrap();
        let model: aw_models::BucketsExport = serde_json::from_str(text).unwrap();
        let bucket = &model.buckets["k"];
        let slow = NewEvent::from_events(&bucket.events.as_ref().unwrap().0).unwrap();
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
    fn malformed_documents_fail() {
        assert!(parse_import_document("{}").is_err());
        assert!(parse_import_document(r#"{"buckets":{"x":{"id":"x"}}}"#).is_err());
        assert!(parse_import_document("{bad").is_err());
    }
}
