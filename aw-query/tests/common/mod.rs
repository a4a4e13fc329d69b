//! Helpers shared by the integration tests.
#![allow(dead_code)]

use aw_models::{Event, TimeInterval};
use aw_query::{query, MemoryDataSource, QueryError};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};

/// The period of the results observed from the reference server.
pub const WIDE: &str = "2000-01-01T00:00:00Z/2030-01-01T00:00:00Z";

/// Parses an RFC 3339 timestamp.
pub fn ts(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// An event from a timestamp, float seconds and a JSON data object.
pub fn event(id: Option<i64>, timestamp: &str, seconds: f64, data: Value) -> Event {
    let data: Map<String, Value> = match data {
        Value::Object(m) => m,
        _ => panic!("data must be an object"),
    };
    Event {
        id,
        timestamp: ts(timestamp),
        duration: Duration::nanoseconds((seconds * 1e9).round() as i64),
        data,
    }
}

/// A period from `start/end` text.
pub fn period(s: &str) -> TimeInterval {
    s.parse().unwrap()
}

/// Runs `code` over the given periods and renders the whole response (or the error message)
/// as the server would send it.
pub fn run_periods(ds: &MemoryDataSource, code: &str, periods: &[&str]) -> Result<String, String> {
    let periods: Vec<TimeInterval> = periods.iter().map(|p| period(p)).collect();
    query(code, &periods, ds)
        .map(|v| serde_json::to_string(&v).unwrap())
        .map_err(|e| e.to_string())
}

/// Runs `code` over [`WIDE`].
pub fn run(ds: &MemoryDataSource, code: &str) -> Result<String, String> {
    run_periods(ds, code, &[WIDE])
}

/// Runs `code` over [`WIDE`] with no buckets.
pub fn run0(code: &str) -> Result<String, String> {
    run(&MemoryDataSource::new(), code)
}

/// Runs `code` over [`WIDE`] and returns the single result value.
pub fn value(ds: &MemoryDataSource, code: &str) -> Value {
    let periods = [period(WIDE)];
    match query(code, &periods, ds) {
        Ok(mut v) => v.remove(0),
        Err(e) => panic!("query failed: {e}\n{code}"),
    }
}

/// Runs `code` over [`WIDE`] and returns the error.
pub fn error(ds: &MemoryDataSource, code: &str) -> QueryError {
    let periods = [period(WIDE)];
    match query(code, &periods, ds) {
        Ok(v) => panic!("expected an error, got {v:?}\n{code}"),
        Err(e) => e,
    }
}

/// The bucket `b` of the documented example: events A, B, C, D with ids 1–4.
pub fn abcd() -> MemoryDataSource {
    let mut ds = MemoryDataSource::new();
    ds.add_bucket(
        "b",
        "currentwindow",
        "host",
        vec![
            event(Some(1), "2024-01-01T00:00:00Z", 1.0, serde_json::json!({"app": "a", "title": "t1", "n": 1})),
            event(Some(2), "2024-01-01T00:00:03Z", 1.0, serde_json::json!({"app": "a", "title": "t1", "n": 1})),
            event(Some(3), "2024-01-01T00:00:06Z", 2.0, serde_json::json!({"app": "b", "title": "GitHub - x", "n": 2})),
            event(
                Some(4),
                "2024-01-01T00:00:20Z",
                1.0015,
                serde_json::json!({"app": "a", "title": "t2", "url": "https://www.www.Example.com:8080/p/a%20b?x=1&y=2#frag"}),
            ),
        ],
    );
    ds
}
