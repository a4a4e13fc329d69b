//! Heartbeat latency while the generated year is backed up again and again (issue 25: a
//! backup never delays heartbeats), against the same server without a backup running.
//!
//! `backup_probe [backups]` (default 3)
use aw_tests::year;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn report(label: &str, mut lat: Vec<f64>) {
    lat.sort_by(f64::total_cmp);
    let p = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize];
    let over = lat.iter().filter(|&&l| l > 2.0).count() as f64 / lat.len() as f64 * 100.0;
    println!(
        "{label}: {} heartbeats, p50 {:.3} p95 {:.3} p99 {:.3} max {:.1} ms; {over:.2}% over 2 ms",
        lat.len(),
        p(0.5),
        p(0.95),
        p(0.99),
        p(1.0)
    );
}

fn main() {
    let wanted: usize = year::arg(1, 3);
    let data = year::generate(365);
    let s = year::server_with(&data);
    let mut c = s.client();
    c.post_json(
        "/api/0/buckets/hb",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    let mut k = 0;
    let quiet: Vec<f64> = (0..20_000)
        .map(|_| {
            k += 1;
            year::timed_heartbeat(&mut c, k)
        })
        .collect();
    report("no backup", quiet);

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let backups = {
        let (stop, done, port) = (stop.clone(), done.clone(), s.port);
        std::thread::spawn(move || {
            let mut c = aw_tests::Client::new(port);
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let r = c.post_json("/api/0/backups", "");
                assert_eq!(r.status, 200, "{}", r.body);
                let size = r.json()["size"].as_u64().unwrap_or(0);
                println!(
                    "backup of {} MB, verified, in {:.2} s",
                    size / 1_000_000,
                    t.elapsed().as_secs_f64()
                );
                done.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut busy = Vec::new();
    while done.load(Ordering::Relaxed) < wanted {
        k += 1;
        busy.push(year::timed_heartbeat(&mut c, k));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = backups.join();
    report("backing up the year", busy);
}
