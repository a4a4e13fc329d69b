//! Opening databases written by others: an aw-server-rust v4 file upgraded in place, and the
//! Python aw-server's database imported on first start.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_datastore::{Datastore, OpenOptions};
use rusqlite::Connection;
use serde_json::json;

/// Builds a schema-v4 database the way aw-server-rust 0.12 left it.
fn build_v4(path: &std::path::Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE buckets (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE NOT NULL,
            type TEXT NOT NULL, client TEXT NOT NULL, hostname TEXT NOT NULL, created TEXT NOT NULL,
            data_deprecated TEXT DEFAULT '{}', data TEXT NOT NULL DEFAULT '{}');
         CREATE INDEX bucket_id_index ON buckets(id);
         CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, bucketrow INTEGER NOT NULL,
            starttime INTEGER NOT NULL, endtime INTEGER NOT NULL, data TEXT NOT NULL,
            FOREIGN KEY (bucketrow) REFERENCES buckets(id));
         CREATE INDEX events_bucketrow_index ON events(bucketrow);
         CREATE INDEX events_starttime_index ON events(starttime);
         CREATE INDEX events_endtime_index ON events(endtime);
         CREATE TABLE key_value (key TEXT PRIMARY KEY, value TEXT, last_modified NUMBER NOT NULL);
         INSERT INTO buckets (name, type, client, hostname, created, data)
            VALUES ('aw-watcher-window_h', 'currentwindow', 'aw-watcher-window', 'h',
                    '2021-03-04 05:06:07.123456+00:00', '{\"k\":\"v\"}');
         INSERT INTO buckets (name, type, client, hostname, created)
            VALUES ('aw-watcher-afk_h', 'afkstatus', 'aw-watcher-afk', 'h', '2021-03-04T05:06:07Z');
         INSERT INTO key_value VALUES ('settings.theme', '\"dark\"', 1600000000);
         PRAGMA user_version = 4;",
    )
    .unwrap();
    let mut stmt = conn
        .prepare("INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (?1, ?2, ?3, ?4)")
        .unwrap();
    for i in 0..1000i64 {
        let start = 1_614_834_367_000_000_000 + i * 10_000_000_000;
        stmt.execute(rusqlite::params![
            1 + i % 2,
            start,
            start + 5_000_000_000,
            format!("{{\"app\":\"a{}\",\"i\":{i}}}", i % 7)
        ])
        .unwrap();
    }
}

#[test]
fn v4_database_upgrades_in_place_losing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sqlite.db");
    build_v4(&path);
    let ds = Datastore::open(&path).unwrap();
    let buckets = ds.get_buckets().wait().unwrap();
    assert_eq!(buckets.len(), 2);
    // A verified backup of the v4 file was taken before the migration.
    let backups: Vec<_> = std::fs::read_dir(dir.path().join("backups"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    let name = backups[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("sqlite-before-schema-v4-"), "{name}");
    let copy = Connection::open(&backups[0]).unwrap();
    let (version, events): (i64, i64) = copy
        .query_row(
            "SELECT (SELECT user_version FROM pragma_user_version), count(*) FROM events",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((version, events), (4, 1000));
    drop(copy);
    let w = &buckets["aw-watcher-window_h"];
    assert_eq!(w.data["k"], json!("v"));
    assert_eq!(
        aw_models::timestamp::format(w.created.as_ref().unwrap()),
        "2021-03-04T05:06:07.123456Z"
    );
    assert!(w.metadata.start.is_some());
    assert_eq!(
        ds.get_event_count("aw-watcher-window_h", None, None)
            .wait()
            .unwrap(),
        500
    );
    assert_eq!(
        ds.get_event_count("aw-watcher-afk_h", None, None)
            .wait()
            .unwrap(),
        500
    );
    assert_eq!(
        ds.get_key_value("settings.theme").wait().unwrap(),
        "\"dark\""
    );
    let newest = ds
        .get_events("aw-watcher-afk_h", None, None, Some(1))
        .wait()
        .unwrap()
        .into_events();
    assert_eq!(newest[0].data["i"], json!(999));
    ds.close().unwrap();

    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 5);
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // The reference's composite index, plus ours of the long events only (a partial index
    // the reference maintains like any other; user_version stays 5).
    assert_eq!(
        indexes,
        vec![
            "events_bucketrow_starttime_endtime_index".to_string(),
            "events_long_by_end".to_string()
        ]
    );
    let total: i64 = conn
        .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(total, 1000);
}

#[test]
fn fresh_database_has_the_reference_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sqlite.db");
    Datastore::open(&path).unwrap().close().unwrap();
    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 5);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let cols: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('buckets')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        cols,
        [
            "id",
            "name",
            "type",
            "client",
            "hostname",
            "created",
            "data_deprecated",
            "data"
        ]
    );
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sqlite.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 9;")
        .unwrap();
    let err = Datastore::open(&path).err().unwrap();
    assert_eq!(
        err.to_string(),
        "Database has version 9 while the supported version is 5"
    );
}

fn build_python_db(path: &std::path::Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE bucketmodel (key INTEGER PRIMARY KEY, id VARCHAR(255) NOT NULL UNIQUE,
            created DATETIME NOT NULL, name VARCHAR(255), type VARCHAR(255) NOT NULL,
            client VARCHAR(255) NOT NULL, hostname VARCHAR(255) NOT NULL, datastr TEXT);
         CREATE TABLE eventmodel (id INTEGER PRIMARY KEY, bucket_id INTEGER NOT NULL,
            timestamp DATETIME NOT NULL, duration DECIMAL(10,5) NOT NULL, datastr VARCHAR(255) NOT NULL);
         INSERT INTO bucketmodel VALUES (1, 'aw-watcher-window_py', '2019-01-01 10:00:00.000000+00:00',
            NULL, 'currentwindow', 'aw-watcher-window', 'py', '{}');
         INSERT INTO bucketmodel VALUES (2, 'aw-watcher-afk_py', '2019-01-01 10:00:00+00:00',
            NULL, 'afkstatus', 'aw-watcher-afk', 'py', '{}');",
    )
    .unwrap();
    let mut stmt = conn
        .prepare("INSERT INTO eventmodel (bucket_id, timestamp, duration, datastr) VALUES (?1, ?2, ?3, ?4)")
        .unwrap();
    for i in 0..300 {
        let ts = format!("2019-01-02 10:{:02}:{:02}.500000+00:00", i / 60, i % 60);
        stmt.execute(rusqlite::params![
            1 + i % 2,
            ts,
            0.75,
            format!("{{\"title\": \"t{i}\", \"app\": \"x\"}}")
        ])
        .unwrap();
    }
    stmt.execute(rusqlite::params![
        1,
        "2019-01-02 11:00:00+00:00",
        1.0,
        "not json"
    ])
    .unwrap();
}

#[test]
fn python_database_is_imported_once() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("peewee-sqlite.v2.db");
    build_python_db(&legacy);
    let path = dir.path().join("sqlite.db");
    let options = OpenOptions {
        legacy_import: Some(legacy.clone()),
        ..OpenOptions::default()
    };
    let ds = Datastore::open_with(&path, options.clone()).unwrap();
    assert_eq!(
        ds.get_event_count("aw-watcher-window_py", None, None)
            .wait()
            .unwrap(),
        150
    );
    assert_eq!(
        ds.get_event_count("aw-watcher-afk_py", None, None)
            .wait()
            .unwrap(),
        150
    );
    let e = &ds
        .get_events("aw-watcher-window_py", None, None, Some(1))
        .wait()
        .unwrap()
        .into_events()[0];
    assert_eq!(
        aw_models::timestamp::format(&e.timestamp),
        "2019-01-02T10:04:58.500Z"
    );
    assert_eq!(e.duration, chrono::Duration::milliseconds(750));
    assert_eq!(e.data["title"], json!("t298"));
    ds.close().unwrap();
    // A second start does not import again.
    let ds = Datastore::open_with(&path, options).unwrap();
    assert_eq!(
        ds.get_event_count("aw-watcher-window_py", None, None)
            .wait()
            .unwrap(),
        150
    );
}
