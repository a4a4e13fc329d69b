//! Loops a window-event fetch of the last N days of the benchmark year and reports p50, min
//! and the server's CPU time per request (for A/B runs and profiling).
//!
//! `range_probe [seconds] [days]`
use aw_tests::year::{self, ts, DAY};
use std::time::Instant;
fn main() {
    let days: i64 = year::arg(2, 30);
    let secs: f64 = year::arg(1, 5.0);
    let data = year::generate(365);
    let s = year::server_with(&data);
    let mut c = s.client();
    let w = &data.buckets[0].id;
    let path = format!(
        "/api/0/buckets/{w}/events?start={}&end={}",
        ts(data.end - days * DAY),
        ts(data.end)
    );
    let pid = s.pid().unwrap_or(0);
    println!("pid {pid} ready");
    let cpu = || {
        let [user, system, _] = year::process_usage(pid);
        user + system
    };
    let cpu0 = cpu();
    let t = Instant::now();
    let mut lat = Vec::new();
    let mut len = 0;
    while t.elapsed().as_secs_f64() < secs {
        let q = Instant::now();
        let r = c.get(&path);
        lat.push(q.elapsed().as_secs_f64() * 1e3);
        len = r.body.len();
    }
    lat.sort_by(f64::total_cmp);
    let cpu_ms = (cpu() - cpu0) / lat.len() as f64;
    println!("{days} days: n {} p50 {:.2} ms min {:.2} ms, server CPU {cpu_ms:.2} ms/request, body {:.1} MB", lat.len(), lat[lat.len() / 2], lat[0], len as f64 / 1e6);
}
