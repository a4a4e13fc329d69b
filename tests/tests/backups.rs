//! Backups through the real binary (issue 25, items 1 and 2): taken on demand, verified,
//! listed, rotated, refused when the disk would be too full, guarded by the API key;
//! `aw-server backup` through a running server and directly; `aw-server restore` refused
//! while the server runs, and restoring a damaged database, which is kept aside. In the
//! encrypted pass of the test command every server here has a password, and the backups
//! must stay encrypted.

use std::path::{Path, PathBuf};
use std::process::Output;

use aw_tests::{Client, TestServer};
use serde_json::Value;

/// A server whose config puts backups in `folder`, with `extra` config lines; and the
/// config file's path (for the commands).
fn server(folder: &Path, extra: &str, top: &str) -> (TestServer, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "{top}\n[backup]\nfolder = \"{}\"\n{extra}",
            folder.display()
        ),
    )
    .unwrap();
    let s = TestServer::start_with(&["--config", config.to_str().unwrap()]);
    (s, config, dir)
}

fn seed(c: &mut Client, n: usize, offset: usize) {
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    let events: Vec<String> = (offset..offset + n)
        .map(|i| {
            format!(
                r#"{{"timestamp":"2026-01-01T00:{:02}:{:02}Z","duration":1,"data":{{"n":{i}}}}}"#,
                i / 60,
                i % 60
            )
        })
        .collect();
    let r = c.post_json(
        "/api/0/buckets/b/events",
        &format!("[{}]", events.join(",")),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

fn files(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn encrypted() -> bool {
    std::env::var_os("AW_TEST_DB_PASSWORD").is_some()
}

/// A plain SQLite file starts with this; an encrypted one does not.
fn is_plain_sqlite(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.starts_with(b"SQLite format 3\0"))
}

#[test]
fn on_demand_backups_are_verified_listed_and_rotated() {
    let folder = tempfile::tempdir().unwrap();
    let (s, _, _dir) = server(folder.path(), "", "");
    let mut c = s.client();
    seed(&mut c, 100, 0);
    let r = c.post_json("/api/0/backups", "");
    assert_eq!(r.status, 200, "{}", r.body);
    let first = r.json();
    assert_eq!(first["verdict"], "verified");
    assert_eq!(first["kind"], "scheduled");
    let first_file = first["file"].as_str().unwrap().to_string();
    let path = folder.path().join(&first_file);
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        first["size"].as_u64().unwrap()
    );
    assert_eq!(
        is_plain_sqlite(&path),
        !encrypted(),
        "the backup keeps the database's encryption"
    );

    let status = c.get("/api/0/backups").json();
    assert_eq!(status["enabled"], true);
    assert_eq!(status["folder"], folder.path().to_str().unwrap());
    assert_eq!(status["backups"].as_array().unwrap().len(), 1, "{status}");
    assert_eq!(
        status["last_attempt"]["backup"]["file"],
        first_file.as_str()
    );

    // A second one the same day replaces the first (the newest of each day is kept). Taken
    // within the same second, it has a name of its own: names carry a sequence number
    // (`-n<seq>`), which also makes it the newest.
    seed(&mut c, 10, 100);
    let second = c.post_json("/api/0/backups", "").json();
    assert_ne!(second["file"], first["file"]);
    assert_eq!(files(folder.path()), [second["file"].as_str().unwrap()]);
    let listed = c.get("/api/0/backups").json();
    assert_eq!(listed["backups"][0]["file"], second["file"], "{listed}");
}

#[test]
fn automatic_backups_are_taken_on_schedule() {
    let folder = tempfile::tempdir().unwrap();
    // Every 2 s: the first one after 1 s.
    let (s, _, _dir) = server(folder.path(), "interval_hours = 0.00056\n", "");
    let mut c = s.client();
    seed(&mut c, 20, 0);
    let deadline = std::time::Instant::now() + aw_tests::HANG_GUARD;
    loop {
        let status = c.get("/api/0/backups").json();
        if status["backups"].as_array().is_some_and(|b| !b.is_empty()) {
            assert_eq!(status["last_attempt"]["error"], Value::Null, "{status}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no automatic backup: {status}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Off: the scheduler still looks when one is due (after 1 s), and takes none. Its look
    // is recorded once it has acted on it, so nothing can still be on its way.
    let off = tempfile::tempdir().unwrap();
    let (s, _, _dir) = server(
        off.path(),
        "enabled = false\ninterval_hours = 0.00056\n",
        "",
    );
    let mut c = s.client();
    aw_tests::wait_until("the backup scheduler's first look", || {
        !c.get("/api/0/backups").json()["last_check"].is_null()
    });
    assert!(files(off.path()).is_empty());
    let status = c.get("/api/0/backups").json();
    assert_eq!(status["enabled"], false);
    assert_eq!(status["last_attempt"], Value::Null, "{status}");
}

#[test]
fn a_backup_is_refused_when_the_disk_would_be_too_full_and_needs_the_api_key() {
    let folder = tempfile::tempdir().unwrap();
    let (s, _, _dir) = server(
        folder.path(),
        "min_free_mb = 1000000000\n",
        "[auth]\napi_key = \"secret\"",
    );
    let mut c = s.client();
    assert_eq!(c.post_json("/api/0/backups", "").status, 401);
    assert_eq!(c.get("/api/0/backups").status, 401);
    let key = [("Authorization", "Bearer secret")];
    let r = c.request("POST", "/api/0/backups", &key, Some(b""));
    assert_eq!(r.status, 507, "{}", r.body);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("not enough free space"),
        "{}",
        r.body
    );
    assert!(files(folder.path()).is_empty(), "nothing written");
    let status = c.request("GET", "/api/0/backups", &key, None).json();
    assert!(
        status["last_attempt"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("1000000000 MiB must stay free")),
        "{status}"
    );
}

fn run(s: &TestServer, config: &Path, args: &[&str]) -> (Output, String) {
    let out = s
        .command()
        .arg("--dbpath")
        .arg(s.db_path())
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    let text = aw_tests::output_text(&out);
    (out, text)
}

/// The JSON line a command printed last (log lines go to stdout too).
fn last_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn count(c: &mut Client) -> i64 {
    c.get("/api/0/buckets/b/events/count").body.parse().unwrap()
}

#[test]
fn the_backup_and_restore_commands_keep_the_damaged_file_aside() {
    let folder = tempfile::tempdir().unwrap();
    let (mut s, config, _dir) = server(folder.path(), "", "");
    let mut c = s.client();
    seed(&mut c, 50, 0);

    // Through the running server: it writes and lists the backup.
    let (out, text) = run(&s, &config, &["backup"]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Asking the running server"), "{text}");
    let through_server = last_json(&out);
    let listed = c.get("/api/0/backups").json();
    assert_eq!(listed["backups"][0]["file"], through_server["file"]);

    // Restoring under a running server is refused, with the code that means "in use".
    let (out, text) = run(&s, &config, &["restore"]);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("in use by another aw-server"), "{text}");

    seed(&mut c, 25, 50);
    assert!(s.stop());
    // Directly, with no server running; newer than the first by its sequence number, even
    // within the same second.
    let (out, text) = run(&s, &config, &["backup"]);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("Asking the running server"), "{text}");
    let newest = last_json(&out);

    // The database is damaged: pages in the middle overwritten.
    let db = s.db_path();
    let mut bytes = std::fs::read(&db).unwrap();
    let (middle, len) = (bytes.len() / 2, bytes.len());
    for b in &mut bytes[middle..(middle + 8192).min(len)] {
        *b = 0x77;
    }
    std::fs::write(&db, &bytes).unwrap();

    // A damaged backup is not restored, and the database is left as it is.
    let broken = folder.path().join("broken.db");
    std::fs::write(&broken, &bytes).unwrap();
    let (out, text) = run(&s, &config, &["restore", broken.to_str().unwrap()]);
    assert!(!out.status.success(), "{text}");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "unchanged");

    // The newest good backup is restored; the damaged file is kept aside.
    let (out, text) = run(&s, &config, &["restore"]);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(newest["file"].as_str().unwrap()), "{text}");
    let aside: Vec<PathBuf> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains("sqlite.db.replaced-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read(&aside[0]).unwrap(),
        bytes,
        "the damaged file is kept whole"
    );
    s.start_again();
    let mut c = s.client();
    assert_eq!(count(&mut c), 75);
}

/// A restore brings back every committed event of the file it is given, those in its WAL
/// too: a database copied as it lay after a kill (and the file a restore keeps aside) holds
/// its last commits there, and a copy of the main file alone once said "Restored" and
/// brought back nothing.
#[test]
fn a_restore_brings_back_the_commits_in_the_given_files_wal() {
    let folder = tempfile::tempdir().unwrap();
    let (mut s, config, _dir) = server(folder.path(), "", "");
    let mut c = s.client();
    // More than 100 events: committed after the insert, before the worker answers its next
    // request (an event read; a count is answered without the worker).
    seed(&mut c, 101, 0);
    let read = c.get("/api/0/buckets/b/events?limit=1");
    assert_eq!(read.status, 200, "{}", read.body);
    s.kill();
    let db = s.db_path();
    let wal = aw_tests::with_suffix(&db, "-wal");
    assert!(
        std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0),
        "the commits are in the WAL"
    );
    let given = folder.path().join("given.db");
    std::fs::copy(&db, &given).unwrap();
    std::fs::copy(&wal, aw_tests::with_suffix(&given, "-wal")).unwrap();
    for file in [db.clone(), wal, aw_tests::with_suffix(&db, "-shm")] {
        let _ = std::fs::remove_file(file);
    }

    let (out, text) = run(&s, &config, &["restore", given.to_str().unwrap()]);
    assert!(out.status.success(), "{text}");
    s.start_again();
    let mut c = s.client();
    assert_eq!(
        count(&mut c),
        101,
        "every committed event of the given file"
    );
}

/// A clock that jumped (back, or ahead and then back) leaves backups whose times are after
/// the one written now: that one is still kept by rotation (it is the newest by its number)
/// and a plain `restore` picks it.
#[test]
fn after_a_clock_jump_the_backup_just_written_is_kept_and_restored() {
    for days in [3i64, -3] {
        let folder = tempfile::tempdir().unwrap();
        let (mut s, config, _dir) = server(folder.path(), "keep_daily = 1\nkeep_weekly = 0", "");
        let mut c = s.client();
        seed(&mut c, 5, 0);
        let r = c.request("POST", "/api/0/backups", &[], None);
        assert_eq!(r.status, 200, "{}", r.body);
        let first = r.json()["file"].as_str().unwrap().to_string();
        // Its name as the jumped clock wrote it: `days` away from now, same number.
        let shifted = chrono::Utc::now() + chrono::Duration::days(days);
        let (_, seq) = first.rsplit_once("-n").unwrap();
        let renamed = format!("sqlite-{}-n{seq}", shifted.format("%Y-%m-%dT%H-%M-%SZ"));
        std::fs::rename(folder.path().join(&first), folder.path().join(&renamed)).unwrap();

        seed(&mut c, 5, 5);
        let r = c.request("POST", "/api/0/backups", &[], None);
        assert_eq!(r.status, 200, "{}", r.body);
        let newest = r.json()["file"].as_str().unwrap().to_string();
        assert!(
            files(folder.path()).contains(&newest),
            "clock {days:+} days: the backup just written was rotated away: {:?}",
            files(folder.path())
        );
        let listed = c.get("/api/0/backups").json();
        assert_eq!(listed["backups"][0]["file"], newest.as_str(), "{listed}");
        seed(&mut c, 5, 10);
        assert!(s.stop());
        let (out, text) = run(&s, &config, &["restore"]);
        assert!(out.status.success(), "{text}");
        assert!(text.contains(&newest), "{text}");
        s.start_again();
        assert_eq!(count(&mut s.client()), 10, "clock {days:+} days");
    }
}
