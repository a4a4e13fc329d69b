//! Heartbeat merging: the rule, its boundaries, and the cache's invalidation.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use chrono::Duration;
use common::*;
use serde_json::json;

fn hb(
    s: &TempStore,
    start: i64,
    dur: f64,
    d: serde_json::Value,
    pulse: f64,
) -> aw_datastore::RawEvent {
    s.ds.heartbeat("b", &ev(start, dur, d), pulse)
        .wait()
        .unwrap()
}

#[test]
fn merges_within_pulsetime_and_keeps_id() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let first = hb(&s, 0, 0.0, json!({"a": 1}), 10.0);
    let second = hb(&s, 1, 0.0, json!({"a": 1}), 10.0);
    assert_eq!(second.id, first.id);
    assert_eq!(second.end - second.start, 1_000_000_000);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}

#[test]
fn boundary_is_inclusive_to_the_nanosecond() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    hb(&s, 0, 0.0, json!({"a": 1}), 10.0);
    // Exactly last.end + pulsetime merges.
    let at = hb(&s, 10, 0.0, json!({"a": 1}), 10.0);
    assert_eq!(at.end - at.start, 10_000_000_000);
    // One nanosecond later does not.
    let mut late = ev(20, 0.0, json!({"a": 1}));
    late.timestamp += Duration::nanoseconds(1);
    let late = s.ds.heartbeat("b", &late, 10.0).wait().unwrap();
    assert_ne!(late.id, at.id);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 2);
}

#[test]
fn different_data_or_older_heartbeat_starts_a_new_event() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let a = hb(&s, 10, 0.0, json!({"a": 1}), 10.0);
    let b = hb(&s, 11, 0.0, json!({"a": 2}), 10.0);
    assert_ne!(a.id, b.id);
    // Older than the last event: never merges, and becomes the new "last".
    let old = hb(&s, 5, 0.0, json!({"a": 2}), 10.0);
    assert_ne!(old.id, b.id);
    let next = hb(&s, 6, 0.0, json!({"a": 2}), 10.0);
    assert_eq!(next.id, old.id);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 3);
}

#[test]
fn merged_end_is_the_later_end() {
    // The reference's example: event 01:01:01 dur 1; heartbeat 01:01:02 dur 1, pulsetime 2
    // → one event of 2 s.
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    s.ds.insert_events("b", &[ev(0, 1.0, json!({}))])
        .wait()
        .unwrap();
    let m = hb(&s, 1, 1.0, json!({}), 2.0);
    assert_eq!(m.end - m.start, 2_000_000_000);
    // A heartbeat inside the event does not shorten it.
    let m = hb(&s, 0, 0.5, json!({}), 2.0);
    assert_eq!(m.end - m.start, 2_000_000_000);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}

#[test]
fn queued_client_heartbeats_with_durations_merge() {
    // What aw-client's queue sends: pre-merged heartbeats of ~commit_interval duration.
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    hb(&s, 0, 5.0, json!({"app": "x"}), 2.0);
    hb(&s, 5, 5.0, json!({"app": "x"}), 2.0);
    let last = hb(&s, 10, 5.0, json!({"app": "x"}), 2.0);
    assert_eq!(last.end - last.start, 15_000_000_000);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}

#[test]
fn read_your_writes_after_merge() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    for i in 0..10 {
        hb(&s, i, 0.0, json!({"a": 1}), 2.0);
    }
    let got =
        s.ds.get_events("b", None, None, None)
            .wait()
            .unwrap()
            .into_events();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].duration, Duration::seconds(9));
}

#[test]
fn cache_survives_delete_and_recreate() {
    // The reference answered 500 here (stale cache).
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    hb(&s, 0, 0.0, json!({"a": 1}), 10.0);
    s.ds.delete_bucket("b").wait().unwrap();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let e = hb(&s, 1, 0.0, json!({"a": 1}), 10.0);
    assert_eq!(e.end - e.start, 0);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}

#[test]
fn cache_survives_deleting_the_last_event() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let first = hb(&s, 0, 0.0, json!({"a": 1}), 10.0);
    s.ds.delete_events_by_id("b", vec![first.id])
        .wait()
        .unwrap();
    let e = hb(&s, 1, 0.0, json!({"a": 1}), 10.0);
    assert_ne!(e.id, first.id);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}

#[test]
fn deleting_the_last_event_makes_the_one_before_it_last() {
    // Fails if deleting an event leaves it in the last-heartbeat cache: the heartbeat would
    // then compare with the deleted {"a": 2} and store a new event instead of merging.
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let a = hb(&s, 0, 0.0, json!({"a": 1}), 30.0);
    let b = hb(&s, 20, 0.0, json!({"a": 2}), 30.0);
    s.ds.delete_events_by_id("b", vec![b.id]).wait().unwrap();
    let e = hb(&s, 21, 0.0, json!({"a": 1}), 30.0);
    assert_eq!(e.id, a.id);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}

#[test]
fn merges_into_a_row_another_server_wrote_in_another_form() {
    // Another server may have stored the same data with other key order and spacing.
    let mut s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    s.ds.close().unwrap();
    let start = 1_600_000_000_000_000_000i64;
    let id: i64 = {
        let conn = rusqlite::Connection::open(s.path()).unwrap();
        conn.execute(
            "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (1, ?1, ?2, ?3)",
            rusqlite::params![
                start,
                start + 5_000_000_000,
                r#"{"title": "x", "app": "a", "n": 1.5}"#
            ],
        )
        .unwrap();
        conn.last_insert_rowid()
    };
    s.ds = aw_datastore::Datastore::open(&s.path()).unwrap();
    let e = hb(&s, 6, 0.0, json!({"app": "a", "n": 1.5, "title": "x"}), 2.0);
    assert_eq!(e.id, id);
    assert_eq!(e.end - e.start, 6_000_000_000);
    // A different value does not merge.
    let other = hb(&s, 7, 0.0, json!({"app": "a", "n": 2.5, "title": "x"}), 2.0);
    assert_ne!(other.id, id);
}

#[test]
fn cache_reset_by_insert() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    hb(&s, 0, 0.0, json!({"a": 1}), 10.0);
    // An inserted newer event becomes the last event the next heartbeat sees.
    let ins =
        s.ds.insert_events("b", &[ev(2, 1.0, json!({"a": 2}))])
            .wait()
            .unwrap();
    let e = hb(&s, 3, 0.0, json!({"a": 2}), 10.0);
    assert_eq!(e.id, ins[0].id);
}

#[test]
fn heartbeat_to_missing_bucket_and_bad_pulsetime() {
    let s = TempStore::new();
    assert!(matches!(
        s.ds.heartbeat("nope", &ev(0, 0.0, json!({})), 1.0).wait(),
        Err(aw_datastore::DatastoreError::NoSuchBucket(_))
    ));
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    assert!(s
        .ds
        .heartbeat("b", &ev(0, 0.0, json!({})), f64::NAN)
        .wait()
        .is_err());
}

#[test]
fn merge_persists_across_restart() {
    let mut s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    for i in 0..5 {
        hb(&s, i, 0.0, json!({"a": 1}), 2.0);
    }
    s.reopen();
    // After a restart the last event comes from the database and still merges.
    let e = hb(&s, 5, 0.0, json!({"a": 1}), 2.0);
    assert_eq!(e.end - e.start, 5_000_000_000);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}
