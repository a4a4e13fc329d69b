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

/// A CSV export of the generated year is written while it is sent (issue 36, item 7): the
/// server's resident memory while it streams stays within 64 MiB of where it was before,
/// and the file has a line per event.
#[test]
fn a_csv_export_of_a_year_streams_in_bounded_memory() {
    let s = TestServer::start();
    let pid = s.pid().unwrap();
    let data = aw_tests::year::generate(365);
    let r = s.client().post_json("/api/0/import", &data.export_json());
    assert_eq!(r.status, 200, "{}", r.body);
    let events: u64 = {
        let mut c = s.client();
        let buckets = c.get("/api/0/buckets").json();
        buckets
            .as_object()
            .unwrap()
            .keys()
            .map(|id| {
                c.get(&format!("/api/0/buckets/{id}/events/count"))
                    .body
                    .parse::<u64>()
                    .unwrap()
            })
            .sum()
    };
    // Whatever the import left behind is given back before the baseline is taken.
    std::thread::sleep(Duration::from_secs(3));
    let idle = rss_mb(pid);
    let peak = std::sync::Arc::new(std::sync::Mutex::new(idle));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let now = rss_mb(pid);
                let mut p = peak.lock().unwrap();
                *p = p.max(now);
                drop(p);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let started = Instant::now();
    let r = s.client().get("/api/0/export?format=csv");
    let took = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    sampler.join().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/csv; charset=utf-8"));
    let lines = r.body.matches("\r\n").count() as u64;
    let peak = *peak.lock().unwrap();
    eprintln!(
        "CSV export of the generated year: {events} events, {} MB in {took:.2?}; RSS {idle:.0} MB idle, {peak:.0} MB peak (+{:.0})",
        r.body.len() / 1_000_000,
        peak - idle
    );
    // The header, then a line per event (no title of the generated data holds a line break).
    assert_eq!(lines, events + 1);
    assert!(peak - idle <= 64.0, "RSS grew {:.0} MB", peak - idle);
}
