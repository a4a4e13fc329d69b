//! Bucket routes through the real binary: list, get, create (304 on existing), delete.

use aw_tests::TestServer;
use serde_json::json;

const WINDOW: &str = r#"{"client":"aw-watcher-window","type":"currentwindow","hostname":"h"}"#;

#[test]
fn create_get_list_delete() {
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(c.get("/api/0/buckets/").json(), json!({}));
    let r = c.post_json("/api/0/buckets/aw-watcher-window_h", WINDOW);
    assert_eq!((r.status, r.body.as_str()), (200, ""));
    // Existing bucket: 304, no body, nothing changed.
    let r = c.post_json(
        "/api/0/buckets/aw-watcher-window_h",
        r#"{"client":"x","type":"y","hostname":"z"}"#,
    );
    assert_eq!((r.status, r.body.as_str()), (304, ""));
    let b = c.get("/api/0/buckets/aw-watcher-window_h").json();
    assert_eq!(b["id"], "aw-watcher-window_h");
    assert_eq!(b["type"], "currentwindow");
    assert_eq!(b["client"], "aw-watcher-window");
    assert_eq!(b["hostname"], "h");
    assert_eq!(b["metadata"], json!({"start": null, "end": null}));
    assert_eq!(b["events"], json!(null));
    assert!(b["created"].as_str().unwrap().ends_with('Z'));
    // Key order is the reference's.
    let text = c.get("/api/0/buckets/aw-watcher-window_h").body;
    let order: Vec<usize> = [
        "\"id\"",
        "\"type\"",
        "\"client\"",
        "\"hostname\"",
        "\"created\"",
        "\"data\"",
        "\"metadata\"",
        "\"events\"",
        "\"last_updated\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap())
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    let list = c.get("/api/0/buckets").json();
    assert_eq!(list.as_object().unwrap().len(), 1);
    assert_eq!(
        c.delete("/api/0/buckets/aw-watcher-window_h?force=1")
            .status,
        200
    );
    assert_eq!(c.get("/api/0/buckets/aw-watcher-window_h").status, 404);
    let r = c.delete("/api/0/buckets/aw-watcher-window_h");
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["message"],
        "The requested bucket 'aw-watcher-window_h' does not exist"
    );
}

#[test]
fn local_hostname_and_device_id() {
    let s = TestServer::start_with(&["--device-id", "my-device"]);
    let mut c = s.client();
    let info = c.get("/api/0/info").json();
    assert_eq!(info["device_id"], "my-device");
    assert_eq!(info["testing"], false);
    assert!(info["version"].as_str().unwrap().ends_with("(rust)"));
    c.post_json(
        "/api/0/buckets/aw-watcher-web-chrome",
        r#"{"client":"w","type":"web.tab.current","hostname":"!local","data":{"x":1}}"#,
    );
    let b = c.get("/api/0/buckets/aw-watcher-web-chrome").json();
    assert_eq!(b["hostname"], info["hostname"]);
    assert_eq!(b["data"], json!({"x": 1, "device_id": "my-device"}));
}

#[test]
fn path_id_wins_and_encoded_ids_work() {
    let s = TestServer::start();
    let mut c = s.client();
    let r = c.post_json("/api/0/buckets/a%20b%2Fc", r#"{"id":"other","client":"c","type":"t","hostname":"h","created":"2020-01-01T00:00:00.5+01:00"}"#);
    assert_eq!(r.status, 200);
    let b = c.get("/api/0/buckets/a%20b%2Fc").json();
    assert_eq!(b["id"], "a b/c");
    assert_eq!(b["created"], "2019-12-31T23:00:00.500Z");
    assert!(c.get("/api/0/buckets/").json().get("a b/c").is_some());
}

#[test]
fn create_errors() {
    let s = TestServer::start();
    let mut c = s.client();
    // Missing field / wrong type → 422; bad JSON → 400; no JSON content type → 404.
    assert_eq!(
        c.post_json("/api/0/buckets/b", r#"{"client":"c","type":"t"}"#)
            .status,
        422
    );
    assert_eq!(
        c.post_json(
            "/api/0/buckets/b",
            r#"{"client":1,"type":"t","hostname":"h"}"#
        )
        .status,
        422
    );
    assert_eq!(c.post_json("/api/0/buckets/b", r#"{bad"#).status, 400);
    let r = c.request("POST", "/api/0/buckets/b", &[], Some(WINDOW.as_bytes()));
    assert_eq!(r.status, 404);
    let r = c.request(
        "POST",
        "/api/0/buckets/b",
        &[("Content-Type", "text/plain")],
        Some(WINDOW.as_bytes()),
    );
    assert_eq!(r.status, 404);
    // JSON with a charset parameter is fine.
    let r = c.request(
        "POST",
        "/api/0/buckets/b",
        &[("Content-Type", "application/json; charset=utf-8")],
        Some(WINDOW.as_bytes()),
    );
    assert_eq!(r.status, 200);
    for r in [
        c.post_json("/api/0/buckets/x", "{bad"),
        c.get("/api/0/nothing"),
    ] {
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert!(r.json()["message"].is_string());
    }
}

#[test]
fn create_with_events_inserts_them() {
    let s = TestServer::start();
    let mut c = s.client();
    // An event that does not parse refuses the bucket (the reference skipped the event and
    // answered 200, losing it without a word).
    let bad = json!({"client": "c", "type": "t", "hostname": "h", "events": [
        {"timestamp": "2020-01-01T00:00:00Z", "duration": 1, "data": {"a": 1}},
        {"timestamp": "garbage", "data": {}}
    ]});
    let r = c.post_json("/api/0/buckets/b", &bad.to_string());
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.json()["message"].as_str().unwrap().contains("garbage"),
        "{}",
        r.body
    );
    assert_eq!(c.get("/api/0/buckets/b").status, 404);
    let body = json!({"client": "c", "type": "t", "hostname": "h", "events": [
        {"timestamp": "2020-01-01T00:00:00Z", "duration": 1, "data": {"a": 1}},
        {"timestamp": "2020-01-01T00:00:05Z", "duration": 1, "data": {"a": 2}}
    ]});
    assert_eq!(
        c.post_json("/api/0/buckets/b", &body.to_string()).status,
        200
    );
    assert_eq!(c.get("/api/0/buckets/b/events/count").body, "2");
    let b = c.get("/api/0/buckets/b").json();
    assert_eq!(
        b["metadata"],
        json!({"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T00:00:06Z"})
    );
}

#[test]
fn head_and_response_headers() {
    let s = TestServer::start();
    let mut c = s.client();
    let r = c.request("HEAD", "/api/0/buckets/", &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "");
    let r = c.get("/api/0/info");
    assert_eq!(r.header("x-frame-options"), Some("SAMEORIGIN"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(r.header("server"), Some("Rocket"));
}
