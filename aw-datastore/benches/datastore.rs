//! Datastore benchmark: `cargo bench -p aw-datastore`.
//!
//! Builds a one-year bucket of 500,000 events in a real SQLite file, then prints write
//! throughput (bulk inserts, single inserts, distinct and merging heartbeats) and read
//! latency (`limit=100`, one day, one month, counts), each read including the conversion to
//! response JSON the server does. Numbers are medians unless stated.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use aw_datastore::Datastore;
use aw_models::{Bucket, Event};
use chrono::{Duration, TimeZone, Utc};
use serde_json::json;
use std::time::Instant;

const EVENTS: i64 = 500_000;
const YEAR_START: i64 = 1_672_531_200; // 2023-01-01
const SPACING_S: i64 = 63; // 500k events spread over a year

fn event(i: i64, dur_s: i64) -> Event {
    let mut data = serde_json::Map::new();
    data.insert("app".into(), json!(format!("app{}", i % 50)));
    data.insert(
        "title".into(),
        json!(format!(
            "Window title number {} - Some Application",
            i % 5000
        )),
    );
    Event::new(
        Utc.timestamp_opt(YEAR_START + i * SPACING_S, 0).unwrap(),
        Duration::seconds(dur_s),
        data,
    )
}

fn median_ms(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn time<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    median_ms(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

fn main() {
    // `cargo test --all-targets` runs bench targets too (without `--bench`): skip the
    // half-million-event run there; `cargo bench` passes `--bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let ds = Datastore::open(&dir.path().join("sqlite.db")).expect("open");
    let bucket: Bucket = serde_json::from_value(
        json!({"id": "w", "type": "currentwindow", "client": "bench", "hostname": "h"}),
    )
    .expect("bucket");
    ds.create_bucket(&bucket).wait().expect("create");

    let t = Instant::now();
    for chunk in (0..EVENTS).collect::<Vec<_>>().chunks(10_000) {
        let events: Vec<Event> = chunk.iter().map(|&i| event(i, 60)).collect();
        ds.insert_events("w", &events).wait().expect("insert");
    }
    ds.force_commit().wait().expect("commit");
    let bulk = EVENTS as f64 / t.elapsed().as_secs_f64();

    let mut b2 = bucket.clone();
    b2.id = "w2".into();
    ds.create_bucket(&b2).wait().expect("create");
    let n = 5_000;
    let t = Instant::now();
    for i in 0..n {
        ds.insert_events("w2", &[event(i, 1)])
            .wait()
            .expect("insert");
    }
    let single = n as f64 / t.elapsed().as_secs_f64();

    let t = Instant::now();
    for i in 0..n {
        ds.heartbeat("w2", &event(n + i, 0), 0.0)
            .wait()
            .expect("heartbeat");
    }
    let distinct = n as f64 / t.elapsed().as_secs_f64();

    let mut hb = event(3 * n, 0);
    let t = Instant::now();
    for _ in 0..n {
        hb.timestamp += Duration::seconds(1);
        ds.heartbeat("w2", &hb, 2.0).wait().expect("heartbeat");
    }
    let merging = n as f64 / t.elapsed().as_secs_f64();

    let end = Utc
        .timestamp_opt(YEAR_START + EVENTS * SPACING_S, 0)
        .unwrap();
    let limit100 = time(200, || {
        ds.get_events("w", None, None, Some(100))
            .wait()
            .expect("get")
            .to_json();
    });
    let day = time(50, || {
        ds.get_events("w", Some(end - Duration::days(1)), Some(end), None)
            .wait()
            .expect("get")
            .to_json();
    });
    let month = time(20, || {
        ds.get_events("w", Some(end - Duration::days(30)), Some(end), None)
            .wait()
            .expect("get")
            .to_json();
    });
    let month_parsed = time(20, || {
        ds.get_events("w", Some(end - Duration::days(30)), Some(end), None)
            .wait()
            .expect("get")
            .into_events();
    });
    let count_all = time(200, || {
        ds.get_event_count("w", None, None).wait().expect("count");
    });
    let count_month = time(50, || {
        ds.get_event_count("w", Some(end - Duration::days(30)), Some(end))
            .wait()
            .expect("count");
    });

    println!("aw-datastore benchmark: one bucket, {EVENTS} events over a year, real SQLite file");
    println!("| metric | value |");
    println!("|---|---|");
    println!("| bulk insert (10k per request) | {bulk:.0} events/s |");
    println!("| single-event inserts | {single:.0} /s |");
    println!("| heartbeats, distinct data | {distinct:.0} /s |");
    println!("| heartbeats, merging | {merging:.0} /s |");
    println!("| limit=100 fetch (JSON) | {limit100:.3} ms |");
    println!("| last day fetch (JSON) | {day:.3} ms |");
    println!("| last 30 days fetch (JSON) | {month:.3} ms |");
    println!("| last 30 days fetch (parsed Events) | {month_parsed:.3} ms |");
    println!("| count, all | {count_all:.4} ms |");
    println!("| count, last 30 days | {count_month:.3} ms |");
}
