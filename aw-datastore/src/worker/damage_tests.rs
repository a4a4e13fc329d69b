//! Damage is seen wherever the worker meets it (issue 35): in a request's answer, in a long
//! job's step, in a commit, and in the replay of acknowledged writes after SQLite dropped
//! the transaction. Each path notes it on the store (`Store::note`), and the worker's loop
//! salvages the file after the turn (`worker/live_salvage.rs`; the salvage itself is tested
//! through the real binary in `tests/tests/salvage.rs`).
//!
//! The damage is real SQLite corruption, made without a page cache in the way: the schema
//! is made to point a table at an index's root page, so the next statement that walks the
//! table finds a page of the wrong kind and SQLite answers `SQLITE_CORRUPT` ("database disk
//! image is malformed"), as it does for a page overwritten on disk. (Noise written into the
//! file, as the salvage tests do, is met only once the connection's cache lets go of the
//! page, which a test cannot time.)

use std::time::Duration;

use crate::error::DatastoreError;
use crate::store::Store;
use crate::worker::batch::Batch;
use crate::worker::group_commit::tests::{bucket, store_in};
use crate::worker::group_commit::GroupCommit;
use crate::worker::job::Job;
use crate::worker::request::Request;
use crate::worker::run::step_job;
use rusqlite::Connection;

/// Points `table` at the root page of an index of another table.
fn damage_table(conn: &Connection, table: &str) {
    conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
    let changed = conn
        .execute(
            "UPDATE sqlite_master SET rootpage = (SELECT rootpage FROM sqlite_master
                 WHERE type = 'index' AND tbl_name <> ?1 AND rootpage > 0 LIMIT 1)
             WHERE type = 'table' AND name = ?1",
            [table],
        )
        .unwrap();
    assert_eq!(changed, 1, "{table}");
    conn.execute_batch("PRAGMA writable_schema = RESET")
        .unwrap();
}

use crate::worker::run::tests::seconds as events;

/// A store holding the bucket `b` with 10 events, committed.
fn store_with_events(dir: &tempfile::TempDir) -> (Store, GroupCommit) {
    let mut store = store_in(dir);
    let mut tx = GroupCommit::begin(&store);
    store
        .create_bucket(tx.writes().changes(), bucket("b"), events(10))
        .unwrap();
    tx.writes().seal().unwrap();
    tx.commit(&mut store).unwrap();
    (store, tx)
}

#[test]
fn a_request_that_meets_damage_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut tx) = store_with_events(&dir);
    assert!(!store.take_damage_met());
    damage_table(store.conn(), "events");
    let (reply, answer) = tokio::sync::oneshot::channel();
    let request = Request::GetEvent("b".into(), 1, reply);
    let _ = request.run(&mut store, tx.writes(), Duration::from_secs(1));
    let answered = answer.blocking_recv().unwrap();
    assert!(
        matches!(answered, Err(DatastoreError::Damaged(_))),
        "{answered:?}"
    );
    assert!(store.take_damage_met(), "the answer's damage is noted");
    assert!(!store.take_damage_met(), "and taken once");
}

#[test]
fn a_long_job_step_that_meets_damage_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut tx) = store_with_events(&dir);
    let (reply, answer) = tokio::sync::oneshot::channel();
    // The first step reads what the bucket holds; the inserts come in the next.
    let buckets = vec![(bucket("b"), events(20))];
    let first = Job::import(
        &mut store,
        tx.writes(),
        buckets,
        reply,
        Duration::from_secs(1),
    );
    let job = first
        .job
        .expect("an import of an existing bucket takes more than one step");
    assert!(!store.take_damage_met());
    damage_table(store.conn(), "events");
    assert!(step_job(job, &mut tx, &mut store, Duration::from_secs(1))
        .job
        .is_none());
    assert!(matches!(
        answer.blocking_recv().unwrap(),
        Err(DatastoreError::Damaged(_))
    ));
    assert!(store.take_damage_met());
}

#[test]
fn a_commit_that_meets_damage_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(&dir);
    // With the journal, a commit also records the last journal record it holds (in the
    // table `aw_server_journal`), which is what meets the damage here.
    let recovered =
        crate::file::recover(store.conn(), &dir.path().join("sqlite.db"), false).unwrap();
    let batch = Batch::with_journal(recovered.journal, recovered.held);
    let mut tx = GroupCommit::begin_with(&mut store, batch);
    store
        .create_bucket(tx.writes().changes(), bucket("b"), events(3))
        .unwrap();
    tx.writes().seal().unwrap();
    damage_table(store.conn(), "aw_server_journal");
    assert!(tx.commit(&mut store).is_err());
    assert!(store.take_damage_met());
}

#[test]
fn a_replay_that_meets_damage_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, mut tx) = store_with_events(&dir);
    store
        .insert_events(tx.writes().changes(), "b", events(3))
        .unwrap();
    tx.writes().seal().unwrap();
    // SQLite drops the transaction; the table the acknowledged writes go into is damaged
    // before they are applied again.
    store.conn().execute_batch("ROLLBACK").unwrap();
    damage_table(store.conn(), "events");
    tx.check(&mut store);
    assert!(store.take_damage_met());
    assert!(matches!(
        tx.writable(&mut store),
        Err(DatastoreError::Unavailable(_))
    ));
}
