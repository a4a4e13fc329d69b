//! Golden tests: the web UI's canonical desktop query (`aw_models::queries`) over a hand-made day of
//! window, AFK and browser events. Every expected number is worked out by hand in the
//! comments below.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_models::classes::default_classes;
use aw_models::queries::{self, DesktopQueryParams};
use aw_query::MemoryDataSource;
use common::*;
use serde_json::{json, Value};

/// The buckets of the hand-made day, with the web UI's default categories.
fn params() -> DesktopQueryParams {
    DesktopQueryParams {
        bid_window: "aw-watcher-window_laptop".into(),
        bid_afk: "aw-watcher-afk_laptop".into(),
        bid_browsers: vec!["aw-watcher-web-firefox_laptop".into()],
        classes: default_classes(),
        filter_afk: true,
        include_audible: true,
        include_events: true,
        ..Default::default()
    }
}

/// The full desktop query, as the web UI sends it and the client library builds it
/// (`aw_models::queries`, which a browser test runs beside the dashboard's).
fn full_desktop_query() -> String {
    queries::full_desktop_query(&params())
}

fn at(hms: &str) -> String {
    format!("2024-03-01T{hms}Z")
}

/// The hand-made day (all times UTC, 2024-03-01).
///
/// Window (after flood):
///   W1 09:00:00 600 s Code "main.rs - aw-server"   gap 2 s to W2 → W1 gets +1 s (601 s)
///   W2 09:10:02 298 s Firefox "GitHub - pull requests" → starts 09:10:01, 299 s
///   W3 09:15:00 300 s Firefox "YouTube - cats"
///   W4 09:20:00 600 s Slack "general | Slack"
///   W5 09:30:00 1800 s Code "main.rs - aw-server"  + W6 10:00:03 597 s (same data, gap 3 s)
///      → merged 09:30:00–10:10:00
///   W9 11:00:00 900 s Firefox "YouTube - lecture"
///   W7 12:00:00 3600 s Minecraft;  W8 13:00:00 300 s Thunderbird;  W10 13:05:00 300 s Terminal
/// AFK: not-afk 08:55–09:45, afk 09:45–10:00, not-afk 10:00–10:10, afk 10:10–12:00,
///      not-afk 12:00–12:30, afk 12:30–13:00, not-afk 13:00–13:10.
/// Browser (firefox):
///   B1 09:10:05 290 s github pulls; B2 09:15:00 300 s + B3 09:20:00 600 s youtube cats,
///   audible (same data → flood merges into 09:15–09:30; the 5 s gap after B1 is not filled);
///   B4 11:00:00 900 s youtube lecture, audible.
fn day() -> MemoryDataSource {
    let mut ds = MemoryDataSource::new();
    let w = |id, t: &str, d, app: &str, title: &str| {
        event(Some(id), &at(t), d, json!({"app": app, "title": title}))
    };
    ds.add_bucket(
        "aw-watcher-window_laptop",
        "currentwindow",
        "laptop",
        vec![
            w(1, "09:00:00", 600.0, "Code", "main.rs - aw-server"),
            w(2, "09:10:02", 298.0, "Firefox", "GitHub - pull requests"),
            w(3, "09:15:00", 300.0, "Firefox", "YouTube - cats"),
            w(4, "09:20:00", 600.0, "Slack", "general | Slack"),
            w(5, "09:30:00", 1800.0, "Code", "main.rs - aw-server"),
            w(6, "10:00:03", 597.0, "Code", "main.rs - aw-server"),
            w(9, "11:00:00", 900.0, "Firefox", "YouTube - lecture"),
            w(7, "12:00:00", 3600.0, "Minecraft", "Minecraft 1.20"),
            w(8, "13:00:00", 300.0, "Thunderbird", "Inbox - Thunderbird"),
            w(10, "13:05:00", 300.0, "Terminal", "bash"),
        ],
    );
    let a = |id, t: &str, d, s: &str| event(Some(id), &at(t), d, json!({"status": s}));
    ds.add_bucket(
        "aw-watcher-afk_laptop",
        "afkstatus",
        "laptop",
        vec![
            a(101, "08:55:00", 3000.0, "not-afk"),
            a(102, "09:45:00", 900.0, "afk"),
            a(103, "10:00:00", 600.0, "not-afk"),
            a(104, "10:10:00", 6600.0, "afk"),
            a(105, "12:00:00", 1800.0, "not-afk"),
            a(106, "12:30:00", 1800.0, "afk"),
            a(107, "13:00:00", 600.0, "not-afk"),
        ],
    );
    let b = |id, t: &str, d, url: &str, title: &str, audible: bool| {
        event(
            Some(id),
            &at(t),
            d,
            json!({"url": url, "title": title, "audible": audible, "incognito": false}),
        )
    };
    ds.add_bucket(
        "aw-watcher-web-firefox_laptop",
        "web.tab.current",
        "laptop",
        vec![
            b(
                201,
                "09:10:05",
                290.0,
                "https://github.com/ActivityWatch/aw-server/pulls",
                "GitHub - pull requests",
                false,
            ),
            b(
                202,
                "09:15:00",
                300.0,
                "https://www.youtube.com/watch?v=cats",
                "YouTube - cats",
                true,
            ),
            b(
                203,
                "09:20:00",
                600.0,
                "https://www.youtube.com/watch?v=cats",
                "YouTube - cats",
                true,
            ),
            b(
                204,
                "11:00:00",
                900.0,
                "https://www.youtube.com/watch?v=lecture",
                "YouTube - lecture",
                true,
            ),
        ],
    );
    ds
}

const DAY: &str = "2024-03-01T00:00:00Z/2024-03-02T00:00:00Z";

/// (data[key], duration) of each event.
fn pairs(v: &Value, key: &str) -> Vec<(Value, f64)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| (e["data"][key].clone(), e["duration"].as_f64().unwrap()))
        .collect()
}

/// (timestamp, duration) of each event.
fn spans(v: &Value) -> Vec<(String, f64)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["timestamp"].as_str().unwrap().to_string(),
                e["duration"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn run_day(periods: &[&str]) -> Vec<Value> {
    let out = run_periods(&day(), &full_desktop_query(), periods).unwrap();
    serde_json::from_str(&out).unwrap()
}

#[test]
fn full_desktop_query_window_part() {
    let r = &run_day(&[DAY])[0];
    let w = &r["window"];
    // Active time: W1 601 + W2 299 + W3 300 + W4 600 + W5 09:30–09:45 900 + 10:00–10:10 600
    // + W9 900 (AFK, but the audible lecture counts as active) + W7 12:00–12:30 1800 + W8 300
    // + W10 300 = 6600 s.
    assert_eq!(w["duration"], json!(6600.0));
    assert_eq!(
        pairs(&w["cat_events"], "$category"),
        vec![
            (json!(["Work", "Programming", "ActivityWatch"]), 2101.0),
            (json!(["Media", "Games"]), 1800.0),
            (json!(["Media", "Video"]), 1200.0),
            (json!(["Comms", "IM"]), 600.0),
            // Ties keep first-appearance order (Thunderbird 13:00 before Terminal 13:05).
            (json!(["Comms", "Email"]), 300.0),
            (json!(["Uncategorized"]), 300.0),
            (json!(["Work", "Programming"]), 299.0),
        ]
    );
    assert_eq!(
        pairs(&w["title_events"], "title"),
        vec![
            (json!("main.rs - aw-server"), 2101.0),
            (json!("Minecraft 1.20"), 1800.0),
            (json!("YouTube - lecture"), 900.0),
            (json!("general | Slack"), 600.0),
            (json!("YouTube - cats"), 300.0),
            (json!("Inbox - Thunderbird"), 300.0),
            (json!("bash"), 300.0),
            (json!("GitHub - pull requests"), 299.0),
        ]
    );
    assert_eq!(
        pairs(&w["app_events"], "app"),
        vec![
            (json!("Code"), 2101.0),
            (json!("Minecraft"), 1800.0),
            (json!("Firefox"), 1499.0),
            (json!("Slack"), 600.0),
            (json!("Thunderbird"), 300.0),
            (json!("Terminal"), 300.0),
        ]
    );
    // The merged Firefox event carries the full data of its first (longest-title) event.
    assert_eq!(
        w["app_events"][2]["data"]["title"],
        json!("YouTube - lecture")
    );
    assert_eq!(
        w["app_events"][2]["timestamp"],
        json!("2024-03-01T11:00:00Z")
    );
    assert!(w["app_events"][2]["id"].is_null());
    // Not-AFK periods plus the audible lecture; data cleared; ids of each group's first event.
    assert_eq!(
        spans(&w["active_events"]),
        vec![
            (at("08:55:00"), 3000.0),
            (at("10:00:00"), 600.0),
            (at("11:00:00"), 900.0),
            (at("12:00:00"), 1800.0),
            (at("13:00:00"), 600.0),
        ]
    );
    let ids: Vec<Value> = w["active_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(
        ids,
        vec![json!(101), json!(103), json!(204), json!(105), json!(107)]
    );
    assert_eq!(w["active_events"][0]["data"], json!({}));
}

#[test]
fn full_desktop_query_events_list() {
    let r = &run_day(&[DAY])[0];
    assert_eq!(
        spans(&r["events"]),
        vec![
            (at("09:00:00"), 601.0),
            (at("09:10:01"), 299.0),
            (at("09:15:00"), 300.0),
            (at("09:20:00"), 600.0),
            (at("09:30:00"), 900.0),
            (at("10:00:00"), 600.0),
            (at("11:00:00"), 900.0),
            (at("12:00:00"), 1800.0),
            (at("13:00:00"), 300.0),
            (at("13:05:00"), 300.0),
        ]
    );
    // Pieces keep their event's id (the merged W5+W6 keeps W5's id).
    let ids: Vec<Value> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(
        ids,
        [1, 2, 3, 4, 5, 5, 9, 7, 8, 10].map(|i| json!(i)).to_vec()
    );
    assert_eq!(
        r["events"][0]["data"],
        json!({"$category": ["Work", "Programming", "ActivityWatch"], "app": "Code", "title": "main.rs - aw-server"})
    );
}

#[test]
fn full_desktop_query_browser_part() {
    let r = &run_day(&[DAY])[0];
    let b = &r["browser"];
    // B1 inside the Firefox window 09:10:01–09:15:00: 290 s; the merged cats event
    // 09:15–09:30 only while Firefox is focused (09:15–09:20): 300 s; the lecture 900 s.
    assert_eq!(b["duration"], json!(1490.0));
    assert_eq!(
        pairs(&b["domains"], "$domain"),
        vec![(json!("youtube.com"), 1200.0), (json!("github.com"), 290.0)]
    );
    assert_eq!(
        pairs(&b["urls"], "url"),
        vec![
            (json!("https://www.youtube.com/watch?v=lecture"), 900.0),
            (json!("https://www.youtube.com/watch?v=cats"), 300.0),
            (
                json!("https://github.com/ActivityWatch/aw-server/pulls"),
                290.0
            ),
        ]
    );
    assert_eq!(
        pairs(&b["titles"], "title"),
        vec![
            (json!("YouTube - lecture"), 900.0),
            (json!("YouTube - cats"), 300.0),
            (json!("GitHub - pull requests"), 290.0),
        ]
    );
    assert_eq!(
        b["domains"][0]["data"],
        json!({
            "$domain": "youtube.com", "$params": "v=cats", "$path": "/watch", "$protocol": "https",
            "audible": true, "incognito": false, "title": "YouTube - cats",
            "url": "https://www.youtube.com/watch?v=cats"
        })
    );
}

#[test]
fn category_by_hour_sums_to_the_day() {
    // The web UI's category-by-period query, sent with the 24 hours of the day.
    let code = format!(
        "{}\ncat_events = sort_by_duration(merge_events_by_keys(events, [\"$category\"]));\nRETURN = {{\"cat_events\": cat_events}};",
        queries::canonical_events(&params()).join("\n")
    );
    let hours: Vec<String> = (0..24)
        .map(|h| {
            format!("2024-03-01T{h:02}:00:00Z/2024-03-01T{:02}:00:00Z", h + 1)
                .replace("T24:00:00Z", "T23:59:59.999999999Z")
        })
        .collect();
    let periods: Vec<&str> = hours.iter().map(|s| s.as_str()).collect();
    let out: Vec<Value> =
        serde_json::from_str(&run_periods(&day(), &code, &periods).unwrap()).unwrap();
    assert_eq!(out.len(), 24);
    let per_hour: Vec<Vec<(Value, f64)>> = out
        .iter()
        .map(|r| pairs(&r["cat_events"], "$category"))
        .collect();
    // 09:00–10:00: W1 601 (+1 s from the 2 s gap) + W5 09:30–09:45 900 = 1501 ActivityWatch;
    // Slack 600; cats 300; GitHub 299.
    assert_eq!(
        per_hour[9],
        vec![
            (json!(["Work", "Programming", "ActivityWatch"]), 1501.0),
            (json!(["Comms", "IM"]), 600.0),
            (json!(["Media", "Video"]), 300.0),
            (json!(["Work", "Programming"]), 299.0),
        ]
    );
    // 10:00–11:00: W5's zero-length remainder at 10:00 floods into W6: 10:00–10:10 active.
    assert_eq!(
        per_hour[10],
        vec![(json!(["Work", "Programming", "ActivityWatch"]), 600.0)]
    );
    // 11:00–12:00: AFK, but the audible lecture counts.
    assert_eq!(per_hour[11], vec![(json!(["Media", "Video"]), 900.0)]);
    assert_eq!(per_hour[12], vec![(json!(["Media", "Games"]), 1800.0)]);
    assert_eq!(
        per_hour[13],
        vec![
            (json!(["Comms", "Email"]), 300.0),
            (json!(["Uncategorized"]), 300.0)
        ]
    );
    for (h, cats) in per_hour.iter().enumerate() {
        if !(9..=13).contains(&h) {
            assert!(cats.is_empty(), "hour {h}: {cats:?}");
        }
    }
    let total: f64 = per_hour.iter().flatten().map(|(_, d)| d).sum();
    assert_eq!(total, 6600.0);
}

/// An activity added by hand (`aw-manual_<host>`, a meeting away from the computer): it
/// counts as active time although the AFK bucket says away, and takes the place of the
/// window time it overlaps.
#[test]
fn an_activity_added_by_hand_is_active_time_in_place_of_the_window_time() {
    let mut ds = day();
    ds.add_bucket(
        "aw-manual_laptop",
        "manual",
        "laptop",
        vec![event(
            Some(301),
            &at("11:30:00"),
            2700.0,
            json!({"app": "Team meeting", "title": "Team meeting"}),
        )],
    );
    let params = DesktopQueryParams {
        bid_manual: "aw-manual_laptop".into(),
        ..params()
    };
    let out = run_periods(&ds, &queries::full_desktop_query(&params), &[DAY]).unwrap();
    let r: Vec<Value> = serde_json::from_str(&out).unwrap();
    let w = &r[0]["window"];
    // 6,600 s without it; the meeting (11:30–12:15, 2,700 s, away until 12:00) replaces
    // Minecraft's active 12:00–12:15 (900 s): 6,600 − 900 + 2,700.
    assert_eq!(w["duration"], json!(8400.0));
    let apps = pairs(&w["app_events"], "app");
    assert!(apps.contains(&(json!("Team meeting"), 2700.0)), "{apps:?}");
    assert!(apps.contains(&(json!("Minecraft"), 900.0)), "{apps:?}");
    // Active time: the away span 10:10–12:00 now ends at 11:30, where the meeting starts
    // and runs on into the not-AFK time from 12:00.
    assert_eq!(
        spans(&w["active_events"]),
        vec![
            (at("08:55:00"), 3000.0),
            (at("10:00:00"), 600.0),
            (at("11:00:00"), 900.0),
            (at("11:30:00"), 3600.0),
            (at("13:00:00"), 600.0),
        ]
    );
}
