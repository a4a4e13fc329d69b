//! `aw-bench`: the whole-server benchmark, through the real binary over HTTP on loopback.
//!
//! ```sh
//! cargo build --release -p aw-server && cargo run --release -p aw-bench --bin aw-bench -- [--days 365] [--json out.json] [--quick]
//! ```
//!
//! Generates a deterministic year for one host (see `aw_tests::dataset`), imports it into a
//! fresh server with `POST /api/0/import`, then measures every request path and prints a
//! table (median and p95 in ms, or rates). `--json` also writes the numbers, so that two runs
//! (before/after a change) can be compared.
//!
//! `--compare BIN` instead runs the comparison rows (`aw_bench::compare`) on our build and
//! on `BIN` (the reference aw-server-rust, or another build of ours) in alternating blocks,
//! and prints each row's ratio; `--only TEXT` (repeatable) keeps the rows whose name
//! contains it.

use aw_bench::bench_rows::queries::{concurrent_queries, dashboard_queries, query_cache_fill};
use aw_bench::bench_rows::reads::{concurrent_event_fetches, event_reads, long_event_reads};
use aw_bench::bench_rows::writes::{
    connection_writes, heartbeats_under_query_loops, sequential_writes,
};
use aw_bench::bench_rows::BenchReport;
use aw_client_rust::queries::{browser_query, full_desktop_query};
use aw_tests::year::{self, proc_status_mb};
use aw_tests::TestServer;
use serde_json::{json, Map, Value};
use std::time::Instant;

/// Peak resident memory of `pid` in MB.
fn vm_hwm_mb(pid: u32) -> f64 {
    proc_status_mb(pid, "VmHWM:")
}

/// The value after the flag `name`, if given.
fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let days: i64 = arg(&args, "--days")
        .and_then(|d| d.parse().ok())
        .unwrap_or(365);
    let json_out = arg(&args, "--json");
    let quick = args.iter().any(|a| a == "--quick");
    if let Some(other) = arg(&args, "--compare") {
        compare(&args, other, quick);
        return;
    }
    let mut b = BenchReport {
        rows: Vec::new(),
        json: Map::new(),
        quick,
    };

    let t = Instant::now();
    let data = year::generate(days);
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
    let server_pid = server.pid().unwrap_or(0);
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

    event_reads(&mut b, &mut c, &window, end, days);

    // The canonical dashboard queries.
    let params = year::desktop_params(&data);
    let desktop = full_desktop_query(&params);
    let browser = browser_query(&params.bid_browsers);
    dashboard_queries(&mut b, &mut c, &desktop, &browser, &window, end);
    query_cache_fill(&mut b, &mut c, &desktop, days, quick, server_pid);
    concurrent_queries(&mut b, port, &desktop, days, quick);
    concurrent_event_fetches(&mut b, port, &window, days, quick);

    let base = sequential_writes(&mut b, &mut c, server_pid, end, quick);
    let base = connection_writes(&mut b, &mut c, port, server_pid, &window, quick, base);
    heartbeats_under_query_loops(&mut b, port, &desktop, end, quick, base);

    drop(c);
    stop_and_start(&mut b, &mut server);

    let mut c = server.client();
    long_event_reads(&mut b, &mut c, &window, end, &desktop);
    let db = server.db_path();
    let size: u64 = ["", "-wal"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    b.value("database size (db + wal)", size as f64 / 1e6, "MB");
    print_report(b, json_out);
}

/// `--compare BIN`: the comparison rows on our build and on `other`, printed as a table.
fn compare(args: &[String], other: String, quick: bool) {
    let options = aw_bench::compare::CompareOptions {
        other: other.into(),
        days: arg(args, "--days")
            .and_then(|d| d.parse().ok())
            .unwrap_or(if quick { 30 } else { 365 }),
        quick,
        only: args
            .windows(2)
            .filter(|w| w[0] == "--only")
            .map(|w| w[1].clone())
            .collect(),
    };
    let results = aw_bench::compare::run(&options);
    println!(
        "\n{}",
        aw_bench::compare::to_markdown(&results, &options.other)
    );
}

/// The peak memory before the restart, then the stop and the start on the full database,
/// timed apart (a stop waits for requests in flight, then closes idle connections at once:
/// `aw-server/src/shutdown.rs`).
fn stop_and_start(b: &mut BenchReport, server: &mut TestServer) {
    let pid = server.pid().unwrap_or(0);
    let rss = vm_hwm_mb(pid);
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
}

/// Prints the table, and writes the numbers to `json_out` when given.
fn print_report(b: BenchReport, json_out: Option<String>) {
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
