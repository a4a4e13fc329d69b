//! Salvage on a year of data (issue 25, item 3): a database like the generated year
//! (365 days of window, AFK and browser events, about 400,000 in all), pages overwritten in
//! the events table, its indexes, an interior page and the buckets table; for each case the
//! events a point lookup by id still reaches in the damaged file (the oracle), what the
//! salvage brings back, against the original, and how long it takes.
//!
//! `cargo run --release -p aw-datastore --example salvage_year`
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use aw_datastore::Datastore;
use aw_models::{Bucket, Event};
use chrono::{Duration, TimeZone, Utc};
use rusqlite::{Connection, OpenFlags};

#[path = "../tests/common/damage.rs"]
mod damage;
use damage::{damage, pages_of as pages};
use serde_json::json;

fn build(path: &Path) -> i64 {
    let ds = Datastore::open(path).unwrap();
    let day0 = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
    for (id, kind) in [
        ("aw-watcher-window_h", "currentwindow"),
        ("aw-watcher-afk_h", "afkstatus"),
        ("aw-watcher-web-firefox_h", "web.tab.current"),
    ] {
        ds.create_bucket(&Bucket::new(id, kind, "c", "h"))
            .wait()
            .unwrap();
    }
    let mut total = 0;
    for day in 0..365 {
        let start = day0 + Duration::days(day);
        let make = |n: i64, step: i64, data: &dyn Fn(i64) -> serde_json::Value| -> Vec<Event> {
            (0..n)
                .map(|i| {
                    let serde_json::Value::Object(map) = data(i) else {
                        unreachable!()
                    };
                    Event::new(
                        start + Duration::seconds(8 * 3600 + i * step),
                        Duration::seconds(step - 1),
                        map,
                    )
                })
                .collect()
        };
        let window = make(
            1000,
            30,
            &|i| json!({"app": format!("app{}", i % 23), "title": format!("Document {} — {}", i % 301, "x".repeat((i % 40) as usize))}),
        );
        let afk = make(
            14,
            1800,
            &|i| json!({"status": if i % 3 == 0 { "afk" } else { "not-afk" }}),
        );
        let web = make(
            100,
            300,
            &|i| json!({"url": format!("https://site{}.example/page/{}", i % 37, i), "title": format!("Page {i}"), "audible": false, "incognito": false}),
        );
        total += (window.len() + afk.len() + web.len()) as i64;
        ds.insert_events("aw-watcher-window_h", &window)
            .wait()
            .unwrap();
        ds.insert_events("aw-watcher-afk_h", &afk).wait().unwrap();
        ds.insert_events("aw-watcher-web-firefox_h", &web)
            .wait()
            .unwrap();
    }
    ds.close().unwrap();
    total
}

fn reachable(path: &Path, last: i64) -> BTreeSet<i64> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = conn.prepare("SELECT id FROM events WHERE id = ?1").unwrap();
    (1..=last)
        .filter(|id| stmt.query_row([id], |_| Ok(())).is_ok())
        .collect()
}

/// Every `n`-th of `pages`, starting at an offset, so the choice is spread but fixed.
fn spread(pages: &[i64], count: usize) -> Vec<i64> {
    let step = (pages.len() / count).max(1);
    pages
        .iter()
        .copied()
        .skip(step / 2)
        .step_by(step)
        .take(count)
        .collect()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("year.db");
    let t = Instant::now();
    let total = build(&original);
    println!("built {total} events in {:.1?}", t.elapsed());
    let leaves = pages(&original, &["events"], true);
    let interior = pages(&original, &["events"], false);
    let index = pages(
        &original,
        &["events_bucketrow_starttime_endtime_index"],
        true,
    );
    let buckets = pages(&original, &["buckets"], true);
    println!(
        "{} event leaf pages, {} interior, {} index leaf pages, {} bucket pages",
        leaves.len(),
        interior.len(),
        index.len(),
        buckets.len()
    );
    let last = total + 10;
    let cases: Vec<(&str, Vec<i64>)> = vec![
        ("20 random event leaf pages", spread(&leaves, 20)),
        (
            "one interior page (not the root)",
            interior.last().copied().into_iter().collect(),
        ),
        ("20 index pages", spread(&index, 20)),
        ("the buckets table", buckets.clone()),
        (
            "20 event leaves + 20 index pages + buckets",
            [spread(&leaves, 20), spread(&index, 20), buckets.clone()].concat(),
        ),
    ];
    println!("| damage | events back | reachable by id in the damaged file | original | lost id ranges | recovery buckets | salvage time |");
    println!("|---|---|---|---|---|---|---|");
    for (i, (name, damaged_pages)) in cases.iter().enumerate() {
        let damaged = dir.path().join(format!("case{i}.db"));
        std::fs::copy(&original, &damaged).unwrap();
        damage(&damaged, damaged_pages);
        let oracle = reachable(&damaged, last);
        let fresh = dir.path().join(format!("case{i}-salvaged.db"));
        let t = Instant::now();
        let report = aw_datastore::salvage(&damaged, &fresh, None).unwrap();
        let took = t.elapsed();
        let back = reachable(&fresh, last);
        assert!(
            oracle.is_subset(&back),
            "{name}: a reachable event was not salvaged"
        );
        println!(
            "| {name} | {} | {} | {total} | {} | {} | {:.2?} |",
            back.len(),
            oracle.len(),
            report.lost.len(),
            report.recovery_buckets.len(),
            took
        );
    }
}
