//! `aw-bench`'s rows of writes: heartbeats and inserts back to back over one connection, over
//! 16 connections at once, and heartbeats while query loops run. Their timestamps run on from
//! row to row (`base`), so no two rows write at the same instant.

use serde_json::json;
use std::time::Instant;

use super::requests::{concurrent, get_ok, heartbeats_under_query_load, post_ok};
use super::BenchReport;
use aw_tests::year::{self, ts, DAY, NS, START_DAY};
use aw_tests::Client;

/// Writes over one keep-alive connection into the `bench-writes` bucket (created here), from
/// the day after `end`: rate and server CPU (`server_pid`'s) per request. Returns the first
/// timestamp they left free.
pub fn sequential_writes(
    b: &mut BenchReport,
    c: &mut Client,
    server_pid: u32,
    end: i64,
    quick: bool,
) -> i64 {
    c.post_json(
        "/api/0/buckets/bench-writes",
        r#"{"client":"bench","type":"test","hostname":"h"}"#,
    );
    let n = if quick { 2000 } else { 10000 };
    let mut base = end + DAY;
    for (name, path, event) in [
        (
            "sequential heartbeats, distinct data",
            "heartbeat?pulsetime=0.5",
            r#"{"timestamp":"TS","duration":0,"data":{"i":IDX}}"#,
        ),
        (
            "sequential heartbeats, merging",
            "heartbeat?pulsetime=2",
            r#"{"timestamp":"TS","duration":0,"data":{"app":"same"}}"#,
        ),
        (
            "sequential single-event inserts",
            "events",
            r#"[{"timestamp":"TS","duration":1,"data":{"i":IDX}}]"#,
        ),
    ] {
        let path = format!("/api/0/buckets/bench-writes/{path}");
        let cpu_before = year::process_usage(server_pid);
        let t = Instant::now();
        for i in 0..n {
            let body = event
                .replace("TS", &ts(base + i as i64 * NS))
                .replace("IDX", &i.to_string());
            assert_eq!(c.post_json(&path, &body).status, 200);
        }
        b.value(name, n as f64 / t.elapsed().as_secs_f64(), "/s");
        // Server CPU (user + system) per request over the whole loop, commits included:
        // what a request costs the machine, not just how fast it returns.
        let cpu_after = year::process_usage(server_pid);
        let cpu_ms = cpu_after[0] + cpu_after[1] - cpu_before[0] - cpu_before[1];
        b.value(
            &format!("{name}: server CPU per request"),
            cpu_ms * 1000.0 / n as f64,
            "µs",
        );
        base += 2 * n as i64 * NS;
    }
    base
}

/// 16 keep-alive connections at once (what `wrk -c16` measures), each its own watcher
/// bucket (created over `c`): merging heartbeats, single-event inserts, and `?limit=100`
/// reads of the window bucket; throughput, p50 and server CPU per request. Writes from
/// `base`; returns the first timestamp they left free.
pub fn connection_writes(
    b: &mut BenchReport,
    c: &mut Client,
    port: u16,
    server_pid: u32,
    window: &str,
    quick: bool,
    mut base: i64,
) -> i64 {
    const CONNECTIONS: usize = 16;
    /// `concurrent` numbers connection k's requests from k * SPREAD.
    const SPREAD: usize = 1_000_003;
    for k in 0..CONNECTIONS {
        c.post_json(
            &format!("/api/0/buckets/bench-c{k}"),
            r#"{"client":"bench","type":"test","hostname":"h"}"#,
        );
    }
    let secs = if quick { 3.0 } else { 10.0 };
    let limit100 = format!("/api/0/buckets/{window}/events?limit=100");
    for (name, kind) in [
        ("16 connections, merging heartbeats", 0),
        ("16 connections, single-event inserts", 1),
        ("16 connections, limit=100 reads", 2),
    ] {
        let cpu_before = year::process_usage(server_pid);
        let (rps, p50) = concurrent(port, CONNECTIONS, secs, |c, idx| {
            let (k, i) = (idx / SPREAD, idx % SPREAD);
            let at = ts(base + i as i64 * NS);
            match kind {
                0 => post_ok(
                    c,
                    &format!("/api/0/buckets/bench-c{k}/heartbeat?pulsetime=2"),
                    &format!(r#"{{"timestamp":"{at}","duration":0,"data":{{"app":"same"}}}}"#),
                ),
                1 => post_ok(
                    c,
                    &format!("/api/0/buckets/bench-c{k}/events"),
                    &format!(r#"[{{"timestamp":"{at}","duration":1,"data":{{"i":{i}}}}}]"#),
                ),
                _ => get_ok(c, &limit100),
            };
        });
        let cpu_after = year::process_usage(server_pid);
        let cpu_ms = cpu_after[0] + cpu_after[1] - cpu_before[0] - cpu_before[1];
        let requests = rps * secs;
        b.value(&format!("{name}: throughput"), rps, "req/s");
        b.value(&format!("{name}: p50"), p50, "ms");
        b.value(
            &format!("{name}: server CPU per request"),
            cpu_ms * 1000.0 / requests.max(1.0),
            "µs",
        );
        base += 2 * (rps * secs) as i64 * NS;
    }
    base
}

/// Heartbeats while 0, 1, 2, 4 and 16 clients loop cold 1-year `desktop` queries: heartbeat
/// p50 and p95, and the loops' query throughput. Heartbeats from `base` on.
pub fn heartbeats_under_query_loops(
    b: &mut BenchReport,
    port: u16,
    desktop: &str,
    end: i64,
    quick: bool,
    mut base: i64,
) {
    for loops in [0, 1, 2, 4, 16] {
        let hb = if quick { 1000 } else { 5000 };
        let (p50, p95, qps) =
            heartbeats_under_query_load(port, loops, desktop, (START_DAY, end), hb, base);
        base += 2 * hb as i64 * NS;
        let name = format!("heartbeat with {loops} 1-year query loops");
        b.rows.push((
            name.clone(),
            format!("p50 {p50:.3} ms, p95 {p95:.3} ms; queries {qps:.2}/s"),
        ));
        b.json.insert(
            name.clone(),
            json!({"p50_ms": p50, "p95_ms": p95, "queries_per_s": qps}),
        );
        println!("{name:<55} p50 {p50:>8.3} ms  p95 {p95:>8.3} ms  queries {qps:.2}/s");
    }
}
