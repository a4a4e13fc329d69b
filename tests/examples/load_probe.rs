//! Heartbeat latency while other clients loop the 1-year desktop query on the generated
//! year (the issue-8 scenario, with more heartbeats than aw-bench sends, for A/B runs).
//!
//! `load_probe [query loops] [heartbeats]`
use aw_client_rust::classes::default_classes;
use aw_client_rust::queries::{full_desktop_query, DesktopQueryParams};
use aw_tests::dataset::Dataset;
use aw_tests::TestServer;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let loops: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30_000);
    let data = Dataset::generate(0xAC71_F17E, "benchhost", 1_735_689_600_000_000_000, 365);
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(
        c.post_json("/api/0/import", &data.export_json()).status,
        200
    );
    let params = DesktopQueryParams {
        bid_window: data.buckets[0].id.clone(),
        bid_afk: data.buckets[1].id.clone(),
        bid_browsers: vec![data.buckets[2].id.clone()],
        classes: default_classes(),
        filter_afk: true,
        include_audible: true,
        ..Default::default()
    };
    let fmt = |ns: i64| aw_models::timestamp::format(&aw_models::timestamp::from_ns(ns));
    let period = format!(
        "{}/{}",
        fmt(data.end - 365 * 86_400_000_000_000),
        fmt(data.end)
    );
    let body = serde_json::json!({
        "timeperiods": [period],
        "query": full_desktop_query(&params).split('\n').collect::<Vec<_>>(),
    })
    .to_string();
    c.post_json(
        "/api/0/buckets/hb",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..loops)
        .map(|_| {
            let (stop, body, port) = (stop.clone(), body.clone(), s.port);
            std::thread::spawn(move || {
                let mut c = aw_tests::Client::new(port);
                while !stop.load(Ordering::Relaxed) {
                    assert_eq!(c.post_json("/api/0/query/", &body).status, 200);
                }
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut lat: Vec<f64> = (0..n)
        .map(|k| {
            let hb = format!(
                r#"{{"timestamp":"{}","duration":0,"data":{{"app":"x"}}}}"#,
                fmt(1_800_000_000_000_000_000 + k as i64 * 1_000_000_000)
            );
            let t = Instant::now();
            assert_eq!(
                c.post_json("/api/0/buckets/hb/heartbeat?pulsetime=2", &hb)
                    .status,
                200
            );
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    lat.sort_by(f64::total_cmp);
    let p = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize];
    let slow = lat.iter().filter(|&&l| l > 0.2).count() as f64 / lat.len() as f64 * 100.0;
    let share = |lo: f64, hi: f64| {
        lat.iter().filter(|&&l| l > lo && l <= hi).count() as f64 / lat.len() as f64 * 100.0
    };
    println!(
        "{loops} query loops, {n} heartbeats: p50 {:.3} p95 {:.3} p99 {:.3} ms; {slow:.1}% over 0.2 ms \
         (0.2-0.4: {:.1}%, 0.4-0.7: {:.1}%, 0.7-2: {:.1}%, >2: {:.1}%)",
        p(0.5),
        p(0.95),
        p(0.99),
        share(0.2, 0.4),
        share(0.4, 0.7),
        share(0.7, 2.0),
        share(2.0, f64::MAX)
    );
}
