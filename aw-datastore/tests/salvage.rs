//! Salvaging damaged databases (issue 25, item 3): pages of the events table, of its
//! indexes and of the buckets table overwritten in a real file; the salvage must bring back
//! every event that a point lookup by id still reaches in the damaged file (the oracle),
//! with its fields unchanged, put events of a lost bucket into a recovery bucket, and write
//! a file that opens as a datastore.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;
#[path = "common/damage.rs"]
mod damage;

use std::collections::BTreeMap;
use std::path::Path;

use aw_datastore::Datastore;
use rusqlite::{Connection, OpenFlags};
use serde_json::json;

use common::{bucket, ev};
use damage::{damage, pages_of};

type Row = (i64, i64, i64, String);

/// A database of three buckets and 30,000 events, and a setting.
fn build(path: &Path) {
    let ds = Datastore::open(path).unwrap();
    for b in ["window", "afk", "web"] {
        ds.create_bucket(&bucket(b)).wait().unwrap();
    }
    for chunk in 0..30 {
        let events: Vec<_> = (0..1000)
            .map(|i| {
                let n = chunk * 1000 + i;
                ev(n, 9.0, json!({"app": format!("app{}", n % 17), "title": format!("title {n} {}", "x".repeat(n as usize % 90))}))
            })
            .collect();
        let target = ["window", "afk", "web"][chunk as usize % 3];
        ds.insert_events(target, &events).wait().unwrap();
    }
    ds.set_key_value("settings.classes", "[1,2,3]")
        .wait()
        .unwrap();
    ds.close().unwrap();
}

/// Every event a point lookup by id reaches (all of them, on an intact file).
fn reachable(path: &Path) -> BTreeMap<i64, Row> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let last: i64 = 40_000;
    let mut found = BTreeMap::new();
    let mut stmt = conn
        .prepare("SELECT bucketrow, starttime, endtime, data FROM events WHERE id = ?1")
        .unwrap();
    for id in 1..=last {
        if let Ok(row) = stmt.query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        {
            found.insert(id, row);
        }
    }
    found
}

/// Salvages the damaged copy of `original` and checks the result against the oracle;
/// returns (events back, reachable, original).
fn check(original: &Path, dir: &Path, case: &str, pages: &[i64]) -> (usize, usize, usize) {
    let damaged = dir.join(format!("{case}.db"));
    std::fs::copy(original, &damaged).unwrap();
    damage(&damaged, pages);
    let oracle = reachable(&damaged);
    let fresh = dir.join(format!("{case}-salvaged.db"));
    let report = aw_datastore::salvage(&damaged, &fresh, None).unwrap();
    let got = reachable(&fresh);
    for (id, row) in &oracle {
        assert_eq!(
            got.get(id),
            Some(row),
            "{case}: event {id} reachable but not salvaged"
        );
    }
    assert_eq!(report.events as usize, got.len(), "{case}: {report:?}");
    // The salvaged file opens as a datastore.
    let ds = Datastore::open(&fresh).unwrap();
    let buckets = ds.get_buckets().wait().unwrap();
    assert!(!buckets.is_empty());
    ds.close().unwrap();
    let total = reachable(original).len();
    eprintln!(
        "{case}: {} pages overwritten; salvaged {} events of {total} ({} reachable by id in the damaged file); lost ranges {:?}, recovery buckets {:?}",
        pages.len(),
        got.len(),
        oracle.len(),
        report.lost.len(),
        report.recovery_buckets
    );
    (got.len(), oracle.len(), total)
}

#[test]
fn every_event_reachable_by_id_comes_back_whatever_pages_are_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.db");
    build(&original);
    let leaves = pages_of(&original, &["events"], true);
    let interior = pages_of(&original, &["events"], false);
    let indexes = pages_of(
        &original,
        &[
            "events_bucketrow_starttime_endtime_index",
            "events_long_by_end",
        ],
        true,
    );
    let buckets = pages_of(&original, &["buckets"], true);
    assert!(leaves.len() > 50 && !interior.is_empty() && !indexes.is_empty());
    let intact = aw_datastore::salvage(&original, &dir.path().join("intact.db"), None).unwrap();
    assert_eq!(
        (intact.buckets, intact.events, intact.settings),
        (3, 30_000, 1)
    );
    assert!(intact.lost.is_empty() && intact.unusable_rows == 0);

    // Leaf pages of the events table: what they held is gone, the rest comes back.
    let some_leaves: Vec<i64> = leaves.iter().copied().step_by(leaves.len() / 5).collect();
    let (back, reachable, total) = check(&original, dir.path(), "event-leaves", &some_leaves);
    assert!(back >= reachable && back < total);

    // An interior page: every leaf below it is cut off from the root.
    let (back, reachable, _) = check(&original, dir.path(), "event-interior", &interior[..1]);
    assert!(back >= reachable);

    // Index pages only: nothing is lost (the salvage never reads the indexes).
    let (back, _, total) = check(
        &original,
        dir.path(),
        "indexes",
        &indexes[..indexes.len().min(5)],
    );
    assert_eq!(back, total);

    // The buckets table: its events go into recovery buckets.
    let damaged = dir.path().join("buckets.db");
    std::fs::copy(&original, &damaged).unwrap();
    damage(&damaged, &buckets);
    let fresh = dir.path().join("buckets-salvaged.db");
    let report = aw_datastore::salvage(&damaged, &fresh, None).unwrap();
    assert_eq!(report.events, 30_000, "{report:?}");
    assert_eq!(report.recovery_buckets.len(), 3, "{report:?}");
    let ds = Datastore::open(&fresh).unwrap();
    let ids: Vec<String> = ds.get_buckets().wait().unwrap().into_keys().collect();
    assert!(
        ids.iter().all(|id| id.starts_with("aw-salvaged-bucket-")),
        "{ids:?}"
    );
    assert_eq!(
        ds.get_key_value("settings.classes").wait().unwrap(),
        "[1,2,3]"
    );
}

/// A salvaged copy keeps the journal's key: an encrypted database's journal records are
/// sealed with it, and the copy takes the original's held writes (its marker is copied),
/// so with a new key they could not be read and would be kept aside unapplied.
#[test]
fn a_salvaged_copy_keeps_the_journal_key() {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.db");
    let ds = Datastore::open(&original).unwrap();
    ds.create_bucket(&bucket("window")).wait().unwrap();
    ds.close().unwrap();
    // The table an encrypted database's first open makes; written by hand here.
    let conn = Connection::open(&original).unwrap();
    conn.execute_batch(
        "CREATE TABLE aw_server_journal_key (id INTEGER PRIMARY KEY CHECK (id = 1), key BLOB NOT NULL);
         INSERT INTO aw_server_journal_key VALUES (1, randomblob(32));",
    )
    .unwrap();
    let key_of = |conn: &Connection| -> Vec<u8> {
        conn.query_row(
            "SELECT key FROM aw_server_journal_key WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let key = key_of(&conn);
    drop(conn);
    let fresh = dir.path().join("fresh.db");
    aw_datastore::salvage(&original, &fresh, None).unwrap();
    assert_eq!(key_of(&Connection::open(&fresh).unwrap()), key);
}

/// Issue 44, case 5: the page of the database's own journal row (rewritten at every commit,
/// so a likely one to be damaged) cannot be read. The salvaged copy takes its identity from
/// the journal's header instead, so the acknowledged writes the journal holds (a kill before
/// their commit) are applied to it, not set aside.
#[test]
fn a_salvage_that_cannot_read_the_journal_row_keeps_the_held_writes() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir(&served).unwrap();
    let ds = Datastore::open(&served.join("sqlite.db")).unwrap();
    ds.create_bucket(&bucket("w")).wait().unwrap();
    let first: Vec<_> = (0..10).map(|i| ev(i * 10, 5.0, json!({"n": i}))).collect();
    ds.insert_events("w", &first).wait().unwrap();
    ds.force_commit().wait().unwrap();
    let held: Vec<_> = (10..15).map(|i| ev(i * 10, 5.0, json!({"n": i}))).collect();
    ds.insert_events("w", &held).wait().unwrap();
    // A kill now: the files as they are, the last five writes only in the journal.
    let killed = dir.path().join("killed");
    std::fs::create_dir(&killed).unwrap();
    {
        let _hold = ds.hold_worker().unwrap();
        for suffix in ["", "-wal", ".journal"] {
            let from = served.join(format!("sqlite.db{suffix}"));
            if from.exists() {
                std::fs::copy(&from, killed.join(format!("sqlite.db{suffix}"))).unwrap();
            }
        }
    }
    ds.close().unwrap();
    let db = killed.join("sqlite.db");
    {
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
    }
    damage(&db, &pages_of(&db, &["aw_server_journal"], true));
    let file = aw_datastore::DatabaseFile::claim(&db).unwrap();
    file.salvage(None).unwrap();
    drop(file);
    let ds = Datastore::open(&db).unwrap();
    assert_eq!(
        ds.get_event_count("w", None, None).wait().unwrap(),
        15,
        "the five writes the journal held were applied to the salvaged copy"
    );
    ds.close().unwrap();
    let aside = std::fs::read_dir(&killed)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".unmatched-"))
        .count();
    assert_eq!(aside, 0, "no journal was set aside");
}
