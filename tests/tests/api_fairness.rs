//! Watchers are never starved: with four clients looping cold year-long dashboard queries on
//! a generated year of data, heartbeats from another client all succeed, merge correctly and
//! are answered while a query is under way, not after one ends (each heartbeat is checked
//! against the queries' own record of what was in flight; no latency bound, which would
//! depend on the machine: the latencies are printed, and measured by `aw-bench`).

use aw_client_rust::queries::full_desktop_query;
use aw_tests::dataset::Dataset;
use aw_tests::year::{self, ts, DAY, NS, START_DAY};
use aw_tests::{Client, TestServer};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn heartbeats_succeed_and_merge_during_year_long_queries() {
    let data = Dataset::generate(7, "fair", START_DAY, 365);
    let s = year::server_with(&data);
    let mut c = s.client();
    let query = full_desktop_query(&year::desktop_params(&data));

    let stop = Arc::new(AtomicBool::new(false));
    // Queries sent and not yet answered, and queries answered: with both unchanged around a
    // heartbeat and one in flight, the heartbeat was answered while that query ran.
    let in_flight = Arc::new(AtomicUsize::new(0));
    let completed = Arc::new(AtomicUsize::new(0));
    let (port, end) = (s.port, data.end);
    let loops: Vec<_> = (0..4i64)
        .map(|w| {
            let (stop, query) = (stop.clone(), query.clone());
            let (in_flight, completed) = (in_flight.clone(), completed.clone());
            std::thread::spawn(move || {
                let mut c = Client::new(port);
                let mut answered = 0i64;
                while !stop.load(Ordering::Relaxed) {
                    // Cold: a period of its own each time, so the result cache never answers
                    // and every request reads and evaluates a year.
                    let body =
                        year::cold_query_body(&query, &[(START_DAY, end)], answered * 4 + w + 1);
                    in_flight.fetch_add(1, Ordering::SeqCst);
                    let r = c.post_json("/api/0/query/", &body);
                    completed.fetch_add(1, Ordering::SeqCst);
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    assert_eq!(r.status, 200, "{}", r.body);
                    assert!(r.json()[0]["window"]["duration"].as_f64().unwrap() > 0.0);
                    answered += 1;
                }
                answered
            })
        })
        .collect();
    aw_tests::wait_until("the query loops start", || {
        in_flight.load(Ordering::SeqCst) == 4
    });

    // A window watcher: 200 heartbeats a second apart of one app, pulsetime 2.
    c.post_json(
        "/api/0/buckets/watcher",
        r#"{"client":"w","type":"currentwindow","hostname":"h"}"#,
    );
    let base = data.end + DAY;
    let mut latencies = Vec::with_capacity(200);
    let mut inside_a_query = 0;
    for i in 0..200 {
        let done_before = completed.load(Ordering::SeqCst);
        let busy_before = in_flight.load(Ordering::SeqCst) > 0;
        let hb = json!({"timestamp": ts(base + i * NS), "duration": 0, "data": {"app": "editor", "title": "main.rs"}});
        let t = Instant::now();
        let r = c.post_json(
            "/api/0/buckets/watcher/heartbeat?pulsetime=2",
            &hb.to_string(),
        );
        latencies.push(t.elapsed());
        if busy_before && completed.load(Ordering::SeqCst) == done_before {
            inside_a_query += 1;
        }
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.json()["duration"],
            json!(i as f64),
            "heartbeat {i} did not merge"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
    let answered: i64 = loops.into_iter().map(|l| l.join().unwrap()).sum();
    assert!(
        answered >= 4,
        "the query loops hardly ran ({answered} answered)"
    );
    let events = c.get("/api/0/buckets/watcher/events").json();
    assert_eq!(events.as_array().unwrap().len(), 1);
    assert_eq!(events[0]["duration"], json!(199.0));
    // The query loops' own assertions (every answer a 200 with a non-empty day) ran in
    // their threads; joining them above re-raises any failure.
    latencies.sort();
    let (p50, p99, max) = (
        latencies[latencies.len() / 2],
        latencies[(latencies.len() - 1) * 99 / 100],
        latencies[latencies.len() - 1],
    );
    eprintln!(
        "heartbeats under {answered} cold year queries: p50 {p50:?}, p99 {p99:?}, max \
         {max:?}; {inside_a_query} of 200 answered while a query ran"
    );
    // A heartbeat that waited for a query would see that query end before its answer; a
    // year's query takes far longer than a heartbeat, so on any machine most heartbeats
    // fall wholly inside one.
    assert!(
        inside_a_query >= 100,
        "only {inside_a_query} of 200 heartbeats were answered while a query ran"
    );
}

#[test]
fn a_query_over_its_time_budget_is_stopped_with_a_clear_error() {
    let s = TestServer::start_with_config("query_timeout = 0.000001\n");
    let mut c = s.client();
    let body = r#"{"timeperiods":["2020-01-01T00:00:00Z/2020-01-02T00:00:00Z"],"query":["x = 1;","return x;"]}"#;
    let r = c.post_json("/api/0/query/", body);
    assert_eq!(r.status, 500);
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("Timeout(") && message.contains("query_timeout"),
        "{message}"
    );
    // The server is fine afterwards.
    assert_eq!(c.get("/api/0/info").status, 200);
}
