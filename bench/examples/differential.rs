//! The same requests to two builds on the same data, answers compared byte for byte: for a
//! change that must not change behaviour (a refactor, issue 45). Both servers import the
//! generated year, then get every route (reads of every bucket over several spans, counts,
//! single events, exports, the dashboard's queries over a day, a week, a month and the
//! year, summaries, settings, errors) and the same writes in the same order (heartbeats,
//! inserts, an edit, deletions, a bucket created, renamed and merged, a range deleted after
//! a preview, the privacy rules' dry run), each answer compared as it comes. Prints each
//! difference and how many requests agreed; exits 1 on any difference.
//!
//! What differs between any two processes is compared apart: an answer that differs in
//! bytes is compared again as JSON without the fields that name the process (`device_id`),
//! its folder or the time of a backup (`backup`, `restore`), and with objects compared
//! regardless of key order (the bucket map is a hash map in both builds); such answers are
//! counted as "alike as JSON". Left out altogether: `GET /api/0/health` (timings),
//! `GET /api/0/backups` (the folder's path, times), `GET /api/0/query/cache` (timings).
//!
//! ```sh
//! cargo build --release -p aw-server
//! cargo run --release -p aw-bench --example differential -- OTHER_BIN [DAYS]
//! ```
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use aw_client_rust::queries::{full_desktop_query, DesktopQueryParams};
use aw_tests::dataset::Dataset;
use aw_tests::year::{self, DAY, START_DAY};
use aw_tests::{Client, TestServer};

/// One request, as sent to both servers.
enum Ask {
    Get(String),
    Post(String, String),
    Delete(String),
    Patch(String, String),
}

/// Both servers, and what the comparison found.
struct Pair {
    ours: Client,
    theirs: Client,
    /// Byte for byte.
    agreed: usize,
    /// Alike once the fields that name the process, its folder or a time are left out.
    alike_as_json: usize,
    differed: usize,
}

impl Pair {
    /// Sends `ask` to both and compares status and body; returns our body.
    fn ask(&mut self, ask: &Ask) -> String {
        let (a, b) = (send(&mut self.ours, ask), send(&mut self.theirs, ask));
        let what = match ask {
            Ask::Get(p) => format!("GET {p}"),
            Ask::Post(p, _) => format!("POST {p}"),
            Ask::Delete(p) => format!("DELETE {p}"),
            Ask::Patch(p, _) => format!("PATCH {p}"),
        };
        if a == b {
            self.agreed += 1;
        } else if a.0 == b.0 && same_json(&a.1, &b.1) {
            self.alike_as_json += 1;
        } else {
            self.differed += 1;
            let cut = |s: &str| s.chars().take(400).collect::<String>();
            let at =
                a.1.bytes()
                    .zip(b.1.bytes())
                    .take_while(|(x, y)| x == y)
                    .count();
            println!(
                "DIFFERS {what}: {} vs {}; bodies {} vs {} bytes, first difference at byte {at}\n  ours:   {}\n  theirs: {}",
                a.0,
                b.0,
                a.1.len(),
                b.1.len(),
                cut(&a.1[at.saturating_sub(100).min(a.1.len())..]),
                cut(&b.1[at.saturating_sub(100).min(b.1.len())..])
            );
        }
        a.1
    }

    fn get(&mut self, path: &str) -> String {
        self.ask(&Ask::Get(path.to_string()))
    }
}

/// Whether two bodies are the same JSON once the fields that differ between any two
/// processes are left out (see the module docs).
fn same_json(a: &str, b: &str) -> bool {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                for volatile in ["device_id", "backup", "restore"] {
                    map.remove(volatile);
                }
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    match (
        serde_json::from_str::<serde_json::Value>(a),
        serde_json::from_str::<serde_json::Value>(b),
    ) {
        (Ok(mut a), Ok(mut b)) => {
            strip(&mut a);
            strip(&mut b);
            a == b
        }
        _ => false,
    }
}

fn send(c: &mut Client, ask: &Ask) -> (u16, String) {
    let r = match ask {
        Ask::Get(p) => c.get(p),
        Ask::Post(p, body) => c.post_json(p, body),
        Ask::Delete(p) => c.delete(p),
        Ask::Patch(p, body) => c.request(
            "PATCH",
            p,
            &[("Content-Type", "application/json")],
            Some(body.as_bytes()),
        ),
    };
    (r.status, r.body)
}

fn main() {
    let other = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: differential OTHER_SERVER_BINARY [DAYS]"),
    );
    let days: i64 = year::arg(2, 365);
    let data = year::generate(days);
    let ours = year::server_with(&data);
    let theirs = TestServer::start_binary(&other);
    let r = theirs
        .client()
        .post_json("/api/0/import", &data.export_json());
    assert_eq!(
        r.status,
        200,
        "import into {} failed: {}",
        other.display(),
        r.body
    );
    println!(
        "{} days, {} events imported into both; comparing",
        days,
        data.event_count()
    );
    let mut pair = Pair {
        ours: ours.client(),
        theirs: theirs.client(),
        agreed: 0,
        alike_as_json: 0,
        differed: 0,
    };
    reads(&mut pair, &data, days);
    writes(&mut pair, &data, days);
    // The reads again, after the writes.
    reads(&mut pair, &data, days);
    println!(
        "{} requests answered byte for byte alike, {} alike as JSON (see the module docs), {} differently",
        pair.agreed, pair.alike_as_json, pair.differed
    );
    // The servers stop before the exit (`exit` runs no destructor).
    drop((ours, theirs));
    if pair.differed > 0 {
        std::process::exit(1);
    }
}

/// Every read route, over spans of the generated data.
fn reads(pair: &mut Pair, data: &Dataset, days: i64) {
    pair.get("/api/0/buckets/");
    pair.get("/api/0/buckets");
    let last = START_DAY + (days - 1) * DAY;
    let spans = [
        (last, last + DAY),
        (last - 6 * DAY, last + DAY),
        (last - 29 * DAY, last + DAY),
        (START_DAY, last + DAY),
    ];
    let ids: Vec<String> = data.buckets.iter().map(|b| b.id.clone()).collect();
    for id in ids.iter().chain(["aw-no-such-bucket".to_string()].iter()) {
        pair.get(&format!("/api/0/buckets/{id}"));
        pair.get(&format!("/api/0/buckets/{id}/events?limit=100"));
        pair.get(&format!("/api/0/buckets/{id}/events/count"));
        for &(a, b) in &spans[..3] {
            let (a, b) = (year::ts(a), year::ts(b));
            pair.get(&format!("/api/0/buckets/{id}/events?start={a}&end={b}"));
            pair.get(&format!(
                "/api/0/buckets/{id}/events/count?start={a}&end={b}"
            ));
        }
        let events = pair.get(&format!("/api/0/buckets/{id}/events?limit=3"));
        if let Ok(serde_json::Value::Array(events)) = serde_json::from_str(&events) {
            for e in events {
                pair.get(&format!("/api/0/buckets/{id}/events/{}", e["id"]));
            }
        }
        pair.get(&format!("/api/0/buckets/{id}/events/999999999999"));
        let (a, b) = (year::ts(spans[1].0), year::ts(spans[1].1));
        pair.get(&format!("/api/0/buckets/{id}/export?start={a}&end={b}"));
        pair.get(&format!(
            "/api/0/buckets/{id}/export?format=csv&start={a}&end={b}"
        ));
    }
    pair.get("/api/0/buckets/aw-no-such-bucket/events?limit=x");
    pair.get("/api/0/buckets/aw-no-such-bucket/events?start=yesterday");
    let (a, b) = (year::ts(spans[2].0), year::ts(spans[2].1));
    pair.get(&format!("/api/0/export?start={a}&end={b}"));
    let params: DesktopQueryParams = year::desktop_params(data);
    let code = full_desktop_query(&params);
    for &span in &spans {
        pair.ask(&Ask::Post(
            "/api/0/query/".into(),
            year::query_body(&code, &[span]),
        ));
    }
    pair.ask(&Ask::Post(
        "/api/0/query/".into(),
        r#"{"timeperiods":["2025-01-01T00:00:00Z/2025-01-02T00:00:00Z"],"query":["RETURN = nope;"]}"#.into(),
    ));
    for by in [
        "app", "title", "category", "day", "hour", "url", "domain", "nope",
    ] {
        let (a, b) = (year::ts(spans[1].0), year::ts(spans[1].1));
        pair.get(&format!(
            "/api/0/summary?start={a}&end={b}&by={by}&hostname=benchhost&tz=Europe/Berlin"
        ));
    }
    pair.get("/api/0/settings");
    pair.get("/api/0/settings/classes");
    pair.get("/api/0/settings/no-such-key");
    pair.get("/api/0/openapi.json");
    pair.get("/api/0/sync");
    pair.get("/");
    pair.get("/api/0/info");
}

/// The same writes to both, in the same order.
fn writes(pair: &mut Pair, data: &Dataset, days: i64) {
    let window = data.buckets[0].id.clone();
    let last = START_DAY + (days - 1) * DAY;
    let event = |ns: i64, secs: f64, app: &str| {
        format!(
            r#"{{"timestamp":"{}","duration":{secs},"data":{{"app":"{app}","title":"t"}}}}"#,
            year::ts(ns)
        )
    };
    pair.ask(&Ask::Post(
        "/api/0/buckets/aw-diff".into(),
        r#"{"client":"diff","type":"currentwindow","hostname":"benchhost","created":"2025-06-01T00:00:00Z"}"#.into(),
    ));
    pair.ask(&Ask::Post(
        "/api/0/buckets/aw-diff".into(),
        r#"{"client":"diff","type":"currentwindow","hostname":"benchhost","created":"2025-06-01T00:00:00Z"}"#.into(),
    ));
    for k in 0..5 {
        let at = last + DAY + k * 1_000_000_000;
        pair.ask(&Ask::Post(
            "/api/0/buckets/aw-diff/heartbeat?pulsetime=2".into(),
            event(at, 0.0, "a"),
        ));
    }
    let inserted = pair.ask(&Ask::Post(
        "/api/0/buckets/aw-diff/events".into(),
        format!(
            "[{},{}]",
            event(last + DAY + 100 * 1_000_000_000, 5.0, "b"),
            event(last + DAY + 200 * 1_000_000_000, 5.0, "c")
        ),
    ));
    let id = serde_json::from_str::<serde_json::Value>(&inserted)
        .ok()
        .and_then(|v| v[0]["id"].as_i64())
        .unwrap_or(1);
    pair.ask(&Ask::Post(
        "/api/0/buckets/aw-diff/events".into(),
        format!("[{}]", event(last + DAY + 100 * 1_000_000_000, 7.0, "b2"))
            .replace("{\"timestamp\"", &format!("{{\"id\":{id},\"timestamp\"")),
    ));
    pair.ask(&Ask::Delete(format!(
        "/api/0/buckets/aw-diff/events/{}",
        id + 1
    )));
    pair.ask(&Ask::Post(
        "/api/0/settings/diff".into(),
        r#"{"a":[1,2,3]}"#.into(),
    ));
    pair.ask(&Ask::Delete("/api/0/settings/diff".into()));
    pair.ask(&Ask::Patch(
        "/api/0/buckets/aw-diff?force=true".into(),
        r#"{"id":"aw-diff-renamed"}"#.into(),
    ));
    pair.ask(&Ask::Patch(
        "/api/0/buckets/aw-diff-renamed?force=true".into(),
        format!(r#"{{"id":"{window}"}}"#),
    ));
    let (a, b) = (year::ts(last - 2 * DAY), year::ts(last - DAY));
    let preview = pair.ask(&Ask::Delete(format!(
        "/api/0/events?start={a}&end={b}&hostname=benchhost&dry_run=true"
    )));
    let expect = serde_json::from_str::<serde_json::Value>(&preview)
        .ok()
        .map(|v| v["deleted"].as_u64().unwrap_or(0) + v["cut"].as_u64().unwrap_or(0))
        .unwrap_or(0);
    pair.ask(&Ask::Delete(format!(
        "/api/0/events?start={a}&end={b}&hostname=benchhost&expect={expect}"
    )));
    pair.ask(&Ask::Post(
        "/api/0/privacy/apply".into(),
        r#"{"dry_run":true}"#.into(),
    ));
    pair.ask(&Ask::Post(
        format!("/api/0/buckets/{window}/merge?force=true"),
        r#"{"from":"aw-diff-renamed"}"#.into(),
    ));
    pair.ask(&Ask::Delete(
        "/api/0/buckets/aw-diff-renamed?force=1".into(),
    ));
}
