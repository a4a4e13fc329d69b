//! The comparison's rows, in the order they run: each a name and what one block of it
//! measures on one server.

use std::time::Instant;

use super::contender::Contender;
use super::measure::{load, percentile, Meter, Value};
use super::requests::{ok, Write};
use super::workloads::{
    connections, floor_at_one_per_second, heartbeats_under_queries, memory_after_heavy_input,
    reads, sequential, watchers_day,
};
use super::CompareOptions;

/// What one block of a row measures on one server.
pub(super) type Measure = Box<dyn FnMut(&mut Contender) -> Vec<Value>>;

/// A row: a name and its measurement.
pub(super) struct Row {
    /// What the row measures, as printed.
    pub(super) name: String,
    /// What one block of it does on one server.
    pub(super) measure: Measure,
}

fn row(name: &str, measure: impl FnMut(&mut Contender) -> Vec<Value> + 'static) -> Row {
    Row {
        name: name.to_string(),
        measure: Box::new(measure),
    }
}

/// The rows, in the order they run.
pub(super) fn rows(options: &CompareOptions) -> Vec<Row> {
    let quick = options.quick;
    let secs = if quick { 3.0 } else { 10.0 };
    let mut rows = vec![
        row("startup, empty database (exec to first 200)", |c| {
            let mut times: Vec<f64> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    let s = c.start_empty();
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    drop(s);
                    ms
                })
                .collect();
            times.sort_by(f64::total_cmp);
            vec![("median ms", percentile(&times, 0.5), false)]
        }),
        row(
            "a watcher's day: 3 watchers at 1 heartbeat/s, a dashboard query of today every 30 s",
            move |c| watchers_day(c, if quick { 20.0 } else { 60.0 }),
        ),
        row(
            "the floor at a watcher's rate: 3 connections at 1 GET /api/0/info/s",
            move |c| floor_at_one_per_second(c, if quick { 20.0 } else { 60.0 }),
        ),
    ];
    for (name, kind) in [
        ("sequential heartbeats, merging", Write::Merging),
        ("sequential heartbeats, distinct", Write::Distinct),
        ("sequential single-event inserts", Write::Insert),
    ] {
        let n = if quick { 2000 } else { 10000 };
        rows.push(row(name, move |c| sequential(c, kind, n)));
    }
    rows.push(row(
        "sequential GET /api/0/info (the framework's floor for one client)",
        move |c| {
            let n = if quick { 2000 } else { 10000 };
            let mut client = c.client();
            let meter = Meter::start(c.pid());
            let t = Instant::now();
            for _ in 0..n {
                ok(client.get("/api/0/info"), "info");
            }
            let rate = n as f64 / t.elapsed().as_secs_f64();
            let (cpu, _) = meter.per_request(n as f64);
            vec![("req/s", rate, true), ("CPU µs/req", cpu, false)]
        },
    ));
    for (name, kind) in [
        ("16 connections, merging heartbeats", Some(Write::Merging)),
        ("16 connections, distinct heartbeats", Some(Write::Distinct)),
        ("16 connections, single-event inserts", Some(Write::Insert)),
        ("16 connections, ?limit=100 reads", None),
    ] {
        rows.push(row(name, move |c| connections(c, kind, secs)));
    }
    rows.push(row(
        "16 connections, GET /api/0/info (the framework's floor)",
        move |c| {
            let meter = Meter::start(c.pid());
            let (n, lat) = load(c.server.port, 16, secs, |cl, _, _| {
                ok(cl.get("/api/0/info"), "info")
            });
            let (cpu, _) = meter.per_request(n);
            vec![
                ("req/s", n / secs, true),
                ("p50 ms", percentile(&lat, 0.5), false),
                ("CPU µs/req", cpu, false),
            ]
        },
    ));
    rows.push(row("reads, one client", move |c| reads(c, quick)));
    // One loop only: with four, the reference answered no heartbeat for minutes while its
    // year queries ran (2 cores busy for 7+ minutes, the row never finished). Ours with
    // 4 and 16 loops: `aw-bench` without `--compare`.
    rows.push(row("heartbeats with 1 1-year query loop", move |c| {
        heartbeats_under_queries(c, 1, if quick { 500 } else { 2000 })
    }));
    rows.push(row(
        "memory after heavy input: ten 10 MB events, three exports, five 100k-character queries",
        memory_after_heavy_input,
    ));
    rows.push(row(
        "startup, the imported history (exec to first 200)",
        |c| {
            let mut times: Vec<f64> = (0..5)
                .map(|_| {
                    assert!(c.server.stop(), "{} did not stop cleanly", c.label);
                    let t = Instant::now();
                    c.server.start_again();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            times.sort_by(f64::total_cmp);
            vec![("median ms", percentile(&times, 0.5), false)]
        },
    ));
    rows
}
