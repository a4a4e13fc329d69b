//! The single worker is not monopolised: long reads and imports run in steps, and small
//! requests are answered between them.

mod common;

use common::*;
use serde_json::json;
use std::time::Instant;

fn big_bucket(s: &TempStore, n: i64) {
    s.ds.create_bucket(&bucket("big")).wait().unwrap();
    let events: Vec<_> = (0..n)
        .map(|i| ev(i * 10, 9.0, json!({"i": i, "pad": "x".repeat(40)})))
        .collect();
    s.ds.insert_events("big", &events).wait().unwrap();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
}

#[test]
fn heartbeat_is_answered_during_a_long_read() {
    let s = TempStore::new();
    big_bucket(&s, 200_000);
    let reader = s.ds.clone();
    let read = std::thread::spawn(move || {
        let rows = reader.get_events("big", None, None, None).wait().unwrap();
        (Instant::now(), rows)
    });
    // Give the read a moment to start, then ask for something small.
    std::thread::sleep(std::time::Duration::from_millis(5));
    s.ds.heartbeat("b", &ev(0, 0.0, json!({"a": 1})), 1.0)
        .wait()
        .unwrap();
    let heartbeat_done = Instant::now();
    let (read_done, rows) = read.join().unwrap();
    assert!(
        heartbeat_done < read_done,
        "the heartbeat waited for the whole read"
    );
    assert_eq!(rows.len(), 200_000);
    // Still newest first and complete across chunk boundaries.
    assert!(rows.0.windows(2).all(|w| w[0].start > w[1].start));
}

#[test]
fn reads_are_answered_during_a_large_import() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let mut doc = bucket("imported");
    doc.events = Some((0..100_000).map(|i| ev(i, 1.0, json!({"i": i}))).collect());
    let importer = s.ds.clone();
    let import = std::thread::spawn(move || {
        importer.import_buckets(vec![doc]).wait().unwrap();
        Instant::now()
    });
    // Wait until the worker has begun the import (it creates the bucket first).
    while s.ds.get_bucket("imported").wait().is_err() {
        std::thread::yield_now();
    }
    // A request the worker itself must answer (an unranged count would come from the
    // published snapshot and prove nothing about the worker).
    s.ds.get_events("b", None, None, Some(1)).wait().unwrap();
    let small_done = Instant::now();
    let import_done = import.join().unwrap();
    assert!(
        small_done < import_done,
        "the read waited for the whole import"
    );
    assert_eq!(
        s.ds.get_event_count("imported", None, None).wait().unwrap(),
        100_000
    );
}

#[test]
fn reads_are_answered_while_a_reimport_checks_for_duplicates() {
    // Importing into an existing bucket first reads the events it already holds in the
    // imported span; that read must run in steps like any other long read.
    let s = TempStore::new();
    big_bucket(&s, 200_000);
    let events: Vec<_> = (0..200_000)
        .map(|i| ev(i * 10, 9.0, json!({"i": i, "pad": "x".repeat(40)})))
        .collect();
    let rows = aw_datastore::NewEvent::from_events(&events).unwrap();
    let importer = s.ds.clone();
    let import = std::thread::spawn(move || {
        importer
            .import_rows(vec![(bucket("big"), rows)])
            .wait()
            .unwrap();
        Instant::now()
    });
    // Let the import reach the worker and start its duplicate check.
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.ds.get_events("b", None, None, Some(1)).wait().unwrap();
    let small_done = Instant::now();
    let import_done = import.join().unwrap();
    assert!(
        small_done < import_done,
        "the read waited for the whole duplicate check"
    );
    // Every imported event was already there.
    assert_eq!(
        s.ds.get_event_count("big", None, None).wait().unwrap(),
        200_000
    );
}
