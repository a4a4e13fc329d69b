//! Memory comes back: after requests that make the server allocate a lot (a 10 MB event
//! inserted, merged by a heartbeat, read, exported and queried), its resident memory returns
//! near where it started within seconds, instead of staying at the peak for the rest of the
//! run.

use aw_tests::TestServer;
use serde_json::json;
use std::time::{Duration, Instant};

/// The server's resident memory in MB.
fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024.0
}

/// Waits (up to [`aw_tests::HANG_GUARD`]) for RSS to fall to `limit` MB; returns the last
/// reading.
fn settles_below(pid: u32, limit: f64) -> f64 {
    let until = Instant::now() + aw_tests::HANG_GUARD;
    loop {
        let now = rss_mb(pid);
        if now <= limit || Instant::now() > until {
            return now;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn memory_returns_after_a_10_mb_event() {
    let s = TestServer::start();
    let pid = s.pid().unwrap();
    let mut c = s.client();
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    std::thread::sleep(Duration::from_millis(500));
    let start = rss_mb(pid);
    // Generous: what the server legitimately keeps (caches, SQLite's page cache) is small
    // next to the 10 MB value and its copies (the peak is 60-120 MB).
    let limit = start + 25.0;
    let big = "x".repeat(10 << 20);
    let event = |ts: &str| json!({"timestamp": ts, "duration": 1, "data": {"s": big}});
    let query = json!({"timeperiods": ["2025-12-31T00:00:00Z/2026-01-02T00:00:00Z"],
        "query": ["RETURN = query_bucket(\"b\");"]});
    let steps = [
        (
            "insert",
            "POST",
            "/api/0/buckets/b/events",
            json!([event("2026-01-01T00:00:00Z")]),
        ),
        (
            "heartbeat",
            "POST",
            "/api/0/buckets/b/heartbeat?pulsetime=60",
            event("2026-01-01T00:00:30Z"),
        ),
        ("read", "GET", "/api/0/buckets/b/events", json!(null)),
        ("export", "GET", "/api/0/export", json!(null)),
        ("query", "POST", "/api/0/query/", query),
    ];
    for (name, method, path, body) in steps {
        let r = if method == "GET" {
            c.get(path)
        } else {
            c.post_json(path, &body.to_string())
        };
        assert_eq!(r.status, 200, "{name}");
        drop(r);
        let after = settles_below(pid, limit);
        assert!(
            after <= limit,
            "after the {name}, RSS stays at {after:.1} MB (started at {start:.1} MB)"
        );
    }
}
