//! The event: something that happened at a time, for a while, described by a JSON object.

use chrono::{DateTime, Duration, Utc};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{duration, timestamp, TimeInterval};

/// One event of a bucket.
///
/// Serialises as `{"id", "timestamp", "duration", "data"}` in that order. Deserialising
/// validates that the event can be stored: `timestamp` and `timestamp + duration` must be
/// representable as `i64` nanoseconds since the epoch and `duration` must be a finite number.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "WireEvent")]
pub struct Event {
    /// Database id; `None` for events not stored yet (or synthesised by a query).
    pub id: Option<i64>,
    /// Start of the event.
    pub timestamp: DateTime<Utc>,
    /// Length of the event; may be zero, and (as in the reference) negative.
    pub duration: Duration,
    /// What the event describes, e.g. `{"app": …, "title": …}`.
    pub data: Map<String, Value>,
}

impl Event {
    /// A new event without an id.
    pub fn new(timestamp: DateTime<Utc>, duration: Duration, data: Map<String, Value>) -> Self {
        Event {
            id: None,
            timestamp,
            duration,
            data,
        }
    }

    /// The instant the event ends (`timestamp + duration`).
    pub fn calculate_endtime(&self) -> DateTime<Utc> {
        self.timestamp + self.duration
    }

    /// The covered interval as a [`TimeInterval`].
    pub fn interval(&self) -> TimeInterval {
        TimeInterval::new(self.timestamp, self.calculate_endtime())
    }

    /// Start in nanoseconds since the epoch. Valid for every event that passed
    /// deserialisation or came from the database.
    pub fn start_ns(&self) -> i64 {
        timestamp::to_ns(&self.timestamp).unwrap_or(i64::MIN)
    }

    /// End in nanoseconds since the epoch (saturating).
    pub fn end_ns(&self) -> i64 {
        self.start_ns()
            .saturating_add(duration::to_ns(&self.duration))
    }

    /// Checks that the event fits the storage format; the message names the bad field.
    pub fn validate(&self) -> Result<(), String> {
        let start = timestamp::to_ns(&self.timestamp).ok_or_else(|| {
            format!(
                "event timestamp {} is outside the storable range (years 1677 to 2262)",
                timestamp::format(&self.timestamp)
            )
        })?;
        let dur = self
            .duration
            .num_nanoseconds()
            .ok_or_else(|| "event duration is too large to store".to_string())?;
        start.checked_add(dur).ok_or_else(|| {
            "event duration is too large: timestamp + duration is outside the storable range"
                .to_string()
        })?;
        Ok(())
    }
}

/// The JSON shape of an event on input, before validation.
#[derive(Deserialize)]
struct WireEvent {
    #[serde(default)]
    id: Option<i64>,
    #[serde(deserialize_with = "timestamp::deserialize_event_timestamp")]
    timestamp: DateTime<Utc>,
    #[serde(default)]
    duration: f64,
    data: Map<String, Value>,
}

impl TryFrom<WireEvent> for Event {
    type Error = String;

    fn try_from(wire: WireEvent) -> Result<Self, Self::Error> {
        let duration = duration::from_secs_f64(wire.duration).ok_or_else(|| {
            format!(
                "event duration {} is not a storable number of seconds",
                wire.duration
            )
        })?;
        let event = Event {
            id: wire.id,
            timestamp: wire.timestamp,
            duration,
            data: wire.data,
        };
        event.validate()?;
        Ok(event)
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Event", 4)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("timestamp", &timestamp::format(&self.timestamp))?;
        s.serialize_field("duration", &duration::to_secs_f64(&self.duration))?;
        s.serialize_field("data", &self.data)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_in_reference_format() {
        let e: Event = serde_json::from_value(json!({
            "timestamp": "2018-01-01T02:01:01+01:00", "duration": 1.001, "data": {"b": 1, "a": 2}
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"id":null,"timestamp":"2018-01-01T01:01:01Z","duration":1.001,"data":{"a":2,"b":1}}"#
        );
    }

    #[test]
    fn accepts_reference_timestamp_forms() {
        for ts in [
            "2018-01-01T01:01:01Z",
            "2018-01-01t01:01:01z",
            "2018-01-01 01:01:01+00:00",
            "2018-01-01T01:01:01.123456789123+0000",
        ] {
            let r: Result<Event, _> = serde_json::from_value(json!({"timestamp": ts, "data": {}}));
            assert!(r.is_ok(), "{ts}: {r:?}");
        }
        for ts in ["2018-01-01T01:01:01", "2018-01-01T01:01Z", "nope"] {
            let r: Result<Event, _> = serde_json::from_value(json!({"timestamp": ts, "data": {}}));
            assert!(r.is_err(), "{ts}");
        }
    }

    #[test]
    fn rejects_unstorable_events() {
        for v in [
            json!({"timestamp": "1500-01-01T00:00:00Z", "data": {}}),
            json!({"timestamp": "2300-01-01T00:00:00Z", "data": {}}),
            json!({"timestamp": "2018-01-01T00:00:00Z", "duration": 1e12, "data": {}}),
            json!({"timestamp": "2262-01-01T00:00:00Z", "duration": 9e9, "data": {}}),
            json!({"timestamp": "2018-01-01T00:00:00Z", "duration": "1", "data": {}}),
            json!({"timestamp": "2018-01-01T00:00:00Z", "duration": null, "data": {}}),
            json!({"timestamp": "2018-01-01T00:00:00Z", "data": []}),
            json!({"timestamp": "2018-01-01T00:00:00Z"}),
        ] {
            assert!(serde_json::from_value::<Event>(v.clone()).is_err(), "{v}");
        }
    }

    #[test]
    fn integer_duration_and_null_id_accepted() {
        let e: Event = serde_json::from_value(
            json!({"id": null, "timestamp": "2018-01-01T00:00:00Z", "duration": 2, "data": {}}),
        )
        .unwrap();
        assert_eq!(e.duration, Duration::seconds(2));
        assert_eq!(e.id, None);
    }
}
