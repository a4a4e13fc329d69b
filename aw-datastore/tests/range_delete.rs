//! Deleting a time range (`Datastore::delete_range`): what lies inside goes, what crosses
//! an edge is cut at it, a dry run changes nothing, and the next heartbeat never extends a
//! cut event.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use common::*;
use serde_json::json;

/// `(start s, end s, data n)` of every event of `b`, oldest first.
fn spans(s: &TempStore, b: &str) -> Vec<(i64, i64, i64)> {
    let mut events: Vec<(i64, i64, i64)> =
        s.ds.get_events(b, None, None, None)
            .wait()
            .unwrap()
            .0
            .iter()
            .map(|e| {
                (
                    e.start / 1_000_000_000 - t(0).timestamp(),
                    e.end / 1_000_000_000 - t(0).timestamp(),
                    serde_json::from_str::<serde_json::Value>(&e.data).unwrap()["n"]
                        .as_i64()
                        .unwrap(),
                )
            })
            .collect();
    events.sort();
    events
}

/// The one bucket of these tests.
fn b() -> [String; 1] {
    ["b".to_string()]
}

fn store_with(events: &[(i64, f64, i64)]) -> TempStore {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let events: Vec<_> = events
        .iter()
        .map(|&(start, dur, n)| ev(start, dur, json!({ "n": n })))
        .collect();
    s.ds.insert_events("b", &events).wait().unwrap();
    s
}

#[test]
fn inside_is_deleted_and_edges_are_cut() {
    // Range [100, 200).
    let s = store_with(&[
        (10, 20.0, 1),   // before: kept
        (90, 20.0, 2),   // across the left edge: [90, 100)
        (100, 0.0, 3),   // zero-length at the start: inside
        (120, 30.0, 4),  // inside
        (190, 30.0, 5),  // across the right edge: [200, 220)
        (200, 0.0, 6),   // zero-length at the end: outside
        (50, 7200.0, 7), // across both edges, longer than an hour: two events
        (250, 10.0, 8),  // after: kept
    ]);
    let preview =
        s.ds.delete_range(&b(), t(100), t(200), true, None)
            .wait()
            .unwrap();
    assert_eq!((preview.deleted, preview.cut), (2, 3));
    assert_eq!(preview.seconds, 10.0 + 0.0 + 30.0 + 10.0 + 100.0);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 8);

    let done =
        s.ds.delete_range(&b(), t(100), t(200), false, None)
            .wait()
            .unwrap();
    assert_eq!(done, preview);
    assert_eq!(
        spans(&s, "b"),
        vec![
            (10, 30, 1),
            (50, 100, 7),
            (90, 100, 2),
            (200, 200, 6),
            (200, 220, 5),
            (200, 7250, 7),
            (250, 260, 8)
        ]
    );
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 7);
    // Nothing left to delete in the range.
    let again =
        s.ds.delete_range(&b(), t(100), t(200), false, None)
            .wait()
            .unwrap();
    assert_eq!((again.deleted, again.cut), (0, 0));
}

#[test]
fn the_next_heartbeat_never_extends_a_cut_event() {
    let s = store_with(&[(0, 100.0, 1)]);
    s.ds.delete_range(&b(), t(50), t(60), false, None)
        .wait()
        .unwrap();
    // Same data, right at the end of the part after the range: a new event, not a merge.
    s.ds.heartbeat("b", &ev(100, 0.0, json!({"n": 1})), 30.0)
        .wait()
        .unwrap();
    assert_eq!(
        spans(&s, "b"),
        vec![(0, 50, 1), (60, 100, 1), (100, 100, 1)]
    );
    // That new event merges as usual.
    s.ds.heartbeat("b", &ev(110, 0.0, json!({"n": 1})), 30.0)
        .wait()
        .unwrap();
    assert_eq!(
        spans(&s, "b"),
        vec![(0, 50, 1), (60, 100, 1), (100, 110, 1)]
    );
}

#[test]
fn an_empty_range_or_an_unknown_bucket_is_an_error() {
    let s = store_with(&[(0, 10.0, 1)]);
    assert!(s
        .ds
        .delete_range(&b(), t(5), t(5), false, None)
        .wait()
        .is_err());
    assert!(s
        .ds
        .delete_range(&b(), t(6), t(5), true, None)
        .wait()
        .is_err());
    assert!(matches!(
        s.ds.delete_range(&["nope".to_string()], t(0), t(5), false, None)
            .wait(),
        Err(aw_datastore::DatastoreError::NoSuchBucket(_))
    ));
}

#[test]
fn a_deletion_survives_a_reopen() {
    let mut s = store_with(&[(0, 10.0, 1), (20, 10.0, 2)]);
    s.ds.delete_range(&b(), t(5), t(25), false, None)
        .wait()
        .unwrap();
    s.reopen();
    assert_eq!(spans(&s, "b"), vec![(0, 5, 1), (25, 30, 2)]);
}

#[test]
fn several_buckets_are_deleted_from_all_or_not_at_all() {
    let s = store_with(&[(0, 10.0, 1)]);
    s.ds.create_bucket(&bucket("c")).wait().unwrap();
    s.ds.insert_events("c", &[ev(2, 2.0, json!({"n": 2}))])
        .wait()
        .unwrap();
    // A missing bucket after the two: nothing of the first two is deleted.
    let with_missing = ["b".to_string(), "c".to_string(), "nope".to_string()];
    assert!(s
        .ds
        .delete_range(&with_missing, t(0), t(100), false, None)
        .wait()
        .is_err());
    assert_eq!(spans(&s, "b"), vec![(0, 10, 1)]);
    assert_eq!(spans(&s, "c"), vec![(2, 4, 2)]);
    let both =
        s.ds.delete_range(&with_missing[..2], t(0), t(100), false, None)
            .wait()
            .unwrap();
    assert_eq!((both.deleted, both.cut, both.seconds), (2, 0, 12.0));
    assert!(spans(&s, "b").is_empty() && spans(&s, "c").is_empty());
}

#[test]
fn a_range_of_many_steps_deletes_and_cuts_exactly_what_lies_in_it() {
    // Two buckets of 6,000 overlapping events each (15 s long, every 10 s), plus one event
    // across both edges, and ties on the start: far more rows than a step takes, so the
    // walk continues after its last row many times. What goes and what is cut is worked
    // out here event by event.
    let (lo, hi) = (5_003, 52_007);
    let mut events: Vec<(i64, f64, i64)> = (0..6_000).map(|i| (i * 10, 15.0, i)).collect();
    events.extend((0..600).map(|i| (i * 100, 3.0, 10_000 + i)));
    events.push((1_000, 60_000.0, 99_999));
    let s = store_with(&events);
    s.ds.create_bucket(&bucket("c")).wait().unwrap();
    let rows: Vec<_> = events
        .iter()
        .map(|&(start, dur, n)| ev(start, dur, json!({ "n": n })))
        .collect();
    s.ds.insert_events("c", &rows).wait().unwrap();

    let mut expected = Vec::new();
    let (mut deleted, mut cut) = (0, 0);
    for &(start, dur, n) in &events {
        let end = start + dur as i64;
        let touches = start < hi && (end > lo || start >= lo);
        if !touches {
            expected.push((start, end, n));
        } else if start >= lo && end <= hi {
            deleted += 1;
        } else {
            cut += 1;
            if start < lo {
                expected.push((start, lo, n));
            }
            if end > hi {
                expected.push((hi, end, n));
            }
        }
    }
    expected.sort();
    let both = ["b".to_string(), "c".to_string()];
    let preview =
        s.ds.delete_range(&both, t(lo), t(hi), true, None)
            .wait()
            .unwrap();
    assert_eq!(
        (preview.deleted, preview.cut, preview.buckets),
        (2 * deleted, 2 * cut, 2)
    );
    let done =
        s.ds.delete_range(&both, t(lo), t(hi), false, Some(2 * (deleted + cut)))
            .wait()
            .unwrap();
    assert_eq!(done, preview);
    assert_eq!(spans(&s, "b"), expected);
    assert_eq!(spans(&s, "c"), expected);
    assert_eq!(
        s.ds.get_event_count("b", None, None).wait().unwrap(),
        expected.len() as u64
    );
}
