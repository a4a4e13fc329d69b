//! Loops the dashboard's desktop query over the last N days of the benchmark year and reports
//! p50, min and the server's CPU time and page faults per query (for A/B runs and profiling),
//! cold: each request asks for a period one second earlier, so no answer comes from the cache.
//!
//! `query_probe [seconds] [days]`
use aw_client_rust::queries::full_desktop_query;
use aw_tests::year::{self, DAY};
use std::time::Instant;

fn main() {
    let secs: f64 = year::arg(1, 10.0);
    let days: i64 = year::arg(2, 365);
    let data = year::generate(365);
    let s = year::server_with(&data);
    let mut c = s.client();
    let code = full_desktop_query(&year::desktop_params(&data));
    let period = [(data.end - days * DAY, data.end)];
    let pid = s.pid().unwrap_or(0);
    println!("pid {pid} ready");
    let stat = || year::process_usage(pid);
    let before = stat();
    let t = Instant::now();
    let mut lat = Vec::new();
    while lat.is_empty() || t.elapsed().as_secs_f64() < secs {
        // Cold: a new period each time, never answered by the result cache.
        let body = year::cold_query_body(&code, &period, lat.len() as i64 + 1);
        let q = Instant::now();
        assert_eq!(c.post_json("/api/0/query/", &body).status, 200);
        lat.push(q.elapsed().as_secs_f64() * 1e3);
    }
    let after = stat();
    let n = lat.len() as f64;
    let per = |i: usize| (after[i] - before[i]) / n;
    lat.sort_by(f64::total_cmp);
    println!(
        "desktop query, {days} days: n {} p50 {:.1} ms min {:.1} ms; server per query: user {:.0} ms, system {:.0} ms, {:.0} page faults",
        lat.len(),
        lat[lat.len() / 2],
        lat[0],
        per(0),
        per(1),
        per(2)
    );
}
