//! `aw-bench`: the whole-server benchmark, through the real binary over HTTP on loopback.
//!
//! ```sh
//! cargo build --release -p aw-server && cargo run --release -p aw-tests --bin aw-bench -- [--days 365] [--json out.json] [--quick]
//! ```
//!
//! Generates a deterministic year for one host (see `aw_tests::dataset`), imports it into a
//! fresh server with `POST /api/0/import`, then measures every request path and prints a
//! table (median and p95 in ms, or rates). `--json` also writes the numbers, so that two runs
//! (before/after a change) can be compared.
//!
//! `--compare BIN` instead runs the comparison rows (`aw_tests::compare`) on our build and
//! on `BIN` (the reference aw-server-rust, or another build of ours) in alternating blocks,
//! and prints each row's ratio; `--only TEXT` (repeatable) keeps the rows whose name
//! contains it.

use aw_client_rust::queries::{browser_query, full_desktop_query};
use aw_tests::bench_year::{
    self, cold_query_body, proc_status_mb, query_body, ts, DAY, NS, START_DAY,
};
use aw_tests::compare::{load, percentile};
use aw_tests::{Client, TestServer};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Bench {
    rows: Vec<(String, String)>,
    json: Map<String, Value>,
    quick: bool,
}

impl Bench {
    fn reps(&self, n: usize) -> usize {
        if self.quick {
            n.div_ceil(5).max(3)
        } else {
            n
        }
    }

    /// Times `f` `n` times (after one warm-up) and records median/p95 in ms.
    fn latency(&mut self, name: &str, n: usize, mut f: impl FnMut()) {
        f();
        let mut samples: Vec<f64> = (0..self.reps(n))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        let (p50, p95) = (percentile(&samples, 0.5), percentile(&samples, 0.95));
        self.rows
            .push((name.into(), format!("{p50:.3} ms (p95 {p95:.3})")));
        self.json.insert(
            name.into(),
            json!({"p50_ms": p50, "p95_ms": p95, "n": samples.len()}),
        );
        println!("{name:<55} {p50:>10.3} ms  p95 {p95:>10.3}");
    }

    fn value(&mut self, name: &str, value: f64, unit: &str) {
        self.rows.push((name.into(), format!("{value:.1} {unit}")));
        self.json
            .insert(name.into(), json!({"value": value, "unit": unit}));
        println!("{name:<55} {value:>10.1} {unit}");
    }
}

fn get_ok(c: &mut Client, path: &str) -> usize {
    let r = c.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body.len()
}

/// Runs `clients` threads calling `f` for `secs` seconds (connection `k`'s requests are
/// numbered from `k * 1_000_003`); returns (requests/s, p50 ms).
fn concurrent(
    port: u16,
    clients: usize,
    secs: f64,
    f: impl Fn(&mut Client, usize) + Sync,
) -> (f64, f64) {
    let started = Instant::now();
    let (n, latencies) = load(port, clients, secs, |c, k, i| {
        f(c, k * 1_000_003 + i as usize)
    });
    (
        n / started.elapsed().as_secs_f64(),
        percentile(&latencies, 0.5),
    )
}

/// Posts `body` to `path`; asserts a 200 and returns the body's length.
fn post_ok(c: &mut Client, path: &str, body: &str) -> usize {
    let r = c.post_json(path, body);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body.len()
}

/// Heartbeat latency (p50, p95 in ms) while `loops` clients run `body` queries back to back;
/// also the loops' total query throughput.
fn heartbeats_under_query_load(
    port: u16,
    loops: usize,
    code: &str,
    (lo, hi): (i64, i64),
    n: usize,
    base: i64,
) -> (f64, f64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..loops)
        .map(|w| {
            let stop = stop.clone();
            let code = code.to_string();
            std::thread::spawn(move || {
                let mut c = Client::new(port);
                let started = Instant::now();
                let mut done = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // A period of its own each time, a second earlier per request, and
                    // `loops` ms off every other row's: evaluated, never a cache hit.
                    let k = done as i64 * loops as i64 + w as i64 + 1;
                    let shift = k * NS + loops as i64 * 1_000_000;
                    let body = query_body(&code, &[(lo - shift, hi - shift)]);
                    post_ok(&mut c, "/api/0/query/", &body);
                    done += 1;
                }
                // Queries per second of this loop, counting the one that ran past the stop.
                done as f64 / started.elapsed().as_secs_f64()
            })
        })
        .collect();
    if loops > 0 {
        std::thread::sleep(Duration::from_millis(300));
    }
    let mut c = Client::new(port);
    let mut lat: Vec<f64> = (0..n)
        .map(|k| {
            let body = format!(
                r#"{{"timestamp":"{}","duration":0,"data":{{"app":"x"}}}}"#,
                ts(base + k as i64 * NS)
            );
            let t = Instant::now();
            let r = c.post_json("/api/0/buckets/bench-writes/heartbeat?pulsetime=2", &body);
            assert_eq!(r.status, 200);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    stop.store(true, Ordering::Relaxed);
    let queries: f64 = workers.into_iter().map(|w| w.join().unwrap_or(0.0)).sum();
    lat.sort_by(f64::total_cmp);
    (percentile(&lat, 0.5), percentile(&lat, 0.95), queries)
}

/// A request loop body that sends `code` over `periods`, cold ([`cold_query_body`]).
fn cold<'a>(c: &'a mut Client, code: &'a str, periods: &'a [(i64, i64)]) -> impl FnMut() + 'a {
    let mut k = 0;
    move || {
        k += 1;
        post_ok(c, "/api/0/query/", &cold_query_body(code, periods, k));
    }
}

/// Peak resident memory of `pid` in MB.
fn vm_hwm_mb(pid: u32) -> f64 {
    proc_status_mb(pid, "VmHWM:")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let days: i64 = arg("--days").and_then(|d| d.parse().ok()).unwrap_or(365);
    let json_out = arg("--json");
    let quick = args.iter().any(|a| a == "--quick");
    if let Some(other) = arg("--compare") {
        let options = aw_tests::compare::CompareOptions {
            other: other.into(),
            days: arg("--days")
                .and_then(|d| d.parse().ok())
                .unwrap_or(if quick { 30 } else { 365 }),
            quick,
            only: args
                .windows(2)
                .filter(|w| w[0] == "--only")
                .map(|w| w[1].clone())
                .collect(),
        };
        let results = aw_tests::compare::run(&options);
        println!(
            "\n{}",
            aw_tests::compare::to_markdown(&results, &options.other)
        );
        return;
    }
    let mut b = Bench {
        rows: Vec::new(),
        json: Map::new(),
        quick,
    };

    let t = Instant::now();
    let data = bench_year::generate(days);
    let doc = data.export_json();
    println!(
        "dataset: {days} days, {} events ({} window, {} afk, {} web), export {:.1} MB, generated in {:.1} s",
        data.event_count(),
        data.buckets[0].events.len(),
        data.buckets[1].events.len(),
        data.buckets[2].events.len(),
        doc.len() as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    b.json.insert("events".into(), json!(data.event_count()));
    let window = data.buckets[0].id.clone();
    let end = data.end;

    let mut server = TestServer::start();
    let port = server.port;
    let mut c = server.client();
    let t = Instant::now();
    let r = c.post_json("/api/0/import", &doc);
    assert_eq!(r.status, 200, "import failed: {}", r.body);
    b.value(
        "import (POST /api/0/import)",
        t.elapsed().as_secs_f64() * 1e3,
        "ms",
    );
    drop(doc);

    b.latency("GET /api/0/buckets/", 300, || {
        get_ok(&mut c, "/api/0/buckets/");
    });
    for limit in [100, 1000, 10000] {
        let reps = if limit == 10000 { 30 } else { 100 };
        b.latency(&format!("window events ?limit={limit}"), reps, || {
            get_ok(
                &mut c,
                &format!("/api/0/buckets/{window}/events?limit={limit}"),
            );
        });
    }
    let mid = START_DAY + days / 2 * DAY;
    for (name, lo, hi, reps) in [
        ("window events, last day", end - DAY, end, 50),
        ("window events, last week", end - 7 * DAY, end, 30),
        ("window events, last 30 days", end - 30 * DAY, end, 30),
        ("window events, mid-history week", mid, mid + 7 * DAY, 30),
    ] {
        let path = format!(
            "/api/0/buckets/{window}/events?start={}&end={}",
            ts(lo),
            ts(hi)
        );
        b.latency(name, reps, || {
            get_ok(&mut c, &path);
        });
    }
    b.latency("window events/count", 200, || {
        get_ok(&mut c, &format!("/api/0/buckets/{window}/events/count"));
    });

    // The canonical dashboard queries.
    let params = bench_year::desktop_params(&data);
    let desktop = full_desktop_query(&params);
    let browser = browser_query(&params.bid_browsers);
    // These rows measure evaluation (cold): each request asks for a period one second
    // earlier than the last, so the result cache never answers them. Cached rows follow.
    for (name, span, reps) in [
        ("desktop query, 1 day", DAY, 20),
        ("desktop query, 1 week", 7 * DAY, 10),
        ("desktop query, 30 days", 30 * DAY, 5),
        ("desktop query, 365 days", 365 * DAY, 3),
    ] {
        let lo = end - span.min(end - START_DAY);
        b.latency(name, reps, cold(&mut c, &desktop, &[(lo, end)]));
    }
    b.latency(
        "browser query, 1 week",
        10,
        cold(&mut c, &browser, &[(end - 7 * DAY, end)]),
    );
    let week: Vec<(i64, i64)> = (1..=7)
        .map(|d| (end - d * DAY, end - (d - 1) * DAY))
        .collect();
    b.latency(
        "desktop query, 7 x 1-day periods",
        10,
        cold(&mut c, &desktop, &week),
    );

    // The result cache (issue 14): the same request again; a week view after a heartbeat
    // into one of its days (that day is evaluated again, the other six come from the cache).
    let year_body = query_body(&desktop, &[(end - (365 * DAY).min(end - START_DAY), end)]);
    b.latency("desktop query, 365 days, repeated (cached)", 50, || {
        post_ok(&mut c, "/api/0/query/", &year_body);
    });
    let week_body = query_body(&desktop, &week);
    b.latency(
        "desktop query, 7 x 1-day periods, repeated (cached)",
        50,
        || {
            post_ok(&mut c, "/api/0/query/", &week_body);
        },
    );
    let mut k = 0;
    b.latency(
        "desktop query, 7 x 1-day periods, after a heartbeat into one day",
        20,
        || {
            k += 1;
            let hb = format!(
                r#"{{"timestamp":"{}","duration":1,"data":{{"app":"bench","title":"{k}"}}}}"#,
                ts(end - 3 * DAY + k * NS)
            );
            post_ok(
                &mut c,
                &format!("/api/0/buckets/{window}/heartbeat?pulsetime=0"),
                &hb,
            );
            post_ok(&mut c, "/api/0/query/", &week_body);
        },
    );
    // The cache full: 1-day desktop results of distinct days until it holds 90% of its
    // budget (or a request limit), then its size and the server's resident memory. Its
    // periods are half a second off every other row's, so the cold rows that follow (the
    // 8 clients') never meet an entry it left.
    let cache_stats = |c: &mut Client| c.get("/api/0/query/cache").json();
    let budget = cache_stats(&mut c)["budget"].as_f64().unwrap_or(0.0);
    let limit = if quick { 400 } else { 4000 };
    let mut sent = 0;
    while sent < limit && cache_stats(&mut c)["bytes"].as_f64().unwrap_or(0.0) < 0.9 * budget {
        for _ in 0..50 {
            let day = sent % (days - 1).max(1);
            let lo = START_DAY + day * DAY + (sent / days) * NS + NS / 2;
            post_ok(
                &mut c,
                "/api/0/query/",
                &query_body(&desktop, &[(lo, lo + DAY)]),
            );
            sent += 1;
        }
    }
    let stats = cache_stats(&mut c);
    let name = "query cache after filling it with 1-day results";
    let text = format!(
        "{} entries, {:.1} of {:.1} MB, after {sent} requests",
        stats["entries"],
        stats["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        budget / 1e6
    );
    println!("{name:<55} {text}");
    b.json.insert(name.into(), stats);
    b.rows.push((name.into(), text));
    b.value(
        "server RSS (VmRSS) with that cache",
        proc_status_mb(server.pid().unwrap_or(0), "VmRSS:"),
        "MB",
    );

    let secs_q = if quick { 3.0 } else { 10.0 };
    let desktop_for_clients = desktop.clone();
    let (rps, p50) = concurrent(port, 8, secs_q, |c, i| {
        let day = (i as i64 * 7919) % days;
        // A second later on each pass over the days: cold, like the rows above.
        let lo = START_DAY + day * DAY + (i as i64 / days) * NS;
        post_ok(
            c,
            "/api/0/query/",
            &query_body(&desktop_for_clients, &[(lo, lo + DAY)]),
        );
    });
    b.value("8 clients, 1-day desktop queries: throughput", rps, "req/s");
    b.value("8 clients, 1-day desktop queries: p50", p50, "ms");

    // Concurrency: 8 clients fetching one day each (a different day per request).
    let secs = if quick { 3.0 } else { 10.0 };
    let (rps, p50) = concurrent(port, 8, secs, |c, i| {
        let day = (i as i64 * 7919) % days;
        let lo = START_DAY + day * DAY;
        get_ok(
            c,
            &format!(
                "/api/0/buckets/{window}/events?start={}&end={}",
                ts(lo),
                ts(lo + DAY)
            ),
        );
    });
    b.value("8 clients, 1-day event fetches: throughput", rps, "req/s");
    b.value("8 clients, 1-day event fetches: p50", p50, "ms");

    // Writes over one keep-alive connection.
    c.post_json(
        "/api/0/buckets/bench-writes",
        r#"{"client":"bench","type":"test","hostname":"h"}"#,
    );
    let n = if quick { 2000 } else { 10000 };
    let server_pid = server.pid().unwrap_or(0);
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
        let cpu_before = bench_year::process_usage(server_pid);
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
        let cpu_after = bench_year::process_usage(server_pid);
        let cpu_ms = cpu_after[0] + cpu_after[1] - cpu_before[0] - cpu_before[1];
        b.value(
            &format!("{name}: server CPU per request"),
            cpu_ms * 1000.0 / n as f64,
            "µs",
        );
        base += 2 * n as i64 * NS;
    }

    // 16 keep-alive connections at once (what `wrk -c16` measures), each its own watcher
    // bucket: merging heartbeats, single-event inserts, and `?limit=100` reads of the
    // window bucket; throughput, p50 and server CPU per request.
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
        let cpu_before = bench_year::process_usage(server_pid);
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
        let cpu_after = bench_year::process_usage(server_pid);
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

    // Heartbeats while 0, 1, 2, 4 and 16 clients loop 1-year desktop queries (cold).
    for loops in [0, 1, 2, 4, 16] {
        let hb = if quick { 1000 } else { 5000 };
        let (p50, p95, qps) =
            heartbeats_under_query_load(port, loops, &desktop, (START_DAY, end), hb, base);
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

    let pid = server.pid().unwrap_or(0);
    let rss = vm_hwm_mb(pid);
    drop(c);
    // Stop and start are timed apart (a stop waits for requests in flight, then closes idle
    // connections at once: `aw-server/src/shutdown.rs`).
    let t = Instant::now();
    assert!(server.stop(), "aw-server did not exit cleanly on SIGTERM");
    b.value(
        "stop (SIGTERM to exit)",
        t.elapsed().as_secs_f64() * 1e3,
        "ms",
    );
    let t = Instant::now();
    server.start_again();
    // `start_again` returns once the port accepts connections again.
    b.value(
        "startup on the full database",
        t.elapsed().as_secs_f64() * 1e3,
        "ms",
    );
    b.value("peak RSS (VmHWM) before restart", rss, "MB");

    // HAZARDS 16: one event lasting 300 days (a window left open) must not make reads of
    // the last day walk back 300 days.
    let mut c = server.client();
    let long = json!([{"timestamp": ts(end - 300 * DAY), "duration": 300.0 * 86_400.0,
        "data": {"app": "left open", "title": "300 days"}}]);
    let r = c.post_json(
        &format!("/api/0/buckets/{window}/events"),
        &long.to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let day_path = format!(
        "/api/0/buckets/{window}/events?start={}&end={}",
        ts(end - DAY),
        ts(end)
    );
    b.latency("window events, last day, with a 300-day event", 50, || {
        get_ok(&mut c, &day_path);
    });
    let count_path = day_path.replace("/events?", "/events/count?");
    b.latency(
        "window events/count, last day, with a 300-day event",
        50,
        || {
            get_ok(&mut c, &count_path);
        },
    );
    b.latency(
        "desktop query, 1 day, with a 300-day event",
        10,
        cold(&mut c, &desktop, &[(end - DAY, end)]),
    );
    let db = server.db_path();
    let size: u64 = ["", "-wal"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    b.value("database size (db + wal)", size as f64 / 1e6, "MB");

    println!("\n| metric | value |\n|---|---|");
    for (name, value) in &b.rows {
        println!("| {name} | {value} |");
    }
    if let Some(path) = json_out {
        let text = serde_json::to_string_pretty(&Value::Object(b.json)).unwrap_or_default();
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("cannot write {path}: {e}");
        }
    }
}
