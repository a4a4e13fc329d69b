//! Loops a 30-day window-event fetch on the generated year (for profiling).
use aw_tests::dataset::Dataset;
use aw_tests::TestServer;
use std::time::Instant;
fn main() {
    let days: i64 = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30);
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5.0);
    let start_day = 1_735_689_600_000_000_000i64;
    let data = Dataset::generate(0xAC71_F17E, "benchhost", start_day, 365);
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(
        c.post_json("/api/0/import", &data.export_json()).status,
        200
    );
    let w = data.buckets[0].id.clone();
    let day = 86_400_000_000_000i64;
    let fmt = |ns: i64| aw_models::timestamp::format(&aw_models::timestamp::from_ns(ns));
    let path = format!(
        "/api/0/buckets/{w}/events?start={}&end={}",
        fmt(data.end - days * day),
        fmt(data.end)
    );
    println!("pid {} ready", s.pid().unwrap_or(0));
    let pid = s.pid().unwrap_or(0);
    let cpu = || -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let f: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        (f[11].parse::<f64>().unwrap_or(0.0) + f[12].parse::<f64>().unwrap_or(0.0)) * 10.0
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
