//! Event reads and writes: ordering, limits, ranges, clipping, counts, ids.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_datastore::DatastoreError;
use common::*;
use serde_json::json;

#[test]
fn insert_returns_ids_and_reads_newest_first() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let stored =
        s.ds.insert_events(
            "b",
            &[ev(0, 1.0, json!({"a": 1})), ev(10, 1.0, json!({"a": 2}))],
        )
        .wait()
        .unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored[0].id < stored[1].id);
    let events =
        s.ds.get_events("b", None, None, None)
            .wait()
            .unwrap()
            .into_events();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].timestamp, t(10));
    assert_eq!(events[1].timestamp, t(0));
}

#[test]
fn equal_starttimes_order_by_end_then_id() {
    // The reference's observed order: durations 5,1,3,1 with ascending ids → 2nd, 4th, 3rd, 1st.
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let stored =
        s.ds.insert_events(
            "b",
            &[
                ev(0, 5.0, json!({})),
                ev(0, 1.0, json!({})),
                ev(0, 3.0, json!({})),
                ev(0, 1.0, json!({})),
            ],
        )
        .wait()
        .unwrap();
    let ids: Vec<i64> = stored.iter().map(|e| e.id).collect();
    let got: Vec<i64> =
        s.ds.get_events("b", None, None, None)
            .wait()
            .unwrap()
            .0
            .iter()
            .map(|e| e.id)
            .collect();
    assert_eq!(got, vec![ids[1], ids[3], ids[2], ids[0]]);
}

#[test]
fn limit_keeps_the_newest() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let events: Vec<_> = (0..50).map(|i| ev(i * 10, 1.0, json!({"i": i}))).collect();
    s.ds.insert_events("b", &events).wait().unwrap();
    let got =
        s.ds.get_events("b", None, None, Some(3))
            .wait()
            .unwrap()
            .into_events();
    let starts: Vec<_> = got.iter().map(|e| e.timestamp).collect();
    assert_eq!(starts, vec![t(490), t(480), t(470)]);
    assert!(s
        .ds
        .get_events("b", None, None, Some(0))
        .wait()
        .unwrap()
        .is_empty());
}

#[test]
fn range_overlap_is_inclusive_and_clipped() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    // [0, 10), [20, 30), [40, 100)
    s.ds.insert_events(
        "b",
        &[
            ev(0, 10.0, json!({"n": 0})),
            ev(20, 10.0, json!({"n": 1})),
            ev(40, 60.0, json!({"n": 2})),
        ],
    )
    .wait()
    .unwrap();
    // Touching at both ends: the event ending exactly at start, the one starting exactly at end.
    let got =
        s.ds.get_events("b", Some(t(10)), Some(t(40)), None)
            .wait()
            .unwrap()
            .into_events();
    assert_eq!(got.len(), 3);
    assert_eq!(
        (got[0].timestamp, got[0].duration.num_seconds()),
        (t(40), 0)
    );
    assert_eq!(
        (got[1].timestamp, got[1].duration.num_seconds()),
        (t(20), 10)
    );
    assert_eq!(
        (got[2].timestamp, got[2].duration.num_seconds()),
        (t(10), 0)
    );
    // An event longer than the window is clipped on both sides.
    let got =
        s.ds.get_events("b", Some(t(50)), Some(t(60)), None)
            .wait()
            .unwrap()
            .into_events();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].timestamp, got[0].duration.num_seconds()),
        (t(50), 10)
    );
    // start > end is empty, not an error.
    assert!(s
        .ds
        .get_events("b", Some(t(60)), Some(t(50)), None)
        .wait()
        .unwrap()
        .is_empty());
}

#[test]
fn long_event_found_far_before_the_range() {
    // An event longer than an hour that started long before the range is found through the
    // long-events index, not by walking back to its start.
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    s.ds.insert_events("b", &[ev(0, 100_000.0, json!({"long": true}))])
        .wait()
        .unwrap();
    let short: Vec<_> = (0..100)
        .map(|i| ev(1000 + i * 10, 1.0, json!({})))
        .collect();
    s.ds.insert_events("b", &short).wait().unwrap();
    let got =
        s.ds.get_events("b", Some(t(90_000)), Some(t(90_010)), None)
            .wait()
            .unwrap()
            .into_events();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].data["long"], json!(true));
    assert_eq!(
        s.ds.get_event_count("b", Some(t(90_000)), Some(t(90_010)))
            .wait()
            .unwrap(),
        1
    );
}

#[test]
fn events_before_1970_are_returned() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    s.ds.insert_events("b", &[ev(-1_700_000_000, 1.0, json!({}))])
        .wait()
        .unwrap();
    assert_eq!(
        s.ds.get_events("b", None, None, None).wait().unwrap().len(),
        1
    );
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}

#[test]
fn count_honours_range_and_tracks_writes() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let events: Vec<_> = (0..20).map(|i| ev(i * 10, 5.0, json!({}))).collect();
    let stored = s.ds.insert_events("b", &events).wait().unwrap();
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 20);
    assert_eq!(
        s.ds.get_event_count("b", Some(t(50)), Some(t(99)))
            .wait()
            .unwrap(),
        5
    );
    assert_eq!(
        s.ds.get_event_count("b", Some(t(99)), Some(t(50)))
            .wait()
            .unwrap(),
        0
    );
    s.ds.delete_events_by_id("b", vec![stored[0].id, stored[1].id, 999_999])
        .wait()
        .unwrap();
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 18);
    let mut s = s;
    s.reopen();
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 18);
}

#[test]
fn get_one_event_and_missing_ones() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    s.ds.create_bucket(&bucket("other")).wait().unwrap();
    let stored =
        s.ds.insert_events("b", &[ev(0, 1.5, json!({"x": "y"}))])
            .wait()
            .unwrap();
    let one = s.ds.get_event("b", stored[0].id).wait().unwrap();
    assert_eq!(one, stored[0]);
    assert!(matches!(
        s.ds.get_event("b", 12345).wait(),
        Err(DatastoreError::NoSuchEvent(_, 12345))
    ));
    assert!(matches!(
        s.ds.get_event("other", stored[0].id).wait(),
        Err(DatastoreError::NoSuchEvent(..))
    ));
    assert!(matches!(
        s.ds.get_event("nope", 1).wait(),
        Err(DatastoreError::NoSuchBucket(_))
    ));
}

#[test]
fn replace_by_id_stays_in_its_bucket() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("a")).wait().unwrap();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let a =
        s.ds.insert_events("a", &[ev(0, 1.0, json!({"v": 1}))])
            .wait()
            .unwrap();
    // Replacing within the bucket keeps the id and the count.
    let mut replacement = ev(5, 2.0, json!({"v": 2}));
    replacement.id = Some(a[0].id);
    let r =
        s.ds.insert_events("a", &[replacement.clone()])
            .wait()
            .unwrap();
    assert_eq!(r[0].id, a[0].id);
    assert_eq!(s.ds.get_event_count("a", None, None).wait().unwrap(), 1);
    assert_eq!(
        s.ds.get_event("a", a[0].id).wait().unwrap().data,
        r#"{"v":2}"#
    );
    // The same id sent to another bucket is refused and changes nothing.
    let err = s.ds.insert_events("b", &[replacement]).wait().unwrap_err();
    assert!(matches!(err, DatastoreError::InvalidEvent(_)), "{err:?}");
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 0);
    assert_eq!(s.ds.get_event_count("a", None, None).wait().unwrap(), 1);
    // An unused id is not used (COMPATIBILITY.md, server #18): the event gets the next fresh id, and so do
    // later events; two events with the same unused id are two new events.
    let mut fresh = ev(9, 1.0, json!({}));
    fresh.id = Some(1000);
    let stored =
        s.ds.insert_events("b", &[fresh.clone(), fresh])
            .wait()
            .unwrap();
    assert_eq!((stored[0].id, stored[1].id), (a[0].id + 1, a[0].id + 2));
    assert_eq!(
        s.ds.insert_events("b", &[ev(10, 1.0, json!({}))])
            .wait()
            .unwrap()[0]
            .id,
        a[0].id + 3
    );
}

#[test]
fn empty_insert_into_missing_bucket_is_empty() {
    let s = TempStore::new();
    assert!(s.ds.insert_events("nope", &[]).wait().unwrap().is_empty());
    assert!(matches!(
        s.ds.insert_events("nope", &[ev(0, 1.0, json!({}))]).wait(),
        Err(DatastoreError::NoSuchBucket(_))
    ));
}

#[test]
fn unstorable_events_are_refused() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let mut e = ev(0, 0.0, json!({}));
    e.duration = chrono::Duration::seconds(9_000_000_000);
    assert!(matches!(
        s.ds.insert_events("b", &[e.clone()]).wait(),
        Err(DatastoreError::InvalidEvent(_))
    ));
    assert!(matches!(
        s.ds.heartbeat("b", &e, 1.0).wait(),
        Err(DatastoreError::InvalidEvent(_))
    ));
    // The worker is healthy afterwards.
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 0);
}

#[test]
fn bucket_metadata_follows_events() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let b = s.ds.get_bucket("b").wait().unwrap();
    assert_eq!((b.metadata.start, b.metadata.end), (None, None));
    assert!(b.created.is_some());
    s.ds.insert_events("b", &[ev(10, 5.0, json!({})), ev(0, 1.0, json!({}))])
        .wait()
        .unwrap();
    let b = s.ds.get_bucket("b").wait().unwrap();
    assert_eq!(
        (b.metadata.start, b.metadata.end),
        (Some(t(0)), Some(t(15)))
    );
    let mut s = s;
    s.reopen();
    let b = s.ds.get_bucket("b").wait().unwrap();
    assert_eq!(
        (b.metadata.start, b.metadata.end),
        (Some(t(0)), Some(t(15)))
    );
}

#[test]
fn bucket_lifecycle() {
    let mut s = TempStore::new();
    let mut b = bucket("b");
    b.data.insert("k".into(), json!("v"));
    s.ds.create_bucket(&b).wait().unwrap();
    assert!(matches!(
        s.ds.create_bucket(&b).wait(),
        Err(DatastoreError::BucketAlreadyExists(_))
    ));
    s.ds.insert_events("b", &[ev(0, 1.0, json!({}))])
        .wait()
        .unwrap();
    s.reopen();
    let got = s.ds.get_bucket("b").wait().unwrap();
    assert_eq!(got.data["k"], json!("v"));
    assert_eq!(got._type, "currentwindow");
    assert_eq!(s.ds.get_buckets().wait().unwrap().len(), 1);
    s.ds.delete_bucket("b").wait().unwrap();
    assert!(matches!(
        s.ds.get_bucket("b").wait(),
        Err(DatastoreError::NoSuchBucket(_))
    ));
    assert!(matches!(
        s.ds.delete_bucket("b").wait(),
        Err(DatastoreError::NoSuchBucket(_))
    ));
    s.reopen();
    assert!(s.ds.get_buckets().wait().unwrap().is_empty());
}

#[test]
fn create_with_events_and_import_dedup() {
    let s = TempStore::new();
    let mut b = bucket("b");
    b.events = Some(vec![
        ev(0, 1.0, json!({"a": 1})),
        ev(5, 1.0, json!({"a": 2})),
    ]);
    s.ds.create_bucket(&b).wait().unwrap();
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 2);
    // Importing the same events plus one new: only the new one is added; twice: nothing.
    let mut again = b.clone();
    again.events = Some(vec![
        ev(0, 1.0, json!({"a": 1})),
        ev(5, 1.0, json!({"a": 2})),
        ev(9, 1.0, json!({"a": 3})),
    ]);
    s.ds.import_buckets(vec![again.clone()]).wait().unwrap();
    s.ds.import_buckets(vec![again]).wait().unwrap();
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 3);
    // A new bucket from an import is created with all its events.
    let mut c = bucket("c");
    c.events = Some(vec![ev(0, 1.0, json!({}))]);
    s.ds.import_buckets(vec![c]).wait().unwrap();
    assert_eq!(s.ds.get_event_count("c", None, None).wait().unwrap(), 1);
}

#[test]
fn json_output_is_the_api_format() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    s.ds.insert_events("b", &[ev(0, 1.5, json!({"b": 1, "a": "x"}))])
        .wait()
        .unwrap();
    let json =
        s.ds.get_events("b", None, None, None)
            .wait()
            .unwrap()
            .to_json();
    let id = s.ds.get_events("b", None, None, None).wait().unwrap().0[0].id;
    assert_eq!(
        json,
        format!(
            r#"[{{"id":{id},"timestamp":"2020-09-13T12:26:40Z","duration":1.5,"data":{{"a":"x","b":1}}}}]"#
        )
    );
}

/// A file whose id sequence was pushed to the 64-bit limit by another server (the reference
/// stores any unused id it is given) is repaired at open: the event keeps its content under
/// a new id, and inserts work again.
#[test]
fn an_exhausted_id_sequence_is_repaired_at_open() {
    let mut s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    s.ds.insert_events("b", &[ev(0, 1.0, json!({"n": 1}))])
        .wait()
        .unwrap();
    s.ds.close().unwrap();
    {
        let conn = rusqlite::Connection::open(s.path()).unwrap();
        conn.execute_batch(
            "INSERT INTO events (id, bucketrow, starttime, endtime, data)
             VALUES (9223372036854775807, 1, 5, 6, '{\"n\":2}');",
        )
        .unwrap();
        // Exactly the reference's state: the next automatic id cannot be had.
        let err = conn
            .execute_batch(
                "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (1, 7, 8, '{}')",
            )
            .unwrap_err();
        assert!(err.to_string().contains("full"), "{err}");
    }
    s.ds = aw_datastore::Datastore::open(&s.path()).unwrap();
    let stored =
        s.ds.insert_events("b", &[ev(10, 1.0, json!({"n": 3}))])
            .wait()
            .unwrap();
    assert!(stored[0].id < 10, "{:?}", stored[0].id);
    let all = s.ds.get_events("b", None, None, None).wait().unwrap();
    let mut seen: Vec<(i64, String)> = all.0.iter().map(|e| (e.id, e.data.clone())).collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            (1, r#"{"n":1}"#.to_string()),
            (2, r#"{"n":2}"#.to_string()),
            (3, r#"{"n":3}"#.to_string())
        ]
    );
    s.reopen();
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 3);
}

/// Range reads and counts find every overlapping event however long, in the right order,
/// whatever the mix of short and long events (the long ones are read through their own
/// index): every answer equals a brute-force filter of all events.
#[test]
fn reads_and_counts_equal_a_brute_force_filter_with_long_events() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    // A deterministic mix: short events every few minutes, some hours long, a few days
    // long, one of 300 days, a zero-length one and ties on start.
    let mut seed: u64 = 0x5EED;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut events = Vec::new();
    for i in 0..3000i64 {
        let start = i * 300 + next(200) as i64;
        let dur = match next(100) {
            0..=89 => next(600) as f64,
            90..=97 => 3600.0 + next(20_000) as f64,
            _ => 86_400.0 * (1 + next(5)) as f64,
        };
        events.push(ev(start, dur, json!({"i": i})));
    }
    events.push(ev(-300 * 86_400, 300.0 * 86_400.0, json!({"long": 300})));
    events.push(ev(4500, 0.0, json!({"zero": true})));
    events.push(ev(4500, 3600.0, json!({"exactly": "an hour"})));
    events.push(ev(4500, 3601.0, json!({"just": "over"})));
    s.ds.insert_events("b", &events).wait().unwrap();
    let all = s.ds.get_events("b", None, None, None).wait().unwrap().0;
    assert_eq!(all.len(), events.len());
    let ns = |secs: i64| t(secs).timestamp_nanos_opt().unwrap();
    for (lo, hi) in [
        (0, 900_000),
        (4_500, 4_500),
        (450_000, 460_000),
        (899_000, 2_000_000),
        (-400 * 86_400, -200 * 86_400),
        (100_000, 100_001),
        (500_000, 400_000),
    ] {
        let (lo_ns, hi_ns) = (ns(lo), ns(hi));
        let mut expected: Vec<_> = all
            .iter()
            .filter(|e| e.start <= hi_ns && e.end >= lo_ns)
            .cloned()
            .collect();
        expected.sort_by_key(|e| (std::cmp::Reverse(e.start), e.end, e.id));
        if lo > hi {
            expected.clear();
        }
        let count =
            s.ds.get_event_count("b", Some(t(lo)), Some(t(hi)))
                .wait()
                .unwrap();
        assert_eq!(count as usize, expected.len(), "count {lo}..{hi}");
        for limit in [None, Some(1), Some(7), Some(expected.len() as u64)] {
            let got =
                s.ds.get_events("b", Some(t(lo)), Some(t(hi)), limit)
                    .wait()
                    .unwrap()
                    .0;
            let want_ids: Vec<i64> = expected
                .iter()
                .take(limit.map_or(usize::MAX, |l| l as usize))
                .map(|e| e.id)
                .collect();
            let got_ids: Vec<i64> = got.iter().map(|e| e.id).collect();
            assert_eq!(got_ids, want_ids, "{lo}..{hi} limit {limit:?}");
        }
    }
    // The bucket's span and count are right after a restart too (startup reads the span
    // from the indexes, and counts when first asked).
    let mut s = s;
    s.reopen();
    let b = s.ds.get_bucket("b").wait().unwrap();
    let first = all.iter().map(|e| e.start).min().unwrap();
    let last = all.iter().map(|e| e.end).max().unwrap();
    assert_eq!(
        (b.metadata.start, b.metadata.end),
        (
            Some(aw_models::timestamp::from_ns(first)),
            Some(aw_models::timestamp::from_ns(last))
        )
    );
    assert_eq!(
        s.ds.get_event_count("b", None, None).wait().unwrap() as usize,
        all.len()
    );
}
