//! Renaming and merging buckets, and replacing one event (`Datastore::rename_bucket`,
//! `merge_buckets`, `replace_event`).
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

fn with_events(s: &TempStore, id: &str, events: &[(i64, f64, i64)]) {
    s.ds.create_bucket(&bucket(id)).wait().unwrap();
    let events: Vec<_> = events
        .iter()
        .map(|&(t, d, n)| ev(t, d, json!({ "n": n })))
        .collect();
    s.ds.insert_events(id, &events).wait().unwrap();
}

#[test]
fn a_renamed_bucket_keeps_its_events_and_a_taken_id_is_refused() {
    let mut s = TempStore::new();
    with_events(&s, "old", &[(0, 1.0, 1), (10, 1.0, 2)]);
    with_events(&s, "other", &[(0, 1.0, 3)]);
    assert!(matches!(
        s.ds.rename_bucket("old", Some("other"), None).wait(),
        Err(DatastoreError::BucketAlreadyExists(_))
    ));
    s.ds.rename_bucket("old", Some("new"), Some("host2"))
        .wait()
        .unwrap();
    assert!(matches!(
        s.ds.get_bucket("old").wait(),
        Err(DatastoreError::NoSuchBucket(_))
    ));
    let b = s.ds.get_bucket("new").wait().unwrap();
    assert_eq!(b.hostname, "host2");
    assert_eq!(s.ds.get_event_count("new", None, None).wait().unwrap(), 2);
    // A heartbeat to the new id lands in the same bucket; the old id is gone.
    s.ds.heartbeat("new", &ev(20, 0.0, json!({"n": 2})), 0.0)
        .wait()
        .unwrap();
    s.reopen();
    assert_eq!(s.ds.get_event_count("new", None, None).wait().unwrap(), 3);
    assert_eq!(s.ds.get_bucket("new").wait().unwrap().hostname, "host2");
}

#[test]
fn a_merge_moves_events_once_and_refuses_other_types() {
    let mut s = TempStore::new();
    with_events(&s, "a", &[(0, 1.0, 1), (10, 1.0, 2)]);
    // The same event as one of a's, and one of its own.
    with_events(&s, "b", &[(10, 1.0, 2), (20, 1.0, 3)]);
    let merged = s.ds.merge_buckets("b", "a").wait().unwrap();
    assert_eq!((merged.moved, merged.duplicates), (1, 1));
    assert_eq!(s.ds.get_event_count("a", None, None).wait().unwrap(), 3);
    assert!(matches!(
        s.ds.get_bucket("b").wait(),
        Err(DatastoreError::NoSuchBucket(_))
    ));
    let mut other = bucket("c");
    other._type = "afkstatus".into();
    s.ds.create_bucket(&other).wait().unwrap();
    assert!(matches!(
        s.ds.merge_buckets("c", "a").wait(),
        Err(DatastoreError::InvalidEvent(_))
    ));
    assert!(s.ds.merge_buckets("a", "a").wait().is_err());
    s.reopen();
    assert_eq!(s.ds.get_event_count("a", None, None).wait().unwrap(), 3);
}

#[test]
fn replacing_an_event_never_inserts_one() {
    let s = TempStore::new();
    with_events(&s, "a", &[(0, 1.0, 1)]);
    let id = s.ds.get_events("a", None, None, None).wait().unwrap().0[0].id;
    let stored =
        s.ds.replace_event("a", id, &ev(5, 3.0, json!({"n": 9})))
            .wait()
            .unwrap();
    assert_eq!(stored.id, id);
    let rows = s.ds.get_events("a", None, None, None).wait().unwrap();
    assert_eq!(rows.0.len(), 1);
    assert_eq!(rows.0[0].data, r#"{"n":9}"#);
    assert!(matches!(
        s.ds.replace_event("a", id + 100, &ev(5, 3.0, json!({})))
            .wait(),
        Err(DatastoreError::NoSuchEvent(..))
    ));
    assert_eq!(s.ds.get_event_count("a", None, None).wait().unwrap(), 1);
}
