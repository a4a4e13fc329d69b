//! A deterministic fuzz loop of malformed requests: afterwards the server still answers, no
//! request got a 5xx, and the stored data is exactly what it was.

use aw_tests::dataset::Rng;
use aw_tests::TestServer;

const PATHS: &[&str] = &[
    "/api/0/buckets/{b}",
    "/api/0/buckets/{b}/events",
    "/api/0/buckets/{b}/events/{x}",
    "/api/0/buckets/{b}/events/count",
    "/api/0/buckets/{b}/heartbeat",
    "/api/0/buckets/{b}/export",
    "/api/0/query",
    "/api/0/import",
    "/api/0/settings/{x}",
    "/api/0/{x}",
    "/{x}/{x}",
    "/pages/{x}/{x}",
    "/css/{x}",
];

const SEGMENTS: &[&str] = &[
    "", "%", "%zz", "%00", "..", "%2e%2e", "a%2Fb", "ünï", "-1", "9999999999999999999999",
    "nan", "{}", "%7B%7D", "b", "\u{1F600}", "a b", "null", "0", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

const QUERIES: &[&str] = &[
    "",
    "?",
    "?limit=",
    "?limit=-5",
    "?limit=1e3",
    "?start=",
    "?start=2020-13-01T00:00:00Z",
    "?end=%ZZ",
    "?pulsetime=",
    "?pulsetime=-1",
    "?pulsetime=1e309",
    "?pulsetime=inf",
    "?start=0&end=0",
    "?&&&=",
    "?start=2020-01-01T00:00:00Z&start=x",
    "?limit=18446744073709551616",
];

const BODIES: &[&str] = &[
    "",
    "{",
    "[",
    "null",
    "1",
    "\"x\"",
    "[1,2",
    "{\"timestamp\":}",
    "[{\"timestamp\":\"2020-01-01T00:00:00Z\"}]",
    "{\"timestamp\":\"2020-01-01T00:00:00Z\",\"data\":[]}",
    "{\"timestamp\":\"x\",\"data\":{}}",
    "{\"timestamp\":\"1000-01-01T00:00:00Z\",\"data\":{}}",
    "{\"timestamp\":\"2020-01-01T00:00:00Z\",\"duration\":1e400,\"data\":{}}",
    "[{\"timestamp\":\"2020-01-01T00:00:00Z\",\"duration\":-1e300,\"data\":{}}]",
    "{\"buckets\":[]}",
    "{\"buckets\":{\"x\":1}}",
    "{\"timeperiods\":[\"a/b\"],\"query\":[]}",
    "{\"timeperiods\":[],\"query\":\"x\"}",
    "\u{0}\u{1}\u{2}",
    "{\"type\":1}",
    "{\"a\":\"\\ud800\"}",
];

#[test]
fn malformed_requests_change_nothing() {
    let s = TestServer::start();
    let mut c = s.client();
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    c.post_json(
        "/api/0/buckets/b/events",
        r#"[{"timestamp":"2020-01-01T00:00:00Z","duration":5,"data":{"a":1}},{"timestamp":"2020-01-01T00:01:00Z","duration":5,"data":{"a":2}}]"#,
    );
    c.post_json("/api/0/settings/keep", "\"me\"");
    let before = c.get("/api/0/export").json();
    let settings_before = c.get("/api/0/settings").json();

    let nested = "[".repeat(10_000);
    let mut rng = Rng::new(0x5EED_1234_ABCD_0001);
    let methods = ["GET", "POST", "DELETE", "PUT", "OPTIONS", "HEAD", "PATCH"];
    let content_types = [
        "application/json",
        "text/plain",
        "",
        "multipart/form-data; boundary=zz",
        "application/json; charset=x",
    ];
    for i in 0..600u32 {
        let template = *rng.pick(PATHS);
        let mut path = template.to_string();
        while let Some(at) = path.find("{b}") {
            // Only read-only or malformed requests may reach the real bucket.
            let b = if rng.next_u64().is_multiple_of(2) {
                "b"
            } else {
                *rng.pick(SEGMENTS)
            };
            path.replace_range(at..at + 3, b);
        }
        while let Some(at) = path.find("{x}") {
            let seg = *rng.pick(SEGMENTS);
            path.replace_range(at..at + 3, seg);
        }
        path.push_str(rng.pick::<&str>(QUERIES));
        let mut method = *rng.pick(&methods);
        // DELETE is only sent to paths that cannot name stored data.
        if method == "DELETE"
            && (path.contains("/b/")
                || path.ends_with("/b")
                || path.contains("/b?")
                || path.contains("/settings/"))
        {
            method = "GET";
        }
        // Any JSON value is a valid setting, so POSTs there would be legitimate writes.
        if method == "POST" && path.contains("/settings/") {
            method = "GET";
        }
        let body = if i.is_multiple_of(50) {
            nested.as_str()
        } else {
            *rng.pick(BODIES)
        };
        // A syntactically valid event sent to the real bucket would be stored legitimately.
        let body = if path.contains("/b/events")
            && method == "POST"
            && body.starts_with("[{\"timestamp\":\"2020")
            && !body.contains("duration")
        {
            "[1,2"
        } else {
            body
        };
        let ct = *rng.pick(&content_types);
        let r = c.request(
            method,
            &path,
            &[("Content-Type", ct)],
            Some(body.as_bytes()),
        );
        assert!(
            r.status < 500,
            "{method} {path} ({ct}) {body:?} → {} {}",
            r.status,
            r.body
        );
    }
    assert_eq!(c.get("/api/0/info").status, 200);
    assert_eq!(c.get("/api/0/export").json(), before);
    assert_eq!(c.get("/api/0/settings").json(), settings_before);
}
