//! `POST /api/0/storage/compact` through the real binary (issue 48, item 3): on two weeks
//! of the generated history, with aw-watcher-afk's duplicate events and window events split
//! by missed heartbeats added, the compaction removes events and changes no number
//! `/api/0/summary` gives — by app, title, domain and category, and by day and hour in time
//! zones a whole, a half and three quarters of an hour from UTC. The query cache learns of
//! it (the raw events a query reads are the new ones), a second compaction finds nothing,
//! and bad requests get a 4xx naming what is wrong.

use aw_tests::dataset::{Dataset, GenEvent};
use aw_tests::{Client, TestServer};
use serde_json::Value;

const NS: i64 = 1_000_000_000;
/// 2026-03-02T00:00:00Z.
const START: i64 = 1_772_409_600 * NS;
const DAYS: i64 = 14;
const HOST: &str = "h";

/// Two weeks of the generated history, with about a fourth of the not-AFK events repeated with
/// the same start and half the length (aw-watcher-afk #61), and a third of the window
/// events longer than 3 s split in two around a hole of 0.4 s.
fn history() -> Dataset {
    let mut data = Dataset::generate(7, HOST, START, DAYS);
    for bucket in &mut data.buckets {
        let mut events = Vec::with_capacity(bucket.events.len() * 2);
        for (i, e) in bucket.events.drain(..).enumerate() {
            match bucket.type_.as_str() {
                "afkstatus" if e.data.contains("not-afk") && i % 8 < 2 => {
                    events.push(GenEvent {
                        duration: e.duration / 2,
                        ..e.clone()
                    });
                    events.push(e);
                }
                "currentwindow" if e.duration > 3 * NS && i % 3 == 0 => {
                    let half = e.duration / 2;
                    events.push(GenEvent {
                        duration: half - 200_000_000,
                        ..e.clone()
                    });
                    events.push(GenEvent {
                        start: e.start + half + 200_000_000,
                        duration: e.duration - half - 200_000_000,
                        data: e.data,
                    });
                }
                _ => events.push(e),
            }
        }
        bucket.events = events;
    }
    data
}

const RANGE: &str = "start=2026-03-02T00:00:00Z&end=2026-03-16T00:00:00Z";

/// Every grouping `/api/0/summary` offers, in three time zones.
fn summaries(c: &mut Client) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for by in ["app", "title", "domain", "category"] {
        let query = format!("/api/0/summary?{RANGE}&hostname={HOST}&by={by}&limit=10000");
        out.push((query.clone(), get(c, &query)));
    }
    for tz in ["UTC", "Asia/Kolkata", "Asia/Kathmandu"] {
        for by in ["day", "hour"] {
            let query = format!("/api/0/summary?{RANGE}&hostname={HOST}&by={by}&tz={tz}");
            out.push((query.clone(), get(c, &query)));
        }
    }
    out
}

fn get(c: &mut Client, path: &str) -> Value {
    let r = c.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.json()
}

fn compact(c: &mut Client, body: &str) -> Value {
    let r = c.post_json("/api/0/storage/compact", body);
    assert_eq!(r.status, 200, "{body}: {}", r.body);
    r.json()
}

/// The raw events of a bucket a query reads, counted by the query engine.
fn queried_count(c: &mut Client, bucket: &str) -> u64 {
    let body = serde_json::json!({
        "timeperiods": ["2026-03-01T00:00:00+00:00/2026-03-17T00:00:00+00:00"],
        "query": [format!("RETURN = query_bucket(\"{bucket}\");")],
    });
    let r = c.post_json("/api/0/query/", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()[0].as_array().unwrap().len() as u64
}

#[test]
fn compaction_removes_events_and_changes_no_summary() {
    let data = history();
    let s = aw_tests::year::server_with(&data);
    let mut c = s.client();
    let window = format!("aw-watcher-window_{HOST}");
    let before = summaries(&mut c);
    let window_before = queried_count(&mut c, &window);

    let preview = compact(&mut c, r#"{"dry_run": true}"#);
    assert_eq!(preview["dry_run"], true);
    let removed = preview["removed"].as_u64().unwrap();
    assert!(removed > 1_000, "{preview}");
    assert_eq!(
        preview["events_before"].as_u64().unwrap(),
        data.event_count() as u64
    );
    let by_type = |report: &Value, prefix: &str, field: &str| -> u64 {
        report["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["bucket"].as_str().unwrap().starts_with(prefix))
            .map(|b| b[field].as_u64().unwrap())
            .sum()
    };
    assert!(
        by_type(&preview, "aw-watcher-afk", "duplicates") > 50,
        "{preview}"
    );
    assert!(
        by_type(&preview, "aw-watcher-window", "merged") > 1_000,
        "{preview}"
    );
    // A preview changed nothing.
    assert_eq!(queried_count(&mut c, &window), window_before);

    // The wrong count is refused, nothing changed.
    let wrong = format!(r#"{{"dry_run": false, "expect": {}}}"#, removed + 1);
    let r = c.post_json("/api/0/storage/compact", &wrong);
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(queried_count(&mut c, &window), window_before);

    let done = compact(
        &mut c,
        &format!(r#"{{"dry_run": false, "expect": {removed}}}"#),
    );
    assert_eq!(done["removed"], removed, "{done}");
    assert!(done["backup"].is_string(), "{done}");
    assert!(done["reclaimed"]["incremental"] == true, "{done}");
    let after_count = done["events_after"].as_u64().unwrap();
    assert_eq!(after_count + removed, data.event_count() as u64);
    // The query engine reads the compacted events (its cache was told)...
    let window_after = queried_count(&mut c, &window);
    assert_eq!(
        window_before - window_after,
        by_type(&done, "aw-watcher-window", "merged")
            + by_type(&done, "aw-watcher-window", "duplicates")
    );
    // ...and every summary is what it was.
    for ((query, a), (_, b)) in before.iter().zip(summaries(&mut c)) {
        assert_eq!(a, &b, "{query}");
    }
    // Nothing is left to compact.
    assert_eq!(compact(&mut c, r#"{"dry_run": true}"#)["removed"], 0);
    // Across a restart the same (the summaries come from the file, not a memory).
    let mut s = s;
    s.restart();
    let mut c = s.client();
    assert_eq!(queried_count(&mut c, &window), window_after);
}

#[test]
fn bad_compaction_requests_get_a_4xx_that_names_the_problem() {
    let s = TestServer::start();
    let mut c = s.client();
    let r = c.post_json(
        "/api/0/buckets/notes",
        r#"{"client":"c","type":"notes","hostname":"h"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let cases = [
        (r#"{"dry_run": true, "buckets": ["notes"]}"#, 400, "notes"),
        (
            r#"{"dry_run": true, "buckets": ["missing"]}"#,
            404,
            "missing",
        ),
        (r#"{"dry_run": "yes"}"#, 422, "expected a boolean"),
        (r#"{"dry_run": true, "limit": 3}"#, 422, "limit"),
        (r#"{"dry_run": true, "expect": -1}"#, 422, "-1"),
    ];
    for (body, status, named) in cases {
        let r = c.post_json("/api/0/storage/compact", body);
        assert_eq!(r.status, status, "{body}: {}", r.body);
        assert!(r.body.contains(named), "{body}: {status} {}", r.body);
        assert!(r.json()["message"].is_string(), "{body}: {}", r.body);
    }
    // No bucket of a flooded type: nothing to do, and no backup for it.
    let done = compact(&mut c, r#"{"dry_run": false}"#);
    assert_eq!(done["removed"], 0, "{done}");
    assert_eq!(done["backup"], Value::Null, "{done}");
}
