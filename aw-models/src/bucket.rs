//! Buckets: named containers of events of one type from one client on one host.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Event;

/// A bucket as the API shows it and as the create route and exports accept it.
///
/// Field order is the reference's output order. `metadata` is computed by the server and
/// ignored on input; `events` is only present in exports and imports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// Internal row id; never sent over HTTP.
    #[serde(skip)]
    pub bid: Option<i64>,
    /// The public bucket id, e.g. `aw-watcher-window_myhost`.
    #[serde(default)]
    pub id: String,
    /// Event type, e.g. `currentwindow`, `afkstatus`, `web.tab.current`.
    #[serde(rename = "type")]
    pub _type: String,
    /// Name of the client that created the bucket.
    pub client: String,
    /// Host the events were recorded on.
    pub hostname: String,
    /// Creation time; the server fills in "now" when absent.
    #[serde(default)]
    pub created: Option<DateTime<Utc>>,
    /// Free-form bucket data.
    #[serde(default)]
    pub data: Map<String, Value>,
    /// First event start and last event end, maintained by the server (read back by clients;
    /// ignored when a bucket is created or imported; `null` reads as empty).
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: BucketMetadata,
    /// The events, only in exports/imports and bucket creation. An element that does not
    /// parse fails the whole bucket (the reference skipped it silently, losing the event
    /// while answering 200).
    #[serde(default)]
    pub events: Option<Vec<Event>>,
    /// Echoed back when given on create (reference quirk); not stored.
    #[serde(default)]
    pub last_updated: Option<DateTime<Utc>>,
}

impl Bucket {
    /// A bucket with its identity fields set and everything else empty: what a watcher
    /// creates, and what the server fills in (`created`) or computes (`metadata`).
    pub fn new(id: &str, bucket_type: &str, client: &str, hostname: &str) -> Bucket {
        Bucket {
            bid: None,
            id: id.to_string(),
            _type: bucket_type.to_string(),
            client: client.to_string(),
            hostname: hostname.to_string(),
            created: None,
            data: Map::new(),
            metadata: BucketMetadata::default(),
            events: None,
            last_updated: None,
        }
    }
}

/// The time span a bucket's events cover; `None` while the bucket has no events.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BucketMetadata {
    /// Earliest event start.
    #[serde(default)]
    pub start: Option<DateTime<Utc>>,
    /// Latest event end.
    #[serde(default)]
    pub end: Option<DateTime<Utc>>,
}

/// Reads `null` as the default value.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialises_in_reference_order() {
        let b: Bucket = serde_json::from_value(json!({
            "type": "currentwindow", "client": "c", "hostname": "h",
            "created": "2024-01-01T10:00:00.123456789+00:00"
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"id":"","type":"currentwindow","client":"c","hostname":"h","created":"2024-01-01T10:00:00.123456789Z","data":{},"metadata":{"start":null,"end":null},"events":null,"last_updated":null}"#
        );
    }

    #[test]
    fn metadata_reads_back() {
        let b: Bucket = serde_json::from_value(json!({
            "type": "t", "client": "c", "hostname": "h",
            "metadata": {"start": "2024-01-01T10:00:01Z", "end": null}
        }))
        .unwrap();
        assert!(b.metadata.start.is_some() && b.metadata.end.is_none());
        let b: Bucket = serde_json::from_value(json!({
            "type": "t", "client": "c", "hostname": "h", "metadata": null
        }))
        .unwrap();
        assert_eq!(b.metadata, BucketMetadata::default());
    }

    #[test]
    fn requires_type_client_hostname() {
        for missing in ["type", "client", "hostname"] {
            let mut v = json!({"type": "t", "client": "c", "hostname": "h"});
            v.as_object_mut().unwrap().remove(missing);
            assert!(serde_json::from_value::<Bucket>(v).is_err());
        }
    }
}
