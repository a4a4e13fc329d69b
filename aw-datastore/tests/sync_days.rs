//! What sync asks of a store: day digests, a day mirrored with its ids, and a pulled day
//! applied with its record (`Datastore::day_digests`, `mirror_day`, `apply_pulled_day`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_datastore::{day_of, DayDigest, NewEvent, PulledDay, DAY_NS};
use common::*;
use serde_json::json;

const DAY_S: i64 = 86_400;

fn digests(s: &TempStore, bucket: &str) -> Vec<DayDigest> {
    s.ds.day_digests(bucket, i64::MIN / DAY_NS - 1, i64::MAX / DAY_NS, u64::MAX)
        .wait()
        .unwrap()
        .days
}

fn new_event(id: Option<i64>, start_s: i64, title: &str) -> NewEvent {
    NewEvent::from_event(&{
        let mut e = ev(start_s, 10.0, json!({ "title": title }));
        e.id = id;
        e
    })
    .unwrap()
}

#[test]
fn a_digest_per_day_with_events_changes_only_where_an_event_did() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let events: Vec<_> = (0..3)
        .flat_map(|d| (0..4).map(move |i| ev(d * DAY_S + i * 60, 30.0, json!({ "n": i }))))
        .collect();
    let stored = s.ds.insert_events("b", &events).wait().unwrap();
    let before = digests(&s, "b");
    assert_eq!(before.len(), 3);
    assert!(before.iter().all(|d| d.count == 4));
    assert_eq!(before, digests(&s, "b"), "the same data, the same digests");
    // An edit on day 1 changes day 1's digest only.
    let mut edited = events[5].clone();
    edited.data = data(json!({ "n": 99 }));
    s.ds.replace_event("b", stored[5].id, &edited)
        .wait()
        .unwrap();
    let after = digests(&s, "b");
    let changed: Vec<i64> = before
        .iter()
        .zip(&after)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a.day)
        .collect();
    assert_eq!(changed, [day_of(stored[5].start)]);
    // In steps: a bound of events stops after a whole day and says where to go on.
    let first = before[0].day;
    let step = s.ds.day_digests("b", first, first + 10, 1).wait().unwrap();
    assert_eq!(step.days.len(), 1);
    assert_eq!(step.next, Some(first + 1));
}

#[test]
fn a_mirrored_day_keeps_the_given_ids_and_moves_them_from_anywhere() {
    let s = TempStore::new();
    for b in ["b", "c"] {
        s.ds.create_bucket(&bucket(b)).wait().unwrap();
    }
    let day = day_of(t(0).timestamp_nanos_opt().unwrap());
    let done =
        s.ds.mirror_day(
            "b",
            day,
            vec![new_event(Some(1000), 10, "x"), new_event(Some(7), 20, "y")],
        )
        .wait()
        .unwrap();
    assert_eq!((done.written, done.deleted), (2, 0));
    assert_eq!(
        s.ds.get_event("b", 1000).wait().unwrap().start,
        t(10).timestamp_nanos_opt().unwrap()
    );
    // Again, with one changed, one gone and one that lives in another bucket now.
    s.ds.mirror_day("c", day, vec![new_event(Some(5), 30, "z")])
        .wait()
        .unwrap();
    let done =
        s.ds.mirror_day(
            "b",
            day,
            vec![new_event(Some(1000), 10, "x2"), new_event(Some(5), 30, "z")],
        )
        .wait()
        .unwrap();
    assert_eq!((done.written, done.deleted), (2, 1));
    assert!(s.ds.get_event("b", 7).wait().is_err());
    assert!(s.ds.get_event("c", 5).wait().is_err(), "moved, not copied");
    assert_eq!(
        s.ds.get_bucket("b").wait().unwrap().metadata.start,
        Some(t(10))
    );
    let counts: Vec<u64> = ["b", "c"]
        .iter()
        .map(|b| s.ds.get_event_count(b, None, None).wait().unwrap())
        .collect();
    assert_eq!(counts, [2, 0]);
    // An event without an id, or of another day, is refused with nothing written.
    assert!(s
        .ds
        .mirror_day("b", day, vec![new_event(None, 10, "x")])
        .wait()
        .is_err());
    assert!(s
        .ds
        .mirror_day("b", day + 1, vec![new_event(Some(1), 10, "x")])
        .wait()
        .is_err());
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 2);
}

fn pulled(day: i64, digest: &str, events: &[(i64, i64, &str)]) -> PulledDay {
    PulledDay {
        bucket: "copy".into(),
        day,
        digest: digest.into(),
        events: events
            .iter()
            .map(|&(source, start, title)| (source, new_event(None, start, title)))
            .collect(),
        state_key: format!("day.{day}"),
        index_key: "index".into(),
        deleted_key: "deleted".into(),
        source: "src".into(),
        adopt: false,
        pulled_until: None,
    }
}

fn titles(s: &TempStore) -> Vec<String> {
    let mut titles: Vec<String> =
        s.ds.get_events("copy", None, None, None)
            .wait()
            .unwrap()
            .into_events()
            .into_iter()
            .map(|e| e.data["title"].as_str().unwrap().to_string())
            .collect();
    titles.sort();
    titles
}

#[test]
fn a_pulled_day_follows_the_peer_and_a_deletion_here_stands() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("copy")).wait().unwrap();
    let day = day_of(t(0).timestamp_nanos_opt().unwrap());
    let first = pulled(day, "d1", &[(1, 0, "a"), (2, 60, "b"), (3, 120, "c")]);
    let applied = s.ds.apply_pulled_day(first).wait().unwrap();
    assert_eq!(applied.inserted, 3);
    assert_eq!(titles(&s), ["a", "b", "c"]);
    let index = s.ds.get_key_value("index").wait().unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&index).unwrap()[day.to_string()],
        "d1"
    );

    // The user deletes "b" here; the peer edits "b" and "c" and adds "d".
    let b =
        s.ds.get_events("copy", None, None, None)
            .wait()
            .unwrap()
            .into_events()
            .into_iter()
            .find(|e| e.data["title"] == "b")
            .unwrap();
    s.ds.delete_events_by_id("copy", vec![b.id.unwrap()])
        .wait()
        .unwrap();
    let second = pulled(
        day,
        "d2",
        &[(1, 0, "a"), (2, 60, "b2"), (3, 120, "c2"), (4, 180, "d")],
    );
    let applied = s.ds.apply_pulled_day(second).wait().unwrap();
    assert_eq!(
        (
            applied.inserted,
            applied.replaced,
            applied.deleted,
            applied.kept_deleted
        ),
        (1, 1, 0, 1)
    );
    assert_eq!(applied.removed_text, 1, "c's old text left the copy");
    assert_eq!(titles(&s), ["a", "c2", "d"]);

    // The peer deletes "a" and the day is emptied later: nothing of it is left, the
    // record and its index entry go, the deletion here is still remembered.
    let applied =
        s.ds.apply_pulled_day(pulled(day, "d3", &[(3, 120, "c2"), (4, 180, "d")]))
            .wait()
            .unwrap();
    assert_eq!(applied.deleted, 1);
    assert_eq!(titles(&s), ["c2", "d"]);
    s.ds.apply_pulled_day(pulled(day, "", &[])).wait().unwrap();
    assert!(titles(&s).is_empty());
    assert!(s.ds.get_key_value("index").wait().is_err());
    assert!(s.ds.get_key_value(&format!("day.{day}")).wait().is_err());
    assert_eq!(
        s.ds.get_key_value("deleted").wait().unwrap(),
        r#"{"2":"src"}"#
    );
    // Even moved to another day there, "b" stays deleted here.
    let applied =
        s.ds.apply_pulled_day(pulled(day + 1, "d4", &[(2, DAY_S + 5, "b3")]))
            .wait()
            .unwrap();
    assert_eq!((applied.inserted, applied.kept_deleted), (0, 1));
}

#[test]
fn a_day_without_a_record_is_adopted_from_what_an_older_pull_left() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("copy")).wait().unwrap();
    let day = day_of(t(0).timestamp_nanos_opt().unwrap());
    // An older version pulled "a" and "b" (the user then deleted "b"), and "c" is new.
    s.ds.insert_events("copy", &[ev(0, 10.0, json!({"title": "a"}))])
        .wait()
        .unwrap();
    let mut day_read = pulled(day, "d1", &[(1, 0, "a"), (2, 60, "b"), (3, 120, "c")]);
    day_read.pulled_until = Some(t(60).timestamp_nanos_opt().unwrap());
    let applied = s.ds.apply_pulled_day(day_read).wait().unwrap();
    assert_eq!((applied.inserted, applied.kept_deleted), (1, 1));
    assert_eq!(titles(&s), ["a", "c"]);
    assert_eq!(
        s.ds.get_key_value("deleted").wait().unwrap(),
        r#"{"2":"src"}"#
    );
    // Applied again unchanged: nothing moves.
    let mut again = pulled(day, "d1", &[(1, 0, "a"), (2, 60, "b"), (3, 120, "c")]);
    again.pulled_until = Some(t(60).timestamp_nanos_opt().unwrap());
    let applied = s.ds.apply_pulled_day(again).wait().unwrap();
    assert_eq!(
        (applied.inserted, applied.replaced, applied.deleted),
        (0, 0, 0)
    );
    assert_eq!(titles(&s), ["a", "c"]);
    // An event of another day is refused with nothing written.
    assert!(s
        .ds
        .apply_pulled_day(pulled(day, "d9", &[(9, DAY_S * 3, "x")]))
        .wait()
        .is_err());
    assert_eq!(titles(&s), ["a", "c"]);
}
