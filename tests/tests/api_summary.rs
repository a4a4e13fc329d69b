//! `GET /api/0/summary` against the real binary (issue 36, item 8): the numbers of the
//! dashboard's desktop query, grouped as asked, days and hours in the time zone asked for
//! (a day of a daylight-saving change has 23 hours), errors as 400, and a second asking
//! answered from the query cache.

use aw_client_rust::classes::default_classes;
use aw_client_rust::queries::{full_desktop_query, DesktopQueryParams};
use aw_tests::{Client, TestServer};
use serde_json::Value;

/// Host `h`: window, AFK and Firefox buckets around the night of 2026-03-29, when Berlin
/// moves its clocks forward (02:00 CET becomes 03:00 CEST, 01:00 UTC).
fn seed(c: &mut Client) {
    for (id, kind) in [
        ("aw-watcher-window_h", "currentwindow"),
        ("aw-watcher-afk_h", "afkstatus"),
        ("aw-watcher-web-firefox_h", "web.tab.current"),
    ] {
        let r = c.post_json(
            &format!("/api/0/buckets/{id}"),
            &format!(r#"{{"client":"c","type":"{kind}","hostname":"h"}}"#),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let window: Vec<String> = (0..48)
        .map(|i| {
            let app = ["Code", "Firefox", "Terminal"][i % 3];
            format!(
                r#"{{"timestamp":"2026-03-28T{:02}:{:02}:00Z","duration":1700,"data":{{"app":"{app}","title":"t{}"}}}}"#,
                12 + i / 2,
                (i % 2) * 30,
                i % 5
            )
        })
        .map(|e| e.replace("T24:", "T23:").replace("T25:", "T23:"))
        .collect();
    let post = |c: &mut Client, id: &str, events: &[String]| {
        let r = c.post_json(
            &format!("/api/0/buckets/{id}/events"),
            &format!("[{}]", events.join(",")),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    post(c, "aw-watcher-window_h", &window[..22]);
    let more: Vec<String> = (0..20)
        .map(|i| {
            format!(
                r#"{{"timestamp":"2026-03-29T{:02}:00:00Z","duration":3000,"data":{{"app":"Code","title":"night {i}"}}}}"#,
                i
            )
        })
        .collect();
    post(c, "aw-watcher-window_h", &more);
    post(
        c,
        "aw-watcher-afk_h",
        &[
            r#"{"timestamp":"2026-03-28T12:00:00Z","duration":32400,"data":{"status":"not-afk"}}"#
                .into(),
            r#"{"timestamp":"2026-03-28T21:00:00Z","duration":10800,"data":{"status":"afk"}}"#
                .into(),
            r#"{"timestamp":"2026-03-29T00:00:00Z","duration":72000,"data":{"status":"not-afk"}}"#
                .into(),
        ],
    );
    post(
        c,
        "aw-watcher-web-firefox_h",
        &[
            r#"{"timestamp":"2026-03-28T12:30:00Z","duration":1500,"data":{"url":"https://docs.rs/x","title":"x","audible":false}}"#.into(),
            r#"{"timestamp":"2026-03-28T14:00:00Z","duration":1500,"data":{"url":"https://github.com/y","title":"y","audible":false}}"#.into(),
        ],
    );
}

const RANGE: &str = "start=2026-03-28T00:00:00Z&end=2026-03-31T00:00:00Z";

fn summary(c: &mut Client, query: &str) -> Value {
    let r = c.get(&format!("/api/0/summary?{RANGE}&hostname=h&{query}"));
    assert_eq!(r.status, 200, "{query}: {}", r.body);
    r.json()
}

#[test]
fn the_summary_counts_what_the_dashboards_query_counts() {
    let s = TestServer::start();
    let mut c = s.client();
    seed(&mut c);
    // The dashboard's query (as the client library builds it, statement for statement).
    let query = full_desktop_query(&DesktopQueryParams {
        bid_window: "aw-watcher-window_h".into(),
        bid_afk: "aw-watcher-afk_h".into(),
        bid_browsers: vec!["aw-watcher-web-firefox_h".into()],
        classes: default_classes(),
        filter_afk: true,
        include_audible: true,
        ..Default::default()
    });
    let body = serde_json::json!({
        "timeperiods": ["2026-03-28T00:00:00+00:00/2026-03-31T00:00:00+00:00"],
        "query": [query],
    });
    let r = c.post_json("/api/0/query", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let dashboard = r.json()[0].clone();
    let pairs = |events: &Value, key: &str| -> Vec<(String, f64)> {
        events
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let k = match &e["data"][key] {
                    Value::Array(parts) => parts
                        .iter()
                        .map(|p| p.as_str().unwrap().to_string())
                        .collect::<Vec<_>>()
                        .join(" > "),
                    v => v.as_str().unwrap().to_string(),
                };
                (k, e["duration"].as_f64().unwrap())
            })
            .collect()
    };
    let groups = |v: &Value| -> Vec<(String, f64)> {
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["key"].as_str().unwrap().to_string(),
                    g["seconds"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let apps = summary(&mut c, "by=app");
    assert_eq!(
        groups(&apps),
        pairs(&dashboard["window"]["app_events"], "app")
    );
    assert_eq!(apps["total"], dashboard["window"]["duration"]);
    assert!(apps["total"].as_f64().unwrap() > 0.0);
    let cats = summary(&mut c, "by=category");
    assert_eq!(
        groups(&cats),
        pairs(&dashboard["window"]["cat_events"], "$category")
    );
    let domains = summary(&mut c, "by=domain");
    assert_eq!(
        groups(&domains),
        pairs(&dashboard["browser"]["domains"], "$domain")
    );
    assert_eq!(domains["total"], dashboard["browser"]["duration"]);
    let titles = summary(&mut c, "by=title&limit=3");
    assert_eq!(titles["groups"].as_array().unwrap().len(), 3);

    // Days in Berlin from its day start (04:00), their sum the window time.
    let days = summary(&mut c, "by=day&tz=Europe/Berlin");
    let keys: Vec<&str> = days["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.first(), Some(&"2026-03-27"), "{days}");
    let sum: f64 = days["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["seconds"].as_f64().unwrap())
        .sum();
    assert!(
        (sum - apps["total"].as_f64().unwrap()).abs() < 1e-6,
        "{sum} vs {apps}"
    );
    // Hours of Berlin's 29 March: 23 of them.
    let r = c.get("/api/0/summary?start=2026-03-28T23:00:00Z&end=2026-03-29T22:00:00Z&hostname=h&by=hour&tz=Europe/Berlin");
    assert_eq!(r.status, 200, "{}", r.body);
    let hours = r.json()["groups"].as_array().unwrap().clone();
    assert_eq!(hours.len(), 23, "{hours:?}");
    assert!(
        hours.iter().all(|h| h["key"] != "2026-03-29T02:00"),
        "02:00 does not exist that night"
    );

    // Asked again: from the query cache.
    let hits = |c: &mut Client| c.get("/api/0/query/cache").json()["hits"].as_u64().unwrap();
    let before = hits(&mut c);
    summary(&mut c, "by=day&tz=Europe/Berlin");
    assert!(hits(&mut c) > before, "not answered from the cache");
}

#[test]
fn bad_parameters_are_400() {
    let s = TestServer::start();
    let mut c = s.client();
    seed(&mut c);
    for query in [
        "start=2026-03-28T00:00:00Z",
        &format!("{RANGE}&by=week"),
        &format!("{RANGE}&tz=Mars/Olympus"),
        &format!("{RANGE}&limit=0"),
        &format!("{RANGE}&limit=many"),
    ] {
        let r = c.get(&format!("/api/0/summary?{query}"));
        assert_eq!(r.status, 400, "{query}: {}", r.body);
        assert!(r.json()["message"].is_string());
    }
    // A host without buckets: nothing.
    let r = c.get(&format!("/api/0/summary?{RANGE}&hostname=nobody"));
    assert_eq!(r.json()["total"], 0.0, "{}", r.body);
    // An offset works as well as a name.
    let r = c.get(&format!(
        "/api/0/summary?{RANGE}&hostname=h&by=day&tz=%2B05:30"
    ));
    assert_eq!(r.status, 200, "{}", r.body);
}

/// An activity added by hand into `aw-manual_<host>` (what the dashboard's Timeline writes)
/// is active time in the summary, although the AFK bucket says away then.
#[test]
fn an_activity_added_by_hand_is_in_the_summary() {
    let s = TestServer::start();
    let mut c = s.client();
    seed(&mut c);
    let before = summary(&mut c, "by=app")["total"].as_f64().unwrap();
    let r = c.post_json(
        "/api/0/buckets/aw-manual_h",
        r#"{"client":"aw-server-dashboard","type":"manual","hostname":"h"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // 21:30–22:30 UTC on the 28th: away, by the AFK bucket (21:00–24:00).
    let r = c.post_json(
        "/api/0/buckets/aw-manual_h/events",
        r#"[{"timestamp":"2026-03-28T21:30:00Z","duration":3600,"data":{"app":"Team meeting","title":"Team meeting"}}]"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let after = summary(&mut c, "by=app");
    assert_eq!(after["total"].as_f64().unwrap(), before + 3600.0, "{after}");
    let meeting = after["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "Team meeting")
        .cloned();
    assert_eq!(meeting.map(|g| g["seconds"].clone()), Some(3600.0.into()));
}
