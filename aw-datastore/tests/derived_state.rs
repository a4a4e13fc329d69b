//! State derived from the data, kept beside the database (`file/derived.rs`): handed back
//! after a clean stop and after a kill with exactly what the writes since changed, and not
//! at all after another program wrote.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_datastore::{Changed, Datastore};
use common::*;
use serde_json::json;

const DAY: i64 = 86_400;

fn keep_state(ds: &Datastore) {
    ds.keep_derived_state(Box::new(|_| b"state".to_vec()));
}

/// Whether `changed` reaches the events of `bucket` at `secs`.
fn reaches(changed: &[Changed], bucket: &str, secs: i64) -> bool {
    let at = t(secs).timestamp_nanos_opt().unwrap();
    changed.iter().any(|c| match c {
        Changed::Events {
            bucket: b,
            start,
            end,
        } => b == bucket && *start <= at && at <= *end,
        Changed::Bucket(b) => b == bucket,
        Changed::Everything => true,
    })
}

/// Run as a child process by the kill tests: writes days 1 and 5, saves the state while
/// serving, then writes day 3 (committed) and day 10 (acknowledged, in the journal only),
/// says so and waits to be killed.
#[test]
#[ignore]
fn saving_child() {
    let Ok(path) = std::env::var("AW_CHILD_DB") else {
        return;
    };
    let ds = Datastore::open(std::path::Path::new(&path)).unwrap();
    keep_state(&ds);
    for b in ["a", "b"] {
        ds.create_bucket(&bucket(b)).wait().unwrap();
    }
    ds.insert_events("a", &[ev(DAY, 60.0, json!({"d": 1}))])
        .wait()
        .unwrap();
    ds.insert_events("b", &[ev(5 * DAY, 60.0, json!({"d": 5}))])
        .wait()
        .unwrap();
    ds.force_commit().wait().unwrap();
    assert!(ds.save_derived_state().unwrap());
    ds.insert_events("a", &[ev(3 * DAY, 60.0, json!({"d": 3}))])
        .wait()
        .unwrap();
    ds.force_commit().wait().unwrap();
    ds.heartbeat("b", &ev(10 * DAY, 0.0, json!({"d": 10})), 5.0)
        .wait()
        .unwrap();
    println!("SAVED");
    loop {
        std::thread::park();
    }
}

/// Run as a child process by `state_kept_at_a_stop_comes_back_after_a_later_run_was_killed`:
/// a run that keeps state but saves none while serving, writes day 3 and is killed.
#[test]
#[ignore]
fn writing_child() {
    let Ok(path) = std::env::var("AW_CHILD_DB") else {
        return;
    };
    let ds = Datastore::open(std::path::Path::new(&path)).unwrap();
    keep_state(&ds);
    ds.insert_events("a", &[ev(3 * DAY, 60.0, json!({"d": 3}))])
        .wait()
        .unwrap();
    ds.force_commit().wait().unwrap();
    println!("WRITTEN");
    loop {
        std::thread::park();
    }
}

/// The state a clean stop kept, then a run that wrote and was killed: the state comes back
/// with that run's write, and not as if everything had changed (a start writes nothing).
#[test]
fn state_kept_at_a_stop_comes_back_after_a_later_run_was_killed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sqlite.db");
    let ds = Datastore::open(&path).unwrap();
    keep_state(&ds);
    ds.create_bucket(&bucket("a")).wait().unwrap();
    ds.insert_events("a", &[ev(DAY, 60.0, json!({"d": 1}))])
        .wait()
        .unwrap();
    ds.close().unwrap();
    let mut child = child_at("writing_child", &path, "WRITTEN");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let ds = Datastore::open(&path).unwrap();
    let kept = ds.take_derived_state().expect("the state kept at the stop");
    assert!(
        !kept.changed.contains(&Changed::Everything),
        "{:?}",
        kept.changed
    );
    assert!(reaches(&kept.changed, "a", 3 * DAY), "{:?}", kept.changed);
    assert!(!reaches(&kept.changed, "a", DAY), "{:?}", kept.changed);
    ds.close().unwrap();
}

fn killed_after_saving(path: &std::path::Path) {
    let mut child = child_at("saving_child", path, "SAVED");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

#[test]
fn after_a_kill_the_state_comes_back_with_what_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sqlite.db");
    killed_after_saving(&path);
    let ds = Datastore::open(&path).unwrap();
    let kept = ds
        .take_derived_state()
        .expect("the state kept while serving");
    assert_eq!(kept.bytes, b"state");
    // The committed write and the one the journal applied at the open; not the days the
    // state had heard of, and not everything.
    assert!(reaches(&kept.changed, "a", 3 * DAY), "{:?}", kept.changed);
    assert!(reaches(&kept.changed, "b", 10 * DAY), "{:?}", kept.changed);
    assert!(!reaches(&kept.changed, "a", DAY), "{:?}", kept.changed);
    assert!(!reaches(&kept.changed, "b", 5 * DAY), "{:?}", kept.changed);
    assert!(ds.take_derived_state().is_none(), "handed back once");
    assert_eq!(ds.get_event_count("b", None, None).wait().unwrap(), 2);
    ds.close().unwrap();
}

#[test]
fn after_a_kill_and_another_programs_write_nothing_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sqlite.db");
    killed_after_saving(&path);
    // The reference server (or sqlite3) writes an event while ours is down.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO events (bucketrow, starttime, endtime, data) \
         SELECT id, 1, 2, '{}' FROM buckets WHERE name = 'a'",
        [],
    )
    .unwrap();
    drop(conn);
    let ds = Datastore::open(&path).unwrap();
    assert!(!ds.has_derived_state());
    assert!(ds.take_derived_state().is_none());
    ds.close().unwrap();
    assert!(!dir.path().join("sqlite.db.derived").exists());
}

#[test]
fn after_a_clean_stop_the_state_comes_back_with_nothing_changed() {
    let mut s = TempStore::new();
    keep_state(&s.ds);
    s.ds.create_bucket(&bucket("a")).wait().unwrap();
    s.ds.insert_events("a", &[ev(DAY, 60.0, json!({}))])
        .wait()
        .unwrap();
    s.reopen();
    let kept =
        s.ds.take_derived_state()
            .expect("the state kept at the stop");
    assert_eq!(kept.bytes, b"state");
    assert_eq!(kept.changed, vec![]);
    // Not kept by this run (no producer): the next start has nothing.
    s.reopen();
    assert!(s.ds.take_derived_state().is_none());
}
