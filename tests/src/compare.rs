//! Same-run comparison of two servers: ours and another binary (the reference aw-server-rust,
//! or an older build of ours), measured row by row on the same machine at the same time.
//!
//! Absolute numbers drift on a shared machine; a ratio measured in one run does not. Every
//! row runs in alternating blocks A, B, B, A (so a trend over the run, such as a warming page
//! cache or a busy neighbour, weighs on both alike) and reports each server's mean of its two
//! blocks and the ratio ours / other. Each server has its own copy of the data (imported
//! through `POST /api/0/import`, which both implement), and a cold query never repeats a
//! period on the same server: each server counts its own requests.
//!
//! CPU is the server process's on-CPU time: the sum of `/proc/PID/task/*/schedstat` (ns,
//! exact, every live thread; the servers' threads live as long as they do). Wake-ups are the
//! threads' context switches, voluntary and involuntary.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aw_client_rust::queries::{full_desktop_query, DesktopQueryParams};
use serde_json::json;

use crate::bench_year::{self, query_body, ts, DAY, NS};
use crate::{Client, TestServer};

/// What to compare.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// The other server's binary.
    pub other: PathBuf,
    /// Days of generated history each server imports.
    pub days: i64,
    /// Shorter rows (a few seconds each) for a quick look.
    pub quick: bool,
    /// Rows whose name contains none of these are skipped (all rows when empty).
    pub only: Vec<String>,
}

/// One server in the comparison.
struct Contender {
    /// `ours` or `other`.
    label: &'static str,
    /// The binary (`None`: our build, [`crate::server_binary`]).
    binary: Option<PathBuf>,
    server: TestServer,
    /// Counts this server's requests, so timestamps and query periods never repeat on it.
    seq: i64,
    /// The window, AFK and browser buckets of the imported history.
    params: DesktopQueryParams,
    /// The end of the imported history.
    end: i64,
}

impl Contender {
    fn pid(&self) -> u32 {
        self.server.pid().unwrap_or(0)
    }

    fn client(&self) -> Client {
        self.server.client()
    }

    /// A fresh server of this binary on an empty database.
    fn start_empty(&self) -> TestServer {
        TestServer::start_binary(&self.binary.clone().unwrap_or_else(crate::server_binary))
    }

    /// The next number of this server's sequence.
    fn next(&mut self) -> i64 {
        self.seq += 1;
        self.seq
    }

    /// Creates a bucket (an existing one is fine).
    fn bucket(&self, id: &str, kind: &str) {
        let r = self.client().post_json(
            &format!("/api/0/buckets/{id}"),
            &json!({"client": "aw-bench", "type": kind, "hostname": "bench"}).to_string(),
        );
        assert!(r.status == 200 || r.status == 304, "{id}: {}", r.body);
    }
}

/// The server's CPU time so far in ns and its threads' context switches (see the module docs).
pub fn cpu_and_wakeups(pid: u32) -> (u64, u64) {
    let mut cpu = 0;
    let mut switches = 0;
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    for task in tasks.flatten() {
        let dir = task.path();
        if let Ok(s) = std::fs::read_to_string(dir.join("schedstat")) {
            cpu += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
        if let Ok(status) = std::fs::read_to_string(dir.join("status")) {
            for line in status.lines() {
                if let Some(v) = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    switches += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    (cpu, switches)
}

/// Server CPU and wake-ups over a stretch of load.
struct Meter {
    pid: u32,
    start: (u64, u64),
    at: Instant,
}

impl Meter {
    fn start(pid: u32) -> Meter {
        Meter {
            pid,
            start: cpu_and_wakeups(pid),
            at: Instant::now(),
        }
    }

    /// (CPU µs per request, wake-ups per second) for `requests` answered since the start.
    fn per_request(&self, requests: f64) -> (f64, f64) {
        let (cpu, switches) = cpu_and_wakeups(self.pid);
        let secs = self.at.elapsed().as_secs_f64();
        (
            (cpu.saturating_sub(self.start.0)) as f64 / 1e3 / requests.max(1.0),
            (switches.saturating_sub(self.start.1)) as f64 / secs.max(1e-9),
        )
    }
}

/// One measured value: its name, the value, and whether higher is better.
type Value = (&'static str, f64, bool);

/// The `p` quantile (0..=1) of sorted samples (NaN for none).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Asserts a 2xx answer.
fn ok(r: crate::Response, what: &str) {
    assert!(
        (200..300).contains(&r.status),
        "{what}: {} {}",
        r.status,
        r.body
    );
}

/// `clients` threads each sending requests made by `send(client, thread, i)` (`i` counts
/// the thread's requests) for `secs`; returns (requests answered, their latencies in ms,
/// sorted).
pub fn load(
    port: u16,
    clients: usize,
    secs: f64,
    send: impl Fn(&mut Client, usize, i64) + Sync,
) -> (f64, Vec<f64>) {
    let stop = AtomicBool::new(false);
    let mut all: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|k| {
                let (stop, send) = (&stop, &send);
                s.spawn(move || {
                    let mut c = Client::new(port);
                    let mut lat = Vec::new();
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        send(&mut c, k, i);
                        lat.push(t.elapsed().as_secs_f64() * 1e3);
                        i += 1;
                    }
                    lat
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    all.sort_by(f64::total_cmp);
    (all.len() as f64, all)
}

/// A heartbeat body at `at` (ns); `data` is the event's data as JSON text.
fn heartbeat(at: i64, data: &str) -> String {
    format!(r#"{{"timestamp":"{}","duration":0,"data":{data}}}"#, ts(at))
}

/// What one block of a row measures on one server.
type Measure = Box<dyn FnMut(&mut Contender) -> Vec<Value>>;

/// A row: a name and its measurement.
struct Row {
    name: String,
    measure: Measure,
}

fn row(name: &str, measure: impl FnMut(&mut Contender) -> Vec<Value> + 'static) -> Row {
    Row {
        name: name.to_string(),
        measure: Box::new(measure),
    }
}

/// The rows, in the order they run.
fn rows(options: &CompareOptions) -> Vec<Row> {
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

/// The kinds of writes rows send.
#[derive(Clone, Copy)]
enum Write {
    /// Heartbeats that merge into the last event (a watcher whose window did not change).
    Merging,
    /// Heartbeats with new data each time (a new event per request).
    Distinct,
    /// Single-event inserts.
    Insert,
}

impl Write {
    /// Sends write number `i` into `bucket` at time `at`.
    fn send(self, c: &mut Client, bucket: &str, at: i64, i: i64) {
        let r = match self {
            Write::Merging => c.post_json(
                &format!("/api/0/buckets/{bucket}/heartbeat?pulsetime=2"),
                &heartbeat(at, r#"{"app":"same"}"#),
            ),
            Write::Distinct => c.post_json(
                &format!("/api/0/buckets/{bucket}/heartbeat?pulsetime=0.5"),
                &heartbeat(at, &format!(r#"{{"i":{i}}}"#)),
            ),
            Write::Insert => c.post_json(
                &format!("/api/0/buckets/{bucket}/events"),
                &format!(
                    r#"[{{"timestamp":"{}","duration":1,"data":{{"i":{i}}}}}]"#,
                    ts(at)
                ),
            ),
        };
        ok(r, bucket);
    }
}

/// `n` writes back to back over one connection: rate and server CPU per request.
fn sequential(c: &mut Contender, kind: Write, n: usize) -> Vec<Value> {
    let bucket = format!("cmp-seq-{}", c.next());
    c.bucket(&bucket, "test");
    let mut client = c.client();
    let base = c.end + DAY;
    let meter = Meter::start(c.pid());
    let t = Instant::now();
    for i in 0..n as i64 {
        kind.send(&mut client, &bucket, base + i * NS, i);
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    let (cpu, _) = meter.per_request(n as f64);
    vec![("req/s", rate, true), ("CPU µs/req", cpu, false)]
}

/// 16 keep-alive connections for `secs`, each writing into a bucket of its own (`None`:
/// `?limit=100` reads of the history's window bucket).
fn connections(c: &mut Contender, kind: Option<Write>, secs: f64) -> Vec<Value> {
    let block = c.next();
    let buckets: Vec<String> = (0..16).map(|k| format!("cmp-c{block}-{k}")).collect();
    for b in &buckets {
        c.bucket(b, "test");
    }
    let base = c.end + DAY;
    let read = format!("/api/0/buckets/{}/events?limit=100", c.params.bid_window);
    let meter = Meter::start(c.pid());
    let (n, lat) = load(c.server.port, 16, secs, |cl, k, i| match kind {
        Some(kind) => kind.send(cl, &buckets[k], base + i * NS, i),
        None => ok(cl.get(&read), "limit=100"),
    });
    let (cpu, _) = meter.per_request(n);
    vec![
        ("req/s", n / secs, true),
        ("p50 ms", percentile(&lat, 0.5), false),
        ("CPU µs/req", cpu, false),
    ]
}

/// Three watchers (window, AFK, browser) each sending a heartbeat a second for `secs`, and a
/// dashboard that queries today from their buckets every 30 s (at the start too): what
/// every user's server does all day. CPU per heartbeat includes the queries.
fn watchers_day(c: &mut Contender, secs: f64) -> Vec<Value> {
    let block = c.next();
    let ids = [
        format!("cmp-window-{block}"),
        format!("cmp-afk-{block}"),
        format!("cmp-web-{block}"),
    ];
    for (id, kind) in ids
        .iter()
        .zip(["currentwindow", "afkstatus", "web.tab.current"])
    {
        c.bucket(id, kind);
    }
    let params = DesktopQueryParams {
        bid_window: ids[0].clone(),
        bid_afk: ids[1].clone(),
        bid_browsers: vec![ids[2].clone()],
        ..c.params.clone()
    };
    let desktop = full_desktop_query(&params);
    let port = c.server.port;
    let now_ns = || chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0);
    let meter = Meter::start(c.pid());
    let started = Instant::now();
    let beats: usize = std::thread::scope(|s| {
        let watchers: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(w, id)| {
                s.spawn(move || {
                    let mut client = Client::new(port);
                    let mut sent = 0;
                    let mut next = started + Duration::from_millis(w as u64 * 333);
                    while next < started + Duration::from_secs_f64(secs) {
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                        let k = sent / 30;
                        let data = match w {
                            0 => format!(r#"{{"app":"app{}","title":"title {k}"}}"#, k % 5),
                            1 => r#"{"status":"not-afk"}"#.to_string(),
                            _ => format!(
                                r#"{{"url":"https://example.com/{k}","title":"page {k}","audible":false,"incognito":false,"tabCount":3}}"#
                            ),
                        };
                        ok(
                            client.post_json(
                                &format!("/api/0/buckets/{id}/heartbeat?pulsetime=2"),
                                &heartbeat(now_ns(), &data),
                            ),
                            id,
                        );
                        sent += 1;
                        next += Duration::from_secs(1);
                    }
                    sent
                })
            })
            .collect();
        let mut client = Client::new(port);
        let mut next = started;
        while next < started + Duration::from_secs_f64(secs) {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            let now = now_ns();
            ok(
                client.post_json("/api/0/query/", &query_body(&desktop, &[(now - DAY, now)])),
                "query",
            );
            next += Duration::from_secs(30);
        }
        watchers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
    });
    let (cpu, wakeups) = meter.per_request(beats as f64);
    vec![
        ("CPU µs/heartbeat", cpu, false),
        ("wake-ups/s", wakeups, false),
    ]
}

/// What a request that does nothing costs at a watcher's rate: three connections each
/// asking `GET /api/0/info` once a second, CPU per request. Below this no heartbeat at that
/// rate can go: each request wakes an idle thread on a cold cache.
fn floor_at_one_per_second(c: &mut Contender, secs: f64) -> Vec<Value> {
    let port = c.server.port;
    let meter = Meter::start(c.pid());
    let started = Instant::now();
    let answered: usize = std::thread::scope(|s| {
        let clients: Vec<_> = (0..3u64)
            .map(|w| {
                s.spawn(move || {
                    let mut client = Client::new(port);
                    let mut sent = 0;
                    let mut next = started + Duration::from_millis(w * 333);
                    while next < started + Duration::from_secs_f64(secs) {
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                        ok(client.get("/api/0/info"), "info");
                        sent += 1;
                        next += Duration::from_secs(1);
                    }
                    sent
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap_or(0)).sum()
    });
    let (cpu, wakeups) = meter.per_request(answered as f64);
    vec![("CPU µs/req", cpu, false), ("wake-ups/s", wakeups, false)]
}

/// The server's resident memory in MB.
fn rss_mb(pid: u32) -> f64 {
    bench_year::proc_status_mb(pid, "VmRSS:")
}

/// Resident memory before and 5 s after a run of bad or heavy input that leaves nothing to
/// hold on to: ten events with a 10 MB string each (into a bucket of their own, far from
/// the history), three full exports, five queries of 100,000 characters. What a server
/// keeps afterwards is what it never gave back.
fn memory_after_heavy_input(c: &mut Contender) -> Vec<Value> {
    let bucket = format!("cmp-big-{}", c.next());
    c.bucket(&bucket, "test");
    let mut client = c.client();
    let before = rss_mb(c.pid());
    let big = "x".repeat(10 << 20);
    for i in 0..10 {
        let event = json!([{"timestamp": ts(c.end + 30 * DAY + i * NS), "duration": 1,
            "data": {"title": big}}]);
        ok(
            client.post_json(
                &format!("/api/0/buckets/{bucket}/events"),
                &event.to_string(),
            ),
            "10 MB event",
        );
    }
    drop(big);
    for _ in 0..3 {
        ok(client.get("/api/0/export"), "export");
    }
    let long = format!("x = \"{}\";\nRETURN = 1;", "y".repeat(100_000));
    for _ in 0..5 {
        let body = json!({"timeperiods": ["2020-01-01T00:00:00Z/2020-01-02T00:00:00Z"],
            "query": long.split('\n').collect::<Vec<_>>()});
        ok(
            client.post_json("/api/0/query/", &body.to_string()),
            "long query",
        );
    }
    std::thread::sleep(Duration::from_secs(5));
    let after = rss_mb(c.pid());
    vec![
        ("RSS before, MB", before, false),
        ("RSS 5 s after, MB", after, false),
    ]
}

/// Latencies of reads by one client: `?limit=100`, the last day of events, a cold 1-day
/// desktop query (a period of its own each time).
fn reads(c: &mut Contender, quick: bool) -> Vec<Value> {
    let mut client = c.client();
    let window = c.params.bid_window.clone();
    let end = c.end;
    let times = |n: usize, f: &mut dyn FnMut(&mut Client)| {
        let mut client = Client::new(c.server.port);
        f(&mut client);
        let mut lat: Vec<f64> = (0..n)
            .map(|_| {
                let t = Instant::now();
                f(&mut client);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        lat.sort_by(f64::total_cmp);
        percentile(&lat, 0.5)
    };
    let reps = if quick { 20 } else { 100 };
    let limit = times(reps, &mut |cl| {
        ok(
            cl.get(&format!("/api/0/buckets/{window}/events?limit=100")),
            "limit",
        )
    });
    let day = format!(
        "/api/0/buckets/{window}/events?start={}&end={}",
        ts(end - DAY),
        ts(end)
    );
    let last_day = times(reps, &mut |cl| ok(cl.get(&day), "last day"));
    let desktop = full_desktop_query(&c.params);
    let mut lat: Vec<f64> = (0..reps / 4)
        .map(|_| {
            let k = c.next();
            let body = query_body(&desktop, &[(end - DAY - k * NS, end - k * NS)]);
            let t = Instant::now();
            ok(client.post_json("/api/0/query/", &body), "cold query");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    lat.sort_by(f64::total_cmp);
    vec![
        ("?limit=100 p50 ms", limit, false),
        ("last day p50 ms", last_day, false),
        ("cold 1-day query p50 ms", percentile(&lat, 0.5), false),
    ]
}

/// `n` sequential heartbeats while `loops` clients loop cold 1-year desktop queries:
/// heartbeat p50 and p95.
fn heartbeats_under_queries(c: &mut Contender, loops: usize, n: usize) -> Vec<Value> {
    let bucket = format!("cmp-busy-{}", c.next());
    c.bucket(&bucket, "test");
    let desktop = full_desktop_query(&c.params);
    let (end, port) = (c.end, c.server.port);
    let first = c.seq;
    c.seq += 1_000_000;
    let stop = AtomicBool::new(false);
    let lat = std::thread::scope(|s| {
        for w in 0..loops {
            let (stop, desktop) = (&stop, &desktop);
            s.spawn(move || {
                let mut cl = Client::new(port);
                let mut k = 0;
                while !stop.load(Ordering::Relaxed) {
                    k += 1;
                    let shift = (first + k * loops as i64 + w as i64) * NS;
                    let body = query_body(desktop, &[(end - 365 * DAY - shift, end - shift)]);
                    // The server may refuse a query over its budget; the load is what counts.
                    let _ = cl.send_once(
                        "POST",
                        "/api/0/query/",
                        &[("Content-Type", "application/json")],
                        Some(body.as_bytes()),
                    );
                }
            });
        }
        std::thread::sleep(Duration::from_millis(300));
        let mut cl = Client::new(port);
        let mut lat: Vec<f64> = (0..n as i64)
            .map(|i| {
                let t = Instant::now();
                Write::Merging.send(&mut cl, &bucket, end + DAY + i * NS, i);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        lat.sort_by(f64::total_cmp);
        lat
    });
    vec![
        ("p50 ms", percentile(&lat, 0.5), false),
        ("p95 ms", percentile(&lat, 0.95), false),
    ]
}

/// A second of back-to-back heartbeats, inserts and reads on one server, measured nowhere.
fn warm_up(c: &mut Contender) {
    for kind in [Write::Merging, Write::Distinct, Write::Insert] {
        sequential(c, kind, 1_000);
    }
    let mut client = c.client();
    for _ in 0..1_000 {
        ok(client.get("/api/0/info"), "info");
    }
}

/// One row's result: per value, ours and the other's means.
pub struct RowResult {
    /// The row's name.
    pub row: String,
    /// (value name, ours, other, higher is better).
    pub values: Vec<(&'static str, f64, f64, bool)>,
}

/// Starts both servers, imports the history into each, runs every row in A, B, B, A blocks
/// and prints each result as it comes; returns them all.
pub fn run(options: &CompareOptions) -> Vec<RowResult> {
    let data = bench_year::generate(options.days);
    let doc = data.export_json();
    let params = bench_year::desktop_params(&data);
    let mut contenders: Vec<Contender> = [("ours", None), ("other", Some(options.other.clone()))]
        .into_iter()
        .map(|(label, binary): (&'static str, Option<PathBuf>)| {
            let server =
                TestServer::start_binary(binary.as_deref().unwrap_or(&crate::server_binary()));
            let t = Instant::now();
            let r = server.client().post_json("/api/0/import", &doc);
            assert_eq!(r.status, 200, "{label}: import failed: {}", r.body);
            println!(
                "{label}: imported {} events in {:.1} s",
                data.event_count(),
                t.elapsed().as_secs_f64()
            );
            Contender {
                label,
                binary,
                server,
                seq: 0,
                params: params.clone(),
                end: data.end,
            }
        })
        .collect();
    drop(doc);
    // Untimed: the first block of a run measured slow whichever server it ran on (the same
    // build against itself: 0.65-0.69x in the first row's first block, 1.03x otherwise), so
    // each server gets a short burst of every kind of request first.
    for c in &mut contenders {
        warm_up(c);
    }
    let mut results = Vec::new();
    for mut row in rows(options) {
        if !options.only.is_empty() && !options.only.iter().any(|o| row.name.contains(o)) {
            continue;
        }
        let mut sums: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
        let mut names = Vec::new();
        for who in [0, 1, 1, 0] {
            let values = (row.measure)(&mut contenders[who]);
            names = values.iter().map(|v| (v.0, v.2)).collect();
            let sum = &mut sums[who];
            sum.resize(values.len(), 0.0);
            for (s, v) in sum.iter_mut().zip(&values) {
                *s += v.1 / 2.0;
            }
        }
        let result = RowResult {
            row: row.name.clone(),
            values: names
                .iter()
                .enumerate()
                .map(|(i, &(name, higher))| (name, sums[0][i], sums[1][i], higher))
                .collect(),
        };
        for (name, ours, other, _) in &result.values {
            println!(
                "{:<70} {name:<24} ours {ours:>10.2}  other {other:>10.2}  ratio {:>6.2}",
                result.row,
                ours / other
            );
        }
        results.push(result);
    }
    results
}

/// The results as a Markdown table.
pub fn to_markdown(results: &[RowResult], other: &Path) -> String {
    let mut out = format!(
        "| row | value | ours | other ({}) | ours / other |\n|---|---|---|---|---|\n",
        other.display()
    );
    for r in results {
        for (name, ours, other, _) in &r.values {
            out.push_str(&format!(
                "| {} | {name} | {ours:.2} | {other:.2} | {:.2} |\n",
                r.row,
                ours / other
            ));
        }
    }
    out
}
