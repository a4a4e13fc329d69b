//! Heartbeat latency while other clients loop the 1-year desktop query on the generated
//! year (the issue-8 scenario, with more heartbeats than aw-bench sends, for A/B runs), and
//! how many queries the loops got answered meanwhile (the long jobs' share of the worker).
//!
//! `load_probe [query loops] [heartbeats]`
use aw_client_rust::queries::full_desktop_query;
use aw_tests::year::{self, DAY};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn main() {
    let loops: usize = year::arg(1, 1);
    let n: usize = year::arg(2, 30_000);
    let data = year::generate(365);
    let s = year::server_with(&data);
    let mut c = s.client();
    let code = full_desktop_query(&year::desktop_params(&data));
    let year = [(data.end - 365 * DAY, data.end)];
    c.post_json(
        "/api/0/buckets/hb",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..loops)
        .map(|w| {
            let (stop, code, port) = (stop.clone(), code.clone(), s.port);
            std::thread::spawn(move || {
                let mut c = aw_tests::Client::new(port);
                let mut k: i64 = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Cold: a new period each time (one per loop), never a cache hit.
                    k += 1;
                    let body = year::cold_query_body(&code, &year, k * loops as i64 + w as i64);
                    assert_eq!(c.post_json("/api/0/query/", &body).status, 200);
                }
                k
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    let mut lat: Vec<f64> = (0..n).map(|k| year::timed_heartbeat(&mut c, k)).collect();
    let secs = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let queries: i64 = workers.into_iter().map(|w| w.join().unwrap_or(0)).sum();
    lat.sort_by(f64::total_cmp);
    let p = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize];
    let slow = lat.iter().filter(|&&l| l > 0.2).count() as f64 / lat.len() as f64 * 100.0;
    let share = |lo: f64, hi: f64| {
        lat.iter().filter(|&&l| l > lo && l <= hi).count() as f64 / lat.len() as f64 * 100.0
    };
    println!(
        "{loops} query loops, {n} heartbeats: p50 {:.3} p95 {:.3} p99 {:.3} ms; {slow:.1}% over 0.2 ms \
         (0.2-0.4: {:.1}%, 0.4-0.7: {:.1}%, 0.7-2: {:.1}%, >2: {:.1}%); {queries} year \
         queries in {secs:.1} s",
        p(0.5),
        p(0.95),
        p(0.99),
        share(0.2, 0.4),
        share(0.4, 0.7),
        share(0.7, 2.0),
        share(2.0, f64::MAX)
    );
}
