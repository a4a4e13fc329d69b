//! The requests `aw-bench` sends: checked GETs and POSTs, a loop body of cold queries, many
//! clients at once, and heartbeats timed while query loops run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::compare::{load, percentile};
use aw_tests::year::{cold_query_body, query_body, ts, NS};
use aw_tests::Client;

/// Gets `path`; asserts a 200 and returns the body's length.
pub fn get_ok(c: &mut Client, path: &str) -> usize {
    let r = c.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body.len()
}

/// Runs `clients` threads calling `f` for `secs` seconds (connection `k`'s requests are
/// numbered from `k * 1_000_003`); returns (requests/s, p50 ms).
pub fn concurrent(
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
pub fn post_ok(c: &mut Client, path: &str, body: &str) -> usize {
    let r = c.post_json(path, body);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body.len()
}

/// Heartbeat latency (p50, p95 in ms) while `loops` clients run `body` queries back to back;
/// also the loops' total query throughput.
pub fn heartbeats_under_query_load(
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
pub fn cold<'a>(c: &'a mut Client, code: &'a str, periods: &'a [(i64, i64)]) -> impl FnMut() + 'a {
    let mut k = 0;
    move || {
        k += 1;
        post_ok(c, "/api/0/query/", &cold_query_body(code, periods, k));
    }
}
