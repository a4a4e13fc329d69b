//! Measures sequential request rates over one keep-alive connection for a few simple routes
//! (every answer must be a 2xx, so an error path is never what gets measured).
use aw_tests::{Client, Response, TestServer};
use std::time::Instant;

/// Sends `n` requests made by `send` back to back and prints their rate.
fn rate(
    c: &mut Client,
    name: &str,
    n: usize,
    mut send: impl FnMut(&mut Client, usize) -> Response,
) {
    let t = Instant::now();
    for i in 0..n {
        let r = send(c, i);
        assert!(
            (200..300).contains(&r.status),
            "{name}: {} {}",
            r.status,
            r.body
        );
    }
    println!("{name}: {:.0}/s", n as f64 / t.elapsed().as_secs_f64());
}

fn main() {
    let s = TestServer::start();
    let mut c = s.client();
    let r = c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    assert_eq!(r.status, 200);
    let n = 5000;
    rate(&mut c, "GET info", n, |c, _| c.get("/api/0/info"));
    rate(&mut c, "GET buckets", n, |c, _| c.get("/api/0/buckets/"));
    rate(&mut c, "GET count", n, |c, _| {
        c.get("/api/0/buckets/b/events/count")
    });
    rate(&mut c, "POST setting", n, |c, i| {
        c.post_json("/api/0/settings/x", &i.to_string())
    });
    rate(&mut c, "POST heartbeat merging", n, |c, i| {
        let body = format!(
            r#"{{"timestamp":"2020-01-01T00:00:{:02}.{:06}Z","duration":0,"data":{{"app":"same"}}}}"#,
            (i / 1000) % 60,
            i % 1000
        );
        c.post_json("/api/0/buckets/b/heartbeat?pulsetime=2", &body)
    });
    rate(&mut c, "POST event", n, |c, i| {
        let body = format!(
            r#"[{{"timestamp":"2021-01-01T00:00:{:02}.{:06}Z","duration":1,"data":{{"i":{i}}}}}]"#,
            (i / 1000) % 60,
            i % 1000
        );
        c.post_json("/api/0/buckets/b/events", &body)
    });
}
