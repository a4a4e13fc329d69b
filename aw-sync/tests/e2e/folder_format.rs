//! Interoperability with the reference aw-sync's folder: files written the reference's way
//! (built here by hand: the folder layout and the version-5 tables) are pulled, in both layouts; our
//! own file is in that format; and nothing in other devices' folders is touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::json;

use crate::common::{at, files_under, Device};

/// The reference's version-5 schema, as a fresh reference database has it.
const REFERENCE_SCHEMA: &str = "
    CREATE TABLE buckets (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT UNIQUE NOT NULL,
        type TEXT NOT NULL,
        client TEXT NOT NULL,
        hostname TEXT NOT NULL,
        created TEXT NOT NULL,
        data_deprecated TEXT DEFAULT '{}',
        data TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX bucket_id_index ON buckets(id);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        bucketrow INTEGER NOT NULL,
        starttime INTEGER NOT NULL,
        endtime INTEGER NOT NULL,
        data TEXT NOT NULL,
        FOREIGN KEY (bucketrow) REFERENCES buckets(id)
    );
    CREATE INDEX events_bucketrow_starttime_endtime_index
        ON events(bucketrow, starttime DESC, endtime);
    CREATE TABLE key_value (key TEXT PRIMARY KEY, value TEXT, last_modified NUMBER NOT NULL);
    PRAGMA user_version = 5;";

/// A sync file written the reference's way: WAL mode, one bucket per entry with
/// `$aw.sync.origin` in its data (when given), `n` events one minute apart.
fn reference_file(path: &Path, buckets: &[(&str, &str, Option<&str>, usize)]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = Connection::open(path).unwrap();
    conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .unwrap();
    conn.execute_batch(REFERENCE_SCHEMA).unwrap();
    for (id, hostname, origin, n) in buckets {
        let data = match origin {
            Some(o) => json!({"$aw.sync.origin": o}).to_string(),
            None => "{}".to_string(),
        };
        conn.execute(
            "INSERT INTO buckets (name, type, client, hostname, created, data)
             VALUES (?1, 'currentwindow', 'aw-watcher-window', ?2, '2026-05-01 10:00:00.123456789+00:00', ?3)",
            rusqlite::params![id, hostname, data],
        )
        .unwrap();
        let row = conn.last_insert_rowid();
        for i in 0..*n as i64 {
            let start = at(i * 60).timestamp_nanos_opt().unwrap();
            let data = json!({"app": "editor", "title": format!("file {i}")}).to_string();
            conn.execute(
                "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![row, start, start + 50_000_000_000i64, data],
            )
            .unwrap();
        }
    }
}

/// Every file under `root` with its bytes.
fn contents(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_under(root)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(root.join(&p)).unwrap();
            (p, bytes)
        })
        .collect()
}

#[test]
fn reference_files_in_both_layouts_are_pulled_and_left_untouched() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let b = Device::start();
    // Device layout, written by the reference daemon: its first-hand bucket, and a bucket
    // it imported from elsewhere (not pulled again: the original comes from its own file).
    reference_file(
        &f.join("ref-device-1/test.db"),
        &[
            ("aw-watcher-window_refhost", "refhost", Some("refhost"), 120),
            ("aw-watcher-window_x-synced-from-x", "x", Some("x"), 5),
        ],
    );
    // A Syncthing conflict copy: never read.
    reference_file(
        &f.join("ref-device-1/test.sync-conflict-20260501-101010-ABCDEFG.db"),
        &[("conflicted", "refhost", Some("refhost"), 3)],
    );
    // Host layout, written by the reference's `aw-sync sync` (no origin in the data: the
    // hostname is the origin), with the placeholder it plants for every device, ours too.
    reference_file(
        &f.join("refhost2/ref-device-2/test.db"),
        &[("aw-watcher-window_refhost2", "refhost2", None, 30)],
    );
    reference_file(&f.join(format!("refhost2/{}/test.db", b.device_id)), &[]);
    // ref-device-2's placeholder in another host's folder, written after its real file:
    // the newest of a device's files, but empty, so its real file is pulled.
    let placeholder = f.join("refhost/ref-device-2/test.db");
    reference_file(&placeholder, &[]);
    std::fs::File::options()
        .write(true)
        .open(&placeholder)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    let before = contents(f);

    b.sync(f, &["sync"]);
    let ids = b.bucket_ids();
    assert_eq!(
        ids,
        [
            "aw-watcher-window_refhost-synced-from-refhost",
            "aw-watcher-window_refhost2-synced-from-refhost2",
        ]
    );
    let events = b.events("aw-watcher-window_refhost-synced-from-refhost");
    assert_eq!(events.len(), 120);
    assert_eq!(events[7].0, at(7 * 60));
    assert_eq!(events[7].1, chrono::Duration::seconds(50));
    assert_eq!(events[7].2["title"], "file 7");
    let pulled = b
        .client
        .get_bucket("aw-watcher-window_refhost-synced-from-refhost")
        .unwrap();
    assert_eq!(pulled.hostname, "refhost");
    assert_eq!(pulled.data["$aw.sync.origin"], "refhost");
    assert_eq!(pulled.data["$aw.sync.device"], "ref-device-1");

    // Nothing outside our own folders changed, and no side files anywhere.
    let host = aw_platform::hostname();
    let host_layout = Path::new(&host).join(&b.device_id);
    let mut after = contents(f);
    after.retain(|p, _| !p.starts_with(&b.device_id) && !p.starts_with(&host_layout));
    let names = |m: &BTreeMap<PathBuf, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&before), names(&after));
    for (path, bytes) in &before {
        assert!(after[path] == *bytes, "{} changed", path.display());
    }
    // Our folders hold our file (no buckets of our own yet) and nothing else.
    assert_eq!(
        files_under(&f.join(&b.device_id)),
        [PathBuf::from("test.db")]
    );
    assert_eq!(
        files_under(&f.join(&host_layout)),
        [PathBuf::from("test.db")]
    );

    // The reference device is renamed (its origin changes) and records more: the events
    // go into the same bucket, keyed on its device id and bucket id, not a new one.
    let conn = Connection::open(f.join("ref-device-1/test.db")).unwrap();
    conn.execute(
        "UPDATE buckets SET data = ?1 WHERE name = 'aw-watcher-window_refhost'",
        [json!({"$aw.sync.origin": "refhost-renamed"}).to_string()],
    )
    .unwrap();
    let start = at(200 * 60).timestamp_nanos_opt().unwrap();
    conn.execute(
        "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (1, ?1, ?2, '{\"app\":\"editor\",\"title\":\"later\"}')",
        [start, start + 1_000_000_000],
    )
    .unwrap();
    drop(conn);
    b.sync(f, &["sync"]);
    assert_eq!(b.bucket_ids().len(), 2, "{:?}", b.bucket_ids());
    assert_eq!(
        b.events("aw-watcher-window_refhost-synced-from-refhost")
            .len(),
        121
    );
}

#[test]
fn our_file_is_the_reference_format_and_the_reference_can_read_it() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::start();
    a.create_bucket("aw-watcher-window_laptop", "currentwindow", "laptop");
    a.client
        .insert_events(
            "aw-watcher-window_laptop",
            crate::common::window_events(50, 0),
        )
        .unwrap();
    a.create_bucket("aw-watcher-afk_unknown", "afkstatus", "unknown");
    a.sync(f, &["sync"]);

    let own_dir = f.join(&a.device_id);
    assert_eq!(
        files_under(&own_dir),
        [PathBuf::from("test.db")],
        "no side files"
    );
    let path = own_dir.join("test.db");
    // The same file in the reference's host layout, which its `sync` and Android read.
    let host = aw_platform::hostname();
    let host_layout = f.join(&host).join(&a.device_id);
    assert_eq!(
        files_under(&host_layout),
        [PathBuf::from("test.db")],
        "no side files"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(host_layout.join("test.db")).unwrap()
    );
    // The reference opens peers read-write; do the same on a copy.
    let copy = tempfile::tempdir().unwrap();
    let path_copy = copy.path().join("test.db");
    std::fs::copy(&path, &path_copy).unwrap();
    let conn = Connection::open(&path_copy).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 5);
    let columns = |table: &str| -> Vec<String> {
        let mut stmt = conn
            .prepare(&format!("PRAGMA table_info({table})"))
            .unwrap();
        stmt.query_map([], |r| r.get::<_, String>(1))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(
        columns("buckets"),
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
    assert_eq!(
        columns("events"),
        ["id", "bucketrow", "starttime", "endtime", "data"]
    );
    assert_eq!(columns("key_value"), ["key", "value", "last_modified"]);
    let index: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'events_bucketrow_starttime_endtime_index'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(index, 1);

    let (hostname, created, data): (String, String, String) = conn
        .query_row(
            "SELECT hostname, created, data FROM buckets WHERE name = 'aw-watcher-window_laptop'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(hostname, "laptop");
    assert!(
        created.ends_with("+00:00") && created.as_bytes()[10] == b' ',
        "{created}"
    );
    let data: serde_json::Value = serde_json::from_str(&data).unwrap();
    let this_host = aw_platform::hostname();
    assert_eq!(data["$aw.sync.origin"], this_host);
    // `unknown` hostnames become the device id (as the reference's push does).
    let afk_host: String = conn
        .query_row(
            "SELECT hostname FROM buckets WHERE name = 'aw-watcher-afk_unknown'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(afk_host, a.device_id);

    let (n, first_start, first_data): (i64, i64, String) = conn
        .query_row(
            "SELECT COUNT(*), MIN(starttime), (SELECT data FROM events e2 WHERE e2.bucketrow = b.id ORDER BY starttime LIMIT 1)
             FROM events JOIN buckets b ON b.id = events.bucketrow WHERE b.name = 'aw-watcher-window_laptop'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(n, 50);
    assert_eq!(first_start, at(0).timestamp_nanos_opt().unwrap());
    assert_eq!(first_data, r#"{"app":"app0","title":"title 0"}"#);
}

/// The reference's aw-sync (pinned commit) and ours in one folder, both ways, with a
/// rewrite of history on our side: run by hand,
/// `AW_REFERENCE_SYNC_BIN=/path/to/reference/aw-sync cargo test -p aw-sync --test e2e -- --ignored reference`.
#[test]
#[ignore = "needs the reference aw-sync binary in AW_REFERENCE_SYNC_BIN"]
fn the_reference_aw_sync_and_ours_share_a_folder_both_ways_after_a_rewrite() {
    let Some(reference) = std::env::var_os("AW_REFERENCE_SYNC_BIN") else {
        panic!("set AW_REFERENCE_SYNC_BIN to the reference aw-sync binary");
    };
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let ours = Device::start();
    let theirs = Device::start(); // a server synced by the reference's aw-sync
    let window = "aw-watcher-window_laptop";
    ours.create_bucket(window, "currentwindow", "laptop");
    let events: Vec<_> = (0..60)
        .map(|i| crate::common::event(i * 3600, 60, json!({"app": "a", "title": format!("t{i}")})))
        .collect();
    ours.client.insert_events(window, events).unwrap();
    theirs.create_bucket("aw-watcher-window_tablet", "currentwindow", "tablet");
    theirs
        .client
        .insert_events(
            "aw-watcher-window_tablet",
            crate::common::window_events(20, 0),
        )
        .unwrap();
    let run_reference = || {
        let home = theirs.home.path();
        let out = std::process::Command::new(&reference)
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env_remove("AW_SYNC_DIR")
            .args(["--port", &theirs.server.port.to_string(), "--sync-dir"])
            .arg(f)
            .args(["sync", "--mode", "both"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", crate::common::describe(&out));
    };
    let copy_count = |d: &Device, prefix: &str| {
        d.client
            .get_buckets()
            .unwrap()
            .into_keys()
            .find(|id| id.starts_with(prefix) && id.contains("-synced-from-"))
            .map(|id| d.client.get_event_count(&id).unwrap())
    };

    ours.sync(f, &["sync"]);
    run_reference();
    assert_eq!(
        copy_count(&theirs, window),
        Some(60),
        "the reference read our file"
    );
    ours.sync(f, &["sync"]);
    assert_eq!(
        copy_count(&ours, "aw-watcher-window_tablet"),
        Some(20),
        "we read the reference's file"
    );

    // A rewrite on our side (ten events deleted): the reference's side keeps its copy and
    // goes on reading our file; new events still reach it.
    let mut http = ours.server.client();
    let r = http.delete(&format!(
        "/api/0/buckets/{window}/events?start=2026-03-01T09:00:00Z&end=2026-03-01T18:30:00Z"
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    ours.client
        .insert_events(
            window,
            vec![crate::common::event(
                100 * 3600,
                60,
                json!({"app": "a", "title": "new"}),
            )],
        )
        .unwrap();
    ours.sync(f, &["sync"]);
    run_reference();
    assert_eq!(
        copy_count(&theirs, window),
        Some(61),
        "the reference keeps its copy and gets the new event"
    );
    theirs
        .client
        .insert_events(
            "aw-watcher-window_tablet",
            crate::common::window_events(5, 9_000),
        )
        .unwrap();
    run_reference();
    ours.sync(f, &["sync"]);
    assert_eq!(copy_count(&ours, "aw-watcher-window_tablet"), Some(25));
}
