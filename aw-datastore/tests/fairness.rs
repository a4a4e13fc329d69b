//! The single worker is not monopolised: long reads and imports run in steps, and small
//! requests are answered between them.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use common::*;
use serde_json::json;

fn big_bucket(s: &TempStore, n: i64) {
    s.ds.create_bucket(&bucket("big")).wait().unwrap();
    let events: Vec<_> = (0..n)
        .map(|i| ev(i * 10, 9.0, json!({"i": i, "pad": "x".repeat(40)})))
        .collect();
    s.ds.insert_events("big", &events).wait().unwrap();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
}

/// Holds the worker inside a write to the bucket "gate" until released: a write listener
/// runs on the worker thread before the write is answered, so while it waits the worker
/// takes nothing from its queue, and requests sent meanwhile queue up in the order sent.
struct Gate {
    /// The bucket whose write holds the worker.
    bucket: &'static str,
    /// Told when the worker is inside the gate.
    entered: std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>,
    /// Dropped (the sender) to let the worker go on.
    release: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl aw_datastore::WriteListener for Gate {
    fn touched(&self, change: aw_datastore::Touched<'_>) {
        if !matches!(change, aw_datastore::Touched::Events { bucket, .. } if bucket == self.bucket)
        {
            return;
        }
        if let Some(entered) = self.entered.lock().unwrap().take() {
            entered.send(()).unwrap();
        }
        if let Some(release) = self.release.lock().unwrap().take() {
            // Returns when the sender is dropped.
            let _ = release.recv();
        }
    }
}

/// Holds the worker in a write to the bucket "gate" while `queue` sends its requests, so
/// that they all wait, in the order sent, when the worker goes on; returns what `queue`
/// returned once the worker went on.
fn queued_while_held<T>(s: &TempStore, queue: impl FnOnce() -> T) -> T {
    let (inside, release) = gate(s, "gate");
    let held = s.ds.heartbeat("gate", &ev(0, 0.0, json!({})), 0.0);
    inside.recv().unwrap();
    let queued = queue();
    drop(release);
    held.wait().unwrap();
    queued
}

/// Makes a write to the new bucket `name` hold the worker: the first receiver is told
/// when the worker is inside, and dropping the sender lets it go on.
fn gate(
    s: &TempStore,
    name: &'static str,
) -> (std::sync::mpsc::Receiver<()>, std::sync::mpsc::Sender<()>) {
    s.ds.create_bucket(&bucket(name)).wait().unwrap();
    let (entered, inside) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let gate = Gate {
        bucket: name,
        entered: std::sync::Mutex::new(Some(entered)),
        release: std::sync::Mutex::new(Some(released)),
    };
    s.ds.add_write_listener(std::sync::Arc::new(gate));
    (inside, release)
}

/// Queues the long request `long` and then `small` while the worker is held (so both are
/// waiting, in that order, when the worker goes on), then checks from the worker's own
/// record that it took the small request between the long one's steps rather than after its
/// end. Nothing is sampled after the fact and no clock is read, so a slow or busy machine
/// cannot change the verdict.
fn small_request_is_answered_between_steps<L, S>(
    s: &TempStore,
    long: impl FnOnce() -> aw_datastore::Answer<L>,
    small: impl FnOnce() -> aw_datastore::Answer<S>,
) -> L
where
    L: std::fmt::Debug,
    S: std::fmt::Debug,
{
    let before = s.ds.requests_between_steps();
    let (long, small) = queued_while_held(s, || (long(), small()));
    small.wait().unwrap();
    assert_eq!(
        s.ds.requests_between_steps(),
        before + 1,
        "the small request waited for the whole long one"
    );
    long.wait().unwrap()
}

#[test]
fn heartbeat_is_answered_during_a_long_read() {
    let s = TempStore::new();
    big_bucket(&s, 200_000);
    let rows = small_request_is_answered_between_steps(
        &s,
        || s.ds.get_events("big", None, None, None),
        || s.ds.heartbeat("b", &ev(0, 0.0, json!({"a": 1})), 1.0),
    );
    assert_eq!(rows.len(), 200_000);
    // Still newest first and complete across chunk boundaries.
    assert!(rows.0.windows(2).all(|w| w[0].start > w[1].start));
}

/// Imports `events` into a new bucket while a read of another bucket is queued behind the
/// import: the read is answered between the import's steps, and every event is imported.
fn reads_are_answered_during_the_import_of(events: Vec<aw_models::Event>) {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let n = events.len() as u64;
    let mut doc = bucket("imported");
    doc.events = Some(events);
    small_request_is_answered_between_steps(
        &s,
        || s.ds.import_buckets(vec![doc]),
        || s.ds.get_events("b", None, None, Some(1)),
    );
    assert_eq!(
        s.ds.get_event_count("imported", None, None).wait().unwrap(),
        n
    );
}

#[test]
fn reads_are_answered_during_a_large_import() {
    reads_are_answered_during_the_import_of(
        (0..100_000).map(|i| ev(i, 1.0, json!({"i": i}))).collect(),
    );
}

#[test]
fn reads_are_answered_during_an_import_whose_every_step_is_slow() {
    // Each step inserts 1,000 events of 8 KiB: several milliseconds, longer than a job may
    // keep waiting requests waiting, as any step is on a slow or busy machine. The worker
    // must still look at its queue between steps (it once measured a job's wait from the
    // start of its last step, so a step longer than the limit made the next one start at
    // once, and requests waited for the whole import).
    let pad = "x".repeat(8 << 10);
    reads_are_answered_during_the_import_of(
        (0..10_000)
            .map(|i| ev(i, 1.0, json!({"i": i, "pad": pad})))
            .collect(),
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
    small_request_is_answered_between_steps(
        &s,
        || s.ds.import_rows(vec![(bucket("big"), rows)]),
        || s.ds.get_events("b", None, None, Some(1)),
    );
    // Every imported event was already there.
    assert_eq!(
        s.ds.get_event_count("big", None, None).wait().unwrap(),
        200_000
    );
}

#[test]
fn a_streamed_read_hands_over_the_same_rows_in_parts_and_stops_when_dropped() {
    let s = TempStore::new();
    s.ds.create_bucket(&bucket("big")).wait().unwrap();
    // Repeated texts (13 apps) and distinct ones (every 100th event).
    let events: Vec<_> = (0..50_000i64)
        .map(|i| match i % 100 {
            0 => ev(i * 10, 9.0, json!({"app": "x", "n": i})),
            _ => ev(i * 10, 9.0, json!({"app": format!("a{}", i % 13)})),
        })
        .collect();
    s.ds.insert_events("big", &events).wait().unwrap();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    // A long event far before the range: appended last, as in a whole read.
    s.ds.insert_events("big", &[ev(-200_000, 300_000.0, json!({"long": true}))])
        .wait()
        .unwrap();
    let (lo, hi) = (Some(t(5)), Some(t(400_005)));
    let whole = s.ds.get_events("big", lo, hi, None).wait().unwrap();
    let parts: Vec<_> =
        s.ds.stream_events("big", lo, hi)
            .map(Result::unwrap)
            .collect();
    assert!(parts.len() > 2, "one part per read step: {}", parts.len());
    let streamed: Vec<aw_datastore::RawEvent> = parts
        .iter()
        .flat_map(|p| {
            p.rows().map(|(r, text)| aw_datastore::RawEvent {
                id: r.id,
                start: r.start,
                end: r.end,
                data: String::from_utf8(p.all_texts()[text].to_vec()).unwrap(),
            })
        })
        .collect();
    assert_eq!(streamed, whole.0, "same rows, same order, same clipping");
    let clipped_start = t(5).timestamp_nanos_opt().unwrap();
    assert_eq!(
        streamed.last().map(|r| r.start),
        Some(clipped_start),
        "the long event, clipped"
    );

    // An unknown bucket is one error; a dropped reader stops the read and the worker goes on.
    let mut missing = s.ds.stream_events("nope", None, None);
    assert!(matches!(
        missing.next(),
        Some(Err(aw_datastore::DatastoreError::NoSuchBucket(_)))
    ));
    assert!(missing.next().is_none());
    let mut stream = s.ds.stream_events("big", None, None);
    assert!(!stream.next().unwrap().unwrap().is_empty());
    drop(stream);
    wait_until("the read ends for nobody", || s.ds.jobs_in_progress() == 0);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 0);
}

/// The whole history of "big" (and far beyond it).
fn all_time() -> (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) {
    (t(-1_000_000), t(100_000_000))
}

#[test]
fn a_heartbeat_to_another_bucket_is_answered_during_a_deletion_of_all_history() {
    let s = TempStore::new();
    big_bucket(&s, 200_000);
    let (lo, hi) = all_time();
    let done = small_request_is_answered_between_steps(
        &s,
        || s.ds.delete_range(&["big".to_string()], lo, hi, false, None),
        || s.ds.heartbeat("b", &ev(0, 0.0, json!({"a": 1})), 1.0),
    );
    assert_eq!((done.deleted, done.cut), (200_000, 0));
    assert_eq!(s.ds.get_event_count("big", None, None).wait().unwrap(), 0);
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
}

#[test]
fn requests_for_a_bucket_being_rewritten_wait_and_come_after_it() {
    // Queued in this order: the deletion of all of "big", a count of "big", a heartbeat
    // into "big" inside the deleted range, and a heartbeat into "b". The one into "b" is
    // answered between the deletion's steps; the two for "big" wait for its end, so the
    // count sees none of it half done and the heartbeat's event is not deleted.
    let s = TempStore::new();
    big_bucket(&s, 200_000);
    let (lo, hi) = all_time();
    let before = s.ds.requests_between_steps();
    let (deletion, count, into_big, into_b) = queued_while_held(&s, || {
        (
            s.ds.delete_range(&["big".to_string()], lo, hi, false, None),
            // Bounded: a count of everything is answered from the published number.
            s.ds.get_event_count("big", Some(lo), Some(hi)),
            s.ds.heartbeat("big", &ev(500, 0.0, json!({"late": true})), 1.0),
            s.ds.heartbeat("b", &ev(0, 0.0, json!({"a": 1})), 1.0),
        )
    });
    into_b.wait().unwrap();
    assert!(
        s.ds.requests_between_steps() > before,
        "the heartbeat into another bucket waited for the whole deletion"
    );
    assert_eq!(deletion.wait().unwrap().deleted, 200_000);
    assert_eq!(
        count.wait().unwrap(),
        0,
        "the count saw the deletion half done"
    );
    into_big.wait().unwrap();
    let left = s.ds.get_events("big", None, None, None).wait().unwrap();
    assert_eq!(left.len(), 1);
    assert!(left.0[0].data.contains("late"));
}

#[test]
fn a_deletion_in_steps_that_fails_at_its_end_leaves_nothing_and_keeps_the_writes_between() {
    // A preview said 7 events; the range holds 200,000, which the run finds out only after
    // its last step: nothing it deleted stays deleted, and the heartbeat answered between
    // its steps stays, as does everything committed or not.
    let s = TempStore::new();
    big_bucket(&s, 200_000);
    let (lo, hi) = all_time();
    let before = s.ds.requests_between_steps();
    let (deletion, into_b) = queued_while_held(&s, || {
        (
            s.ds.delete_range(&["big".to_string()], lo, hi, false, Some(7)),
            s.ds.heartbeat("b", &ev(0, 0.0, json!({"a": 1})), 1.0),
        )
    });
    into_b.wait().unwrap();
    assert_eq!(s.ds.requests_between_steps(), before + 1);
    let failed = deletion.wait();
    assert!(
        matches!(failed, Err(aw_datastore::DatastoreError::Changed(_))),
        "{failed:?}"
    );
    assert_eq!(
        s.ds.get_event_count("big", None, None).wait().unwrap(),
        200_000
    );
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
    s.ds.force_commit().wait().unwrap();
    assert_eq!(
        s.ds.get_event_count("big", None, None).wait().unwrap(),
        200_000
    );
}

/// "big" of 200,000 events, every fourth of them of `"kind": "secret"`, and the rule that
/// drops those: set after the events are in, so only a run over the past drops them.
fn big_bucket_and_a_rule(s: &TempStore) {
    s.ds.create_bucket(&bucket("big")).wait().unwrap();
    let events: Vec<_> = (0..200_000)
        .map(|i| {
            ev(
                i * 10,
                9.0,
                json!({"i": i, "kind": if i % 4 == 0 { "secret" } else { "plain" }}),
            )
        })
        .collect();
    s.ds.insert_events("big", &events).wait().unwrap();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let rules =
        json!([{"enabled": true, "field": "kind", "pattern": "^secret$", "action": "drop"}]);
    s.ds.set_key_value(aw_datastore::PRIVACY_FILTERS_KEY, &rules.to_string())
        .wait()
        .unwrap();
}

#[test]
fn heartbeats_go_on_during_a_privacy_run_and_a_change_of_the_rules_waits_for_it() {
    // Queued: the run, the rules emptied, a heartbeat into "big" that the rules drop, and
    // one into "b". The heartbeats are answered between the run's steps (the one into
    // "big" dropped on its way in, as the run would drop it); the change of the rules
    // waits, so the whole run used the rules it began with.
    let s = TempStore::new();
    big_bucket_and_a_rule(&s);
    let before = s.ds.requests_between_steps();
    let (run, emptied, into_big, into_b) = queued_while_held(&s, || {
        (
            s.ds.apply_privacy_to_past(false),
            s.ds.set_key_value(aw_datastore::PRIVACY_FILTERS_KEY, "[]"),
            s.ds.heartbeat("big", &ev(3_000_000, 0.0, json!({"kind": "secret"})), 1.0),
            s.ds.heartbeat("b", &ev(0, 0.0, json!({"a": 1})), 1.0),
        )
    });
    into_b.wait().unwrap();
    let _ = into_big.wait();
    assert!(
        s.ds.requests_between_steps() >= before + 2,
        "the heartbeats waited for the whole run"
    );
    let report = run.wait().unwrap();
    assert_eq!(report.dropped, 50_000);
    emptied.wait().unwrap();
    assert_eq!(
        s.ds.get_event_count("big", None, None).wait().unwrap(),
        150_000
    );
    assert_eq!(s.ds.get_event_count("b", None, None).wait().unwrap(), 1);
    // The rules are empty now: a dropped kind of event is kept again.
    s.ds.heartbeat("big", &ev(4_000_000, 0.0, json!({"kind": "secret"})), 1.0)
        .wait()
        .unwrap();
    assert_eq!(
        s.ds.get_event_count("big", None, None).wait().unwrap(),
        150_001
    );
}

#[test]
fn a_privacy_run_stopped_half_way_leaves_none_of_it() {
    // A dry run counts all. Then a run is held between two of its steps (a write to
    // "midway" holds the worker) while the store's close is queued: the close ends it
    // there, and after a reopen nothing it dropped is gone, while the heartbeat answered
    // between its steps stays.
    let mut s = TempStore::new();
    big_bucket_and_a_rule(&s);
    let dry = s.ds.apply_privacy_to_past(true).wait().unwrap();
    assert_eq!(dry.dropped, 50_000);
    let (inside, release) = gate(&s, "midway");
    let (run, into_b, midway) = queued_while_held(&s, || {
        (
            s.ds.apply_privacy_to_past(false),
            s.ds.heartbeat("b", &ev(0, 0.0, json!({"a": 1})), 1.0),
            s.ds.heartbeat("midway", &ev(0, 0.0, json!({})), 1.0),
        )
    });
    into_b.wait().unwrap();
    inside.recv().unwrap();
    // The run has about a hundred steps to go. The close blocks its caller, so it is sent
    // from another thread, and the worker is let go once it is in the queue.
    let queued = s.ds.queued_requests();
    let path = s.path();
    let ds = s.ds.clone();
    let closing = std::thread::spawn(move || ds.close());
    common::wait_until("the close is queued", || s.ds.queued_requests() > queued);
    drop(release);
    let _ = midway.wait();
    assert!(
        run.wait().is_err(),
        "a run cut short must not answer success"
    );
    closing.join().unwrap().unwrap();
    let reopened = aw_datastore::Datastore::open(&path).unwrap();
    assert_eq!(
        reopened.get_event_count("big", None, None).wait().unwrap(),
        200_000
    );
    assert_eq!(reopened.get_event_count("b", None, None).wait().unwrap(), 1);
    reopened.close().unwrap();
    s.ds = aw_datastore::Datastore::open(&path).unwrap();
}

#[test]
fn a_merge_in_steps_lets_other_buckets_go_on_and_holds_its_own() {
    // "old" holds 100,000 events, the first 40,000 of which "new" holds already. Queued:
    // the merge, a heartbeat into "new" (waits: it comes after the merge) and one into
    // "b" (answered between the merge's steps).
    let s = TempStore::new();
    let event = |i: i64| ev(i * 10, 9.0, json!({"i": i}));
    s.ds.create_bucket(&bucket("old")).wait().unwrap();
    s.ds.create_bucket(&bucket("new")).wait().unwrap();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let old: Vec<_> = (0..100_000).map(event).collect();
    s.ds.insert_events("old", &old).wait().unwrap();
    s.ds.insert_events("new", &old[..40_000]).wait().unwrap();
    let before = s.ds.requests_between_steps();
    let (merge, into_new, into_b) = queued_while_held(&s, || {
        (
            s.ds.merge_buckets("old", "new"),
            s.ds.heartbeat("new", &ev(5_000_000, 0.0, json!({"late": true})), 1.0),
            s.ds.heartbeat("b", &ev(0, 0.0, json!({"a": 1})), 1.0),
        )
    });
    into_b.wait().unwrap();
    assert!(
        s.ds.requests_between_steps() > before,
        "the heartbeat into another bucket waited for the whole merge"
    );
    let merged = merge.wait().unwrap();
    assert_eq!((merged.moved, merged.duplicates), (60_000, 40_000));
    into_new.wait().unwrap();
    assert_eq!(
        s.ds.get_event_count("new", None, None).wait().unwrap(),
        100_001
    );
    assert!(matches!(
        s.ds.get_event_count("old", None, None).wait(),
        Err(aw_datastore::DatastoreError::NoSuchBucket(_))
    ));
}

/// Issue 44, case 4: a privacy run redacts events in steps while heartbeats extend them and
/// edits change them between its steps; its changes count from its end, so a replay of the
/// open transaction (a commit that fails, as on a full disk; or a kill before the commit:
/// the journal) applies them after those writes. They must not put back an end a heartbeat
/// moved, nor undo an edit: what is read afterwards, and after a kill, is what was answered.
#[test]
fn a_privacy_runs_replay_keeps_the_heartbeats_and_edits_answered_between_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    let faults = aw_datastore::Faults::default();
    let options = aw_datastore::OpenOptions {
        faults: faults.clone(),
        ..Default::default()
    };
    let ds = aw_datastore::Datastore::open_with(&dir.path().join("sqlite.db"), options).unwrap();
    let s = TempStore { dir, ds };
    s.ds.create_bucket(&bucket("w")).wait().unwrap();
    // The lowest ids: judged by the run's first step, long before its end.
    let inserted =
        s.ds.insert_events(
            "w",
            &[
                ev(5_000_000, 10.0, json!({"title": "secret x"})),
                ev(1_000_000, 10.0, json!({"title": "secret y"})),
            ],
        )
        .wait()
        .unwrap();
    let (x, y) = (inserted[0].id, inserted[1].id);
    big_bucket(&s, 100_000);
    let rules = json!([{"enabled": true, "field": "title", "pattern": "secret",
                        "action": "redact", "replacement": "***"}]);
    s.ds.set_key_value(aw_datastore::PRIVACY_FILTERS_KEY, &rules.to_string())
        .wait()
        .unwrap();
    s.ds.force_commit().wait().unwrap();
    let before = s.ds.requests_between_steps();
    let (run, beat, edit) = queued_while_held(&s, || {
        // The commit that follows the run fails, and the transaction is replayed.
        faults.fail_commits(1);
        (
            s.ds.apply_privacy_to_past(false),
            s.ds.heartbeat("w", &ev(5_000_015, 0.0, json!({"title": "secret x"})), 10.0),
            s.ds.replace_event("w", y, &ev(1_000_000, 10.0, json!({"title": "edited"}))),
        )
    });
    let beat = beat.wait().unwrap();
    assert_eq!(beat.id, x, "the heartbeat extended the redacted event");
    edit.wait().unwrap();
    assert_eq!(run.wait().unwrap().redacted, 2);
    assert!(
        s.ds.requests_between_steps() >= before + 2,
        "the heartbeat and the edit ran between the run's steps"
    );
    let answered = |ds: &aw_datastore::Datastore| {
        let x = ds.get_event("w", x).wait().unwrap();
        let y = ds.get_event("w", y).wait().unwrap();
        (x.end, x.data, y.data)
    };
    let expected = (
        beat.end,
        r#"{"title":"***"}"#.to_string(),
        r#"{"title":"edited"}"#.to_string(),
    );
    assert_eq!(
        answered(&s.ds),
        expected,
        "after the failed commit's replay"
    );
    // A kill now (nothing committed since the failure): the journal's replay.
    let copy = tempfile::tempdir().unwrap();
    {
        let _hold = s.ds.hold_worker().unwrap();
        for suffix in ["", "-wal", ".journal"] {
            let from = s.path().with_extension(format!("db{suffix}"));
            if from.exists() {
                std::fs::copy(&from, copy.path().join(format!("sqlite.db{suffix}"))).unwrap();
            }
        }
    }
    let killed = aw_datastore::Datastore::open(&copy.path().join("sqlite.db")).unwrap();
    assert_eq!(answered(&killed), expected, "after a kill");
    killed.close().unwrap();
    s.ds.force_commit().wait().unwrap();
    assert_eq!(answered(&s.ds), expected, "committed");
}
