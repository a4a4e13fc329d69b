//! Times `GET events?limit=100` over one keep-alive connection (for profiling).
use aw_tests::TestServer;
use std::time::Instant;
fn main() {
    let s = TestServer::start();
    println!("pid {}", s.pid().unwrap_or(0));
    let mut c = s.client();
    c.post_json(
        "/api/0/buckets/w",
        r#"{"client":"c","type":"currentwindow","hostname":"h"}"#,
    );
    let mut batch = Vec::new();
    for i in 0..5000 {
        batch.push(format!(
            r#"{{"timestamp":"2020-01-01T{:02}:{:02}:{:02}Z","duration":3.5,"data":{{"app":"firefox-{}","title":"Some window title number {} - Mozilla Firefox"}}}}"#,
            i / 3600, (i / 60) % 60, i % 60, i % 50, i
        ));
    }
    let r = c.post_json("/api/0/buckets/w/events", &format!("[{}]", batch.join(",")));
    assert_eq!(r.status, 200, "{}", r.body);
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3.0);
    let t = Instant::now();
    let mut n = 0;
    let mut lat = Vec::new();
    while t.elapsed().as_secs_f64() < secs {
        let q = Instant::now();
        let r = c.get("/api/0/buckets/w/events?limit=100");
        lat.push(q.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r.status, 200);
        n += 1;
    }
    lat.sort_by(f64::total_cmp);
    println!(
        "limit=100: {:.0}/s p50 {:.3} ms, body {} bytes",
        n as f64 / secs,
        lat[lat.len() / 2],
        c.get("/api/0/buckets/w/events?limit=100").body.len()
    );
}
