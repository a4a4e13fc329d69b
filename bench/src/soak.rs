//! The soak: a mixed load on the real binary for a while, then a check that every
//! acknowledged insert is stored exactly once, before and after a restart.
//!
//! The load is what a busy user's machine sends at once: watchers heartbeating into their
//! buckets, a script inserting events (each with a unique marker), dashboards looping
//! queries of the week that ends now over a generated history, a periodic full export, and
//! one import in the middle. The writes land inside that week, and the queries read the
//! first watcher's bucket as their window bucket, so a result cache cannot answer them:
//! each one is evaluated, as on a real dashboard while watchers write.
//! Every request is sent once (never retried), so an unanswered write is an error, not a
//! silent duplicate. `aw-soak` (src/bin) prints the report; `tests/soak.rs` runs a short one
//! and asserts on it.

mod exactly_once;
mod report;
mod tally;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use aw_client_rust::queries::full_desktop_query;
use serde_json::json;

use aw_tests::dataset::Dataset;
use aw_tests::year::{self, process_usage, query_body, DAY, NS, START_DAY};
use aw_tests::Client;
use exactly_once::{check, stored_markers};
pub use report::{KindReport, SoakReport};
use tally::{summarize, Tally};

/// What to run.
#[derive(Clone, Debug)]
pub struct SoakOptions {
    /// How long the mixed load runs.
    pub duration: Duration,
    /// Days of generated history imported before the load (the dashboards query it).
    pub history_days: i64,
    /// Heartbeat loops (watchers), insert loops (scripts) and query loops (dashboards).
    pub heartbeat_loops: usize,
    /// See `heartbeat_loops`.
    pub insert_loops: usize,
    /// See `heartbeat_loops`.
    pub query_loops: usize,
    /// How often the export loop exports everything.
    pub export_every: Duration,
    /// The server binary (`None`: ours, [`aw_tests::server_binary`]); any server with the
    /// reference's API and flags, e.g. the reference itself for `aw-soak --compare`.
    pub binary: Option<std::path::PathBuf>,
}

impl Default for SoakOptions {
    fn default() -> Self {
        SoakOptions {
            duration: Duration::from_secs(180),
            history_days: 90,
            heartbeat_loops: 4,
            insert_loops: 2,
            query_loops: 2,
            export_every: Duration::from_secs(10),
            binary: None,
        }
    }
}

/// The server's resident memory in MB (0 when it cannot be read).
fn rss_mb(pid: u32) -> f64 {
    year::proc_status_mb(pid, "VmRSS:").max(0.0)
}

/// Creates a bucket (once, before the load).
fn create_bucket(client: &mut Client, id: &str, kind: &str) {
    let r = client.post_json(
        &format!("/api/0/buckets/{id}"),
        &json!({"client": "aw-soak", "type": kind, "hostname": "soak"}).to_string(),
    );
    assert!(r.status == 200 || r.status == 304, "{}", r.body);
}

/// The dashboard's desktop query over the history's AFK and browser buckets, with the first
/// heartbeat loop's bucket as its window bucket: every heartbeat of that loop lands in what
/// the query reads, so no answer can come from a cache. It reads no other bucket of the
/// load: a query over the insert buckets would grow with the number of events the server
/// managed to store, so the faster server would be given the heavier queries.
fn week_query(history: &Dataset, window: &str) -> String {
    let mut params = year::desktop_params(history);
    params.bid_window = window.to_string();
    full_desktop_query(&params)
}

/// How far apart in time one loop's writes are.
const STEP: i64 = NS / 1000;

/// Runs the soak on a fresh server (the release binary, see [`aw_tests::server_binary`], or
/// [`SoakOptions::binary`]).
pub fn run(options: &SoakOptions) -> SoakReport {
    let history = year::generate(options.history_days);
    let mut server = match &options.binary {
        Some(binary) => aw_tests::TestServer::start_binary(binary),
        None => aw_tests::TestServer::start(),
    };
    let r = server
        .client()
        .post_json("/api/0/import", &history.export_json());
    assert_eq!(r.status, 200, "import failed: {}", r.body);
    let port = server.port;
    let pid = server.pid().unwrap_or(0);
    let mut setup = server.client();
    let hb_buckets = create_buckets(
        &mut setup,
        "soak-heartbeat",
        options.heartbeat_loops,
        "currentwindow",
    );
    let insert_buckets = create_buckets(&mut setup, "soak-insert", options.insert_loops, "soak");
    let desktop = week_query(&history, hb_buckets.first().map_or("", String::as_str));
    let import_doc = Dataset::generate(0x50A4, "soakimport", START_DAY, 30).export_json();

    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(Mutex::new(0.0f64));
    let rss_start = rss_mb(pid);
    let cpu_start = process_usage(pid);
    let started = Instant::now();
    // Writes start a day before the history's end, 1 ms apart per loop: inside the queried
    // week (which ends a day after the history) for 48 million requests per loop. (1 s apart,
    // ours left the week within 20 s, and the cache answered every query after that.)
    let load = Load {
        port,
        deadline: started + options.duration,
        base: history.end - DAY,
    };
    let week = (history.end - 6 * DAY, history.end + DAY);

    let sampler = sample_peak_rss(stop.clone(), peak.clone(), pid);
    let heartbeats: Vec<_> = hb_buckets
        .iter()
        .enumerate()
        .map(|(i, bucket)| load.heartbeats(i, bucket.clone()))
        .collect();
    let inserts: Vec<_> = insert_buckets
        .iter()
        .enumerate()
        .map(|(i, bucket)| load.inserts(i, bucket.clone()))
        .collect();
    let queries: Vec<_> = (0..options.query_loops)
        .map(|_| load.queries(query_body(&desktop, &[week])))
        .collect();
    let exports = load.exports(options.export_every);
    let import = load.import(started + options.duration / 3, import_doc);

    let join = |h: thread::JoinHandle<Tally>| h.join().unwrap_or_default();
    let heartbeat_tallies: Vec<Tally> = heartbeats.into_iter().map(join).collect();
    let (insert_tallies, acknowledged) = join_inserts(inserts);
    let query_tallies: Vec<Tally> = queries.into_iter().map(join).collect();
    let export_tallies = vec![join(exports)];
    let import_tallies = vec![join(import)];
    let seconds = started.elapsed().as_secs_f64();
    let cpu_end = process_usage(pid);
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.join();
    let rss_end = rss_mb(pid);

    let (lost, duplicated) = check(&acknowledged, &stored_markers(&mut setup, &insert_buckets));
    server.restart();
    let mut after = server.client();
    let (lost_after_restart, duplicated_after_restart) =
        check(&acknowledged, &stored_markers(&mut after, &insert_buckets));

    let kinds = vec![
        summarize("heartbeat", heartbeat_tallies, seconds),
        summarize("insert", insert_tallies, seconds),
        summarize("week query", query_tallies, seconds),
        summarize("export", export_tallies, seconds),
        summarize("import", import_tallies, seconds),
    ];
    let server_cpu_s = (cpu_end[0] + cpu_end[1] - cpu_start[0] - cpu_start[1]) / 1000.0;
    let answered: usize = kinds.iter().map(|k| k.ok).sum();
    SoakReport {
        kinds,
        cpu_per_request_us: server_cpu_s * 1e6 / answered.max(1) as f64,
        rss_start_mb: rss_start,
        rss_peak_mb: peak.lock().map_or(0.0, |p| *p).max(rss_end),
        rss_end_mb: rss_end,
        server_cpu_s,
        seconds,
        acknowledged_inserts: acknowledged.len(),
        lost,
        duplicated,
        lost_after_restart,
        duplicated_after_restart,
    }
}

/// The insert loops' tallies, and the markers of every acknowledged insert.
fn join_inserts(
    inserts: Vec<thread::JoinHandle<(Tally, Vec<String>)>>,
) -> (Vec<Tally>, Vec<String>) {
    let mut insert_tallies = Vec::new();
    let mut acknowledged = Vec::new();
    for h in inserts {
        if let Ok((tally, acked)) = h.join() {
            insert_tallies.push(tally);
            acknowledged.extend(acked);
        }
    }
    (insert_tallies, acknowledged)
}

/// Creates `count` buckets `{prefix}-{i}` of type `kind`, before the load.
fn create_buckets(client: &mut Client, prefix: &str, count: usize, kind: &str) -> Vec<String> {
    let buckets: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    for b in &buckets {
        create_bucket(client, b, kind);
    }
    buckets
}

/// Samples the server's resident memory every 200 ms into `peak` until `stop`.
fn sample_peak_rss(
    stop: Arc<AtomicBool>,
    peak: Arc<Mutex<f64>>,
    pid: u32,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let now = rss_mb(pid);
            if let Ok(mut p) = peak.lock() {
                *p = p.max(now);
            }
            thread::sleep(Duration::from_millis(200));
        }
    })
}

/// The loops of the mixed load, each on a thread of its own with its own connection, until
/// the deadline.
#[derive(Clone, Copy)]
struct Load {
    port: u16,
    deadline: Instant,
    /// Where the writes start, in event time (ns).
    base: i64,
}

impl Load {
    /// Watcher `i`: heartbeats into `bucket`, one loop step apart in event time.
    fn heartbeats(self, i: usize, bucket: String) -> thread::JoinHandle<Tally> {
        thread::spawn(move || {
            let mut client = Client::new(self.port);
            let mut tally = Tally::default();
            let mut n: i64 = 0;
            while Instant::now() < self.deadline {
                // A window watcher: the title changes every 30 s of event time. Counted
                // in time, not heartbeats, so the window bucket the queries read holds
                // as many events on a fast server as on a slow one, and a query costs
                // both the same work.
                let k = n * STEP / (30 * NS);
                let body = json!({
                    "timestamp": year::ts(self.base + n * STEP),
                    "duration": 0,
                    "data": {"app": format!("app{}", k % 7), "title": format!("t{i}-{k}")}
                })
                .to_string();
                tally.send(
                    &mut client,
                    "POST",
                    &format!("/api/0/buckets/{bucket}/heartbeat?pulsetime=2"),
                    Some(&body),
                );
                n += 1;
            }
            tally
        })
    }

    /// Script `i`: inserts events with unique markers into `bucket`; returns the markers
    /// of the acknowledged ones.
    fn inserts(self, i: usize, bucket: String) -> thread::JoinHandle<(Tally, Vec<String>)> {
        thread::spawn(move || {
            let mut client = Client::new(self.port);
            let mut tally = Tally::default();
            let mut acknowledged = Vec::new();
            let mut n: i64 = 0;
            while Instant::now() < self.deadline {
                let marker = format!("{i}-{n}");
                let body = json!([{
                    "timestamp": year::ts(self.base + n * STEP),
                    "duration": 1.0,
                    "data": {"marker": marker}
                }])
                .to_string();
                if tally
                    .send(
                        &mut client,
                        "POST",
                        &format!("/api/0/buckets/{bucket}/events"),
                        Some(&body),
                    )
                    .is_some()
                {
                    acknowledged.push(marker);
                }
                n += 1;
            }
            (tally, acknowledged)
        })
    }

    /// A dashboard: sends the query `body` again and again.
    fn queries(self, body: String) -> thread::JoinHandle<Tally> {
        thread::spawn(move || {
            let mut client = Client::new(self.port);
            let mut tally = Tally::default();
            while Instant::now() < self.deadline {
                tally.send(&mut client, "POST", "/api/0/query/", Some(&body));
            }
            tally
        })
    }

    /// Exports everything every `every`.
    fn exports(self, every: Duration) -> thread::JoinHandle<Tally> {
        thread::spawn(move || {
            let mut tally = Tally::default();
            while Instant::now() < self.deadline {
                // A new connection each time: the idle one would have timed out.
                tally.send(&mut Client::new(self.port), "GET", "/api/0/export", None);
                let next = Instant::now() + every;
                while Instant::now() < next.min(self.deadline) {
                    thread::sleep(Duration::from_millis(50));
                }
            }
            tally
        })
    }

    /// One import of `doc` at `at`.
    fn import(self, at: Instant, doc: String) -> thread::JoinHandle<Tally> {
        thread::spawn(move || {
            thread::sleep(at.saturating_duration_since(Instant::now()));
            let mut tally = Tally::default();
            tally.send(
                &mut Client::new(self.port),
                "POST",
                "/api/0/import",
                Some(&doc),
            );
            tally
        })
    }
}
