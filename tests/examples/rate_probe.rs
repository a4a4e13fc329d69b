//! Measures sequential request rates over one keep-alive connection for a few simple routes.
use aw_tests::TestServer;
use std::time::Instant;
fn main() {
    let s = TestServer::start();
    let mut c = s.client();
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    let n = 5000;
    let t = Instant::now();
    for _ in 0..n {
        c.get("/api/0/info");
    }
    println!("GET info: {:.0}/s", n as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..n {
        c.get("/api/0/buckets/");
    }
    println!("GET buckets: {:.0}/s", n as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    for _ in 0..n {
        c.get("/api/0/buckets/b/events/count");
    }
    println!("GET count: {:.0}/s", n as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    for i in 0..n {
        c.post_json("/api/0/settings/x", &i.to_string());
    }
    println!(
        "POST setting: {:.0}/s",
        n as f64 / t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    for i in 0..n {
        let body = format!(
            r#"{{"timestamp":"2020-01-01T00:00:{:02}.{:06}Z","duration":0,"data":{{"app":"same"}}}}"#,
            (i / 1000) % 60,
            i % 1000
        );
        c.post_json("/api/0/buckets/b/heartbeat?pulsetime=2", &body);
    }
    println!(
        "POST heartbeat merging: {:.0}/s",
        n as f64 / t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    for i in 0..n {
        let body = format!(
            r#"[{{"timestamp":"2021-01-01T00:00:{:02}.{:06}Z","duration":1,"data":{{"i":{i}}}}}]"#,
            (i / 1000) % 60,
            i % 1000
        );
        c.post_json("/api/0/buckets/b/events", &body);
    }
    println!("POST event: {:.0}/s", n as f64 / t.elapsed().as_secs_f64());
}
