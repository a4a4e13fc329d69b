//! Event routes through the real binary: insert, list (start/end/limit, clipping, order),
//! count, get one, delete one, heartbeat.

use aw_tests::{Client, TestServer};
use serde_json::{json, Value};

fn setup() -> (TestServer, Client) {
    let s = TestServer::start();
    let mut c = s.client();
    c.create_test_bucket("b");
    (s, c)
}

fn ev(ts: &str, dur: f64, data: Value) -> Value {
    json!({"timestamp": ts, "duration": dur, "data": data})
}

#[test]
fn insert_answers_stored_events_with_ids() {
    let (_s, mut c) = setup();
    let r = c.post_json(
        "/api/0/buckets/b/events",
        &json!([ev("2018-01-01T01:01:01Z", 1.0, json!({"b": 2, "a": 1}))]).to_string(),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        r#"[{"id":1,"timestamp":"2018-01-01T01:01:01Z","duration":1.0,"data":{"a":1,"b":2}}]"#
    );
    // Python aw-client's form: id null, +00:00 offset, ms precision.
    let r = c.post_json(
        "/api/0/buckets/b/events",
        r#"[{"id": null, "timestamp": "2024-01-01T00:00:00.123000+00:00", "duration": 1.001, "data": {}}]"#,
    );
    assert_eq!(r.json()[0]["timestamp"], "2024-01-01T00:00:00.123Z");
    // Durations are kept to the nearest nanosecond (the reference truncated to 1.000999999).
    assert_eq!(r.json()[0]["duration"], json!(1.001));
}

#[test]
fn insert_errors() {
    let (_s, mut c) = setup();
    // A single object instead of an array → 422.
    assert_eq!(
        c.post_json(
            "/api/0/buckets/b/events",
            &ev("2018-01-01T01:01:01Z", 1.0, json!({})).to_string()
        )
        .status,
        422
    );
    // Naive timestamp, string duration, null duration → 422.
    for bad in [
        r#"[{"timestamp":"2018-01-01T01:01:01","data":{}}]"#,
        r#"[{"timestamp":"2018-01-01T01:01:01Z","duration":"1","data":{}}]"#,
        r#"[{"timestamp":"2018-01-01T01:01:01Z","duration":null,"data":{}}]"#,
        r#"[{"timestamp":"2018-01-01T01:01:01Z"}]"#,
    ] {
        assert_eq!(
            c.post_json("/api/0/buckets/b/events", bad).status,
            422,
            "{bad}"
        );
    }
    // Out-of-range values (the reference's worker panicked): a clear 4xx naming the field,
    // and the server stays healthy.
    for bad in [
        r#"[{"timestamp":"1500-01-01T00:00:00Z","data":{}}]"#,
        r#"[{"timestamp":"2300-01-01T00:00:00Z","data":{}}]"#,
        r#"[{"timestamp":"2018-01-01T00:00:00Z","duration":1e12,"data":{}}]"#,
    ] {
        let r = c.post_json("/api/0/buckets/b/events", bad);
        assert_eq!(r.status, 422, "{bad}");
        let msg = r.json()["message"].as_str().unwrap().to_string();
        assert!(
            msg.contains("timestamp") || msg.contains("duration"),
            "{msg}"
        );
    }
    assert_eq!(c.get("/api/0/buckets/b/events/count").body, "0");
    // Malformed JSON → 400; missing bucket → 404 except for an empty list.
    assert_eq!(
        c.post_json("/api/0/buckets/b/events", r#"[{"timestamp":"#)
            .status,
        400
    );
    assert_eq!(
        c.post_json(
            "/api/0/buckets/nope/events",
            &json!([ev("2018-01-01T01:01:01Z", 1.0, json!({}))]).to_string()
        )
        .status,
        404
    );
    let r = c.post_json("/api/0/buckets/nope/events", "[]");
    assert_eq!((r.status, r.body.as_str()), (200, "[]"));
}

#[test]
fn list_order_limit_range_and_clipping() {
    let (_s, mut c) = setup();
    let events: Vec<Value> = (0..10)
        .map(|i| {
            ev(
                &format!("2020-01-01T00:00:{:02}Z", i * 5),
                2.0,
                json!({"i": i}),
            )
        })
        .collect();
    c.post_json("/api/0/buckets/b/events", &Value::Array(events).to_string());
    let all = c.get("/api/0/buckets/b/events").json();
    assert_eq!(all.as_array().unwrap().len(), 10);
    assert_eq!(all[0]["data"]["i"], 9);
    assert_eq!(all[9]["data"]["i"], 0);
    for (q, n) in [
        ("limit=3", 3),
        ("limit=0", 0),
        ("limit=-1", 10),
        ("limit=abc", 10),
        ("limit=100", 10),
    ] {
        assert_eq!(
            c.get(&format!("/api/0/buckets/b/events?{q}"))
                .json()
                .as_array()
                .unwrap()
                .len(),
            n,
            "{q}"
        );
    }
    assert_eq!(
        c.get("/api/0/buckets/b/events?limit=2").json()[0]["data"]["i"],
        9
    );
    // [00:00:06, 00:00:16]: event 1 (5–7) clipped to 6–7, 2 (10–12), 3 (15–17) clipped to 15–16.
    let r = c
        .get("/api/0/buckets/b/events?start=2020-01-01T00:00:06Z&end=2020-01-01T00:00:16%2B00:00")
        .json();
    let got: Vec<(i64, String, f64)> = r
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["data"]["i"].as_i64().unwrap(),
                e["timestamp"].as_str().unwrap().to_string(),
                e["duration"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (3, "2020-01-01T00:00:15Z".into(), 1.0),
            (2, "2020-01-01T00:00:10Z".into(), 2.0),
            (1, "2020-01-01T00:00:06Z".into(), 1.0)
        ]
    );
    // Touching events come back with duration 0; start > end is empty.
    let r = c
        .get("/api/0/buckets/b/events?start=2020-01-01T00:00:07Z&end=2020-01-01T00:00:10Z")
        .json();
    assert_eq!(r.as_array().unwrap().len(), 2);
    assert_eq!(r[0]["duration"], json!(0.0));
    assert_eq!(
        c.get("/api/0/buckets/b/events?start=2020-01-01T00:00:30Z&end=2020-01-01T00:00:10Z")
            .body,
        "[]"
    );
    // Bad timestamps in the query string: 400 with the reference's message.
    let r = c.get("/api/0/buckets/b/events?start=2020-01-01T00:00:00+00:00");
    assert_eq!(r.status, 400);
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("Failed to parse starttime, datetime needs to be in rfc3339 format"));
    assert_eq!(c.get("/api/0/buckets/b/events?end=yesterday").status, 400);
    assert_eq!(
        c.get("/api/0/buckets/b/events?start=1200-01-01T00:00:00Z")
            .status,
        400
    );
    assert_eq!(c.get("/api/0/buckets/nope/events").status, 404);
}

#[test]
fn count_honours_range() {
    let (_s, mut c) = setup();
    let events: Vec<Value> = (0..10)
        .map(|i| ev(&format!("2020-01-01T00:00:{:02}Z", i * 5), 2.0, json!({})))
        .collect();
    c.post_json("/api/0/buckets/b/events", &Value::Array(events).to_string());
    assert_eq!(c.get("/api/0/buckets/b/events/count").body, "10");
    assert_eq!(c.get("/api/0/buckets/b/events/count/").body, "10");
    assert_eq!(
        c.get("/api/0/buckets/b/events/count?start=2020-01-01T00:00:20Z&end=2020-01-01T00:00:31Z")
            .body,
        "3"
    );
    assert_eq!(c.get("/api/0/buckets/nope/events/count").status, 404);
}

#[test]
fn get_and_delete_one() {
    let (_s, mut c) = setup();
    let r = c.post_json(
        "/api/0/buckets/b/events",
        &json!([ev("2018-01-01T01:01:01Z", 1.5, json!({"x": "y"}))]).to_string(),
    );
    let id = r.json()[0]["id"].as_i64().unwrap();
    let one = c.get(&format!("/api/0/buckets/b/events/{id}"));
    assert_eq!(one.json(), r.json()[0]);
    // Missing id: 404 (the reference answered 500); non-integer: 422.
    let r = c.get("/api/0/buckets/b/events/9999");
    assert_eq!(r.status, 404);
    assert!(r.json()["message"].as_str().unwrap().contains("9999"));
    assert_eq!(c.get("/api/0/buckets/b/events/abc").status, 422);
    assert_eq!(c.get("/api/0/buckets/nope/events/1").status, 404);
    assert_eq!(c.delete("/api/0/buckets/b/events/9999").status, 200);
    assert_eq!(c.delete("/api/0/buckets/b/events/abc").status, 422);
    let r = c.delete(&format!("/api/0/buckets/b/events/{id}"));
    assert_eq!((r.status, r.body.as_str()), (200, ""));
    assert_eq!(c.get(&format!("/api/0/buckets/b/events/{id}")).status, 404);
}

#[test]
fn replace_by_id() {
    let (_s, mut c) = setup();
    c.post_json(
        "/api/0/buckets/other",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    let id = c
        .post_json(
            "/api/0/buckets/b/events",
            &json!([ev("2018-01-01T01:01:01Z", 1.0, json!({"v": 1}))]).to_string(),
        )
        .json()[0]["id"]
        .clone();
    let replacement =
        json!([{"id": id, "timestamp": "2018-01-01T01:01:01Z", "duration": 5.0, "data": {"v": 2}}]);
    let r = c.post_json("/api/0/buckets/b/events", &replacement.to_string());
    assert_eq!(r.json()[0]["id"], id);
    assert_eq!(c.get("/api/0/buckets/b/events/count").body, "1");
    assert_eq!(
        c.get(&format!("/api/0/buckets/b/events/{id}")).json()["data"]["v"],
        2
    );
    // The same id into another bucket is refused (the reference moved the event).
    let r = c.post_json("/api/0/buckets/other/events", &replacement.to_string());
    assert_eq!(r.status, 400);
    assert_eq!(c.get(&format!("/api/0/buckets/b/events/{id}")).status, 200);
}

#[test]
fn heartbeat_merges_like_the_reference() {
    let (_s, mut c) = setup();
    c.post_json(
        "/api/0/buckets/b/events",
        &json!([ev("2018-01-01T01:01:01Z", 1.0, json!({}))]).to_string(),
    );
    let r = c.post_json(
        "/api/0/buckets/b/heartbeat?pulsetime=2",
        &ev("2018-01-01T01:01:02Z", 1.0, json!({})).to_string(),
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        r#"{"id":1,"timestamp":"2018-01-01T01:01:01Z","duration":2.0,"data":{}}"#
    );
    assert_eq!(c.get("/api/0/buckets/b/events/count").body, "1");
    // Different data → new event; pulsetime forms 2.5 and 1e1 parse.
    let r = c.post_json(
        "/api/0/buckets/b/heartbeat?pulsetime=2.5",
        &ev("2018-01-01T01:01:03Z", 0.0, json!({"a": 1})).to_string(),
    );
    assert_eq!(r.json()["id"], 2);
    let r = c.post_json(
        "/api/0/buckets/b/heartbeat?pulsetime=1e1",
        &ev("2018-01-01T01:01:12Z", 0.0, json!({"a": 1})).to_string(),
    );
    assert_eq!(r.json()["id"], 2);
    assert_eq!(r.json()["duration"], json!(9.0));
    // Read-your-writes: the merge is visible at once.
    assert_eq!(
        c.get("/api/0/buckets/b/events?limit=1").json()[0]["duration"],
        json!(9.0)
    );
}

#[test]
fn heartbeat_errors() {
    let (_s, mut c) = setup();
    let hb = ev("2018-01-01T01:01:02Z", 0.0, json!({})).to_string();
    assert_eq!(c.post_json("/api/0/buckets/b/heartbeat", &hb).status, 422);
    assert_eq!(
        c.post_json("/api/0/buckets/b/heartbeat?pulsetime=abc", &hb)
            .status,
        422
    );
    assert_eq!(
        c.post_json("/api/0/buckets/b/heartbeat?pulsetime=NaN", &hb)
            .status,
        400
    );
    assert_eq!(
        c.post_json("/api/0/buckets/nope/heartbeat?pulsetime=1", &hb)
            .status,
        404
    );
    assert_eq!(
        c.post_json("/api/0/buckets/b/heartbeat?pulsetime=1", "[]")
            .status,
        422
    );
    assert_eq!(
        c.post_json(
            "/api/0/buckets/b/heartbeat?pulsetime=1",
            r#"{"timestamp":"9999-01-01T00:00:00Z","data":{}}"#
        )
        .status,
        422
    );
}

#[test]
fn heartbeat_after_bucket_recreate() {
    // The reference answered 500 here (stale last-event cache).
    let (_s, mut c) = setup();
    c.post_json(
        "/api/0/buckets/b/heartbeat?pulsetime=10",
        &ev("2018-01-01T01:01:00Z", 0.0, json!({"a": 1})).to_string(),
    );
    c.delete("/api/0/buckets/b");
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    let r = c.post_json(
        "/api/0/buckets/b/heartbeat?pulsetime=10",
        &ev("2018-01-01T01:01:01Z", 0.0, json!({"a": 1})).to_string(),
    );
    assert_eq!(r.status, 200);
    assert_eq!(c.get("/api/0/buckets/b/events/count").body, "1");
}

#[test]
fn trailing_and_doubled_slashes_route_the_same() {
    let (_s, mut c) = setup();
    for path in [
        "/api/0/buckets/b/events",
        "/api/0/buckets/b/events/",
        "//api//0/buckets/b/events",
    ] {
        assert_eq!(c.get(path).status, 200, "{path}");
    }
    assert_eq!(c.get("/api/0/buckets/b/events/?limit=1").status, 200);
}

/// A client-chosen id never moves the id sequence (COMPATIBILITY.md, server #18): an unused id, even
/// `i64::MAX`, gets a fresh id instead, through insert and import alike, and every later
/// insert and heartbeat of every bucket still works, also after a restart.
#[test]
fn a_client_chosen_id_never_moves_the_id_sequence() {
    let (mut s, mut c) = setup();
    c.post_json(
        "/api/0/buckets/other",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    for id in [i64::MAX, i64::MAX - 1, 1 << 62, 1_000_000] {
        let r = c.post_json(
            "/api/0/buckets/b/events",
            &json!([{"id": id, "timestamp": "2018-01-01T01:01:01Z", "duration": 1.0, "data": {"id": id}}])
                .to_string(),
        );
        assert_eq!(r.status, 200, "{id}: {}", r.body);
        let given = r.json()[0]["id"].as_i64().unwrap();
        assert!(given < 100, "id {id} was used as given: {given}");
        assert_eq!(c.get(&format!("/api/0/buckets/b/events/{id}")).status, 404);
        assert_eq!(
            c.get(&format!("/api/0/buckets/b/events/{given}")).json()["data"]["id"],
            id
        );
    }
    let doc = json!({"buckets": {"imported": {"id": "imported", "type": "t", "client": "c",
    "hostname": "h", "events": [
        {"id": i64::MAX, "timestamp": "2018-01-01T01:01:01Z", "duration": 1.0, "data": {}}
    ]}}});
    assert_eq!(c.post_json("/api/0/import", &doc.to_string()).status, 200);
    for round in 0..2 {
        for bucket in ["b", "other", "imported"] {
            let r = c.post_json(
                &format!("/api/0/buckets/{bucket}/events"),
                &json!([ev("2019-01-01T00:00:00Z", 1.0, json!({"round": round}))]).to_string(),
            );
            assert_eq!(r.status, 200, "{bucket}: {}", r.body);
            assert!(r.json()[0]["id"].as_i64().unwrap() < 100);
            let r = c.post_json(
                &format!("/api/0/buckets/{bucket}/heartbeat?pulsetime=0"),
                &ev("2020-01-01T00:00:00Z", 0.0, json!({"hb": round})).to_string(),
            );
            assert_eq!(r.status, 200, "{bucket}: {}", r.body);
        }
        s.restart();
        c = s.client();
    }
    assert_eq!(c.get("/api/0/buckets/b/events/count").body, "8");
}

/// A repeated `start`, `end` or `limit` is a 400, not silently dropped (which answered the
/// whole bucket as if no filter had been given).
#[test]
fn repeated_range_parameters_are_refused() {
    let (_s, mut c) = setup();
    c.post_json(
        "/api/0/buckets/b/events",
        &json!([ev("2020-01-01T00:00:00Z", 10.0, json!({}))]).to_string(),
    );
    for query in [
        "start=2030-01-01T00:00:00Z&start=2031-01-01T00:00:00Z",
        "end=2010-01-01T00:00:00Z&end=2011-01-01T00:00:00Z",
        "limit=0&limit=0",
        "start=null&start=null",
    ] {
        for route in ["events", "events/count"] {
            if route == "events/count" && query.starts_with("limit") {
                continue;
            }
            let r = c.get(&format!("/api/0/buckets/b/{route}?{query}"));
            assert_eq!(r.status, 400, "{route}?{query}: {}", r.body);
            assert!(r.json()["message"]
                .as_str()
                .unwrap()
                .contains("more than once"));
        }
    }
    assert_eq!(c.get("/api/0/buckets/b/events?limit=0").body, "[]");
}
