//! The database file's owner (issue 33), against the real binary: nothing the server
//! acknowledged is lost on the paths that are meant to save data — a second start, a
//! failed lock, a restore or salvage killed half way, a SIGKILL during writes, another
//! program writing to the file between two runs — and every file made beside the database
//! keeps its mode.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aw_tests::{Client, TestServer};

/// `sqlite.db*` beside the database, with their inodes: what a process that "touches no
/// file" leaves as it was.
fn database_files(db: &Path) -> Vec<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    let stem = db.file_name().unwrap().to_string_lossy().into_owned();
    let mut files: Vec<(String, u64)> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&stem))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().ino(),
            )
        })
        .collect();
    files.sort();
    files
}

/// A server with bucket `w` holding `before`, a backup of it, then `after` inserted; and
/// the backup's file name.
fn server_with_backup(
    before: std::ops::RangeInclusive<usize>,
    after: std::ops::RangeInclusive<usize>,
) -> (TestServer, String) {
    let s = TestServer::start_with(&["--no-legacy-import"]);
    let mut c = s.client();
    c.create_test_bucket("w");
    for n in before {
        c.insert_numbered("w", n);
    }
    let backup = c.backup_now();
    for n in after {
        c.insert_numbered("w", n);
    }
    (s, backup)
}

#[test]
fn a_second_start_exits_3_and_touches_no_file() {
    let mut s = TestServer::start_with(&["--no-legacy-import"]);
    let mut c = s.client();
    c.create_test_bucket("w");
    c.insert_numbered("w", 1);
    c.insert_numbered("w", 2);
    // A failed salvage while serving leaves this marker; here it is made by hand.
    let db = s.db_path();
    std::fs::write(aw_tests::with_suffix(&db, ".damaged"), "by hand").unwrap();
    let before = database_files(&db);

    let (status, text) = s.run_command(&["--port", "0", "--no-legacy-import"], &[]);
    assert_eq!(status.code(), Some(3), "{text}");
    assert!(text.contains("in use by another aw-server"), "{text}");
    assert_eq!(
        database_files(&db),
        before,
        "the second start touched a file"
    );

    // The first server goes on, and everything it acknowledged is kept.
    c.insert_numbered("w", 3);
    c.insert_numbered("w", 4);
    assert!(s.stop());
    // The marker is still there: this start salvages, and the copy has all four.
    s.start_again();
    assert_eq!(s.client().stored_numbers("w"), [1, 2, 3, 4]);
}

/// A server on a new database whose lock cannot be taken: a lock file that cannot be
/// opened stands in for a file system whose `flock` fails.
fn server_without_flock() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        "/nonexistent-aw-test-folder/lock",
        dir.path().join("sqlite.db.lock"),
    )
    .unwrap();
    TestServer::start_in(dir, &["--no-legacy-import"])
}

#[test]
fn without_the_lock_the_server_serves_but_restore_and_salvage_refuse() {
    let mut s = server_without_flock();
    let mut c = s.client();
    c.create_test_bucket("w");
    c.insert_numbered("w", 1);
    assert!(
        s.output_tail().contains("no file will be replaced"),
        "{}",
        s.output_tail()
    );
    assert!(s.stop());
    let db = s.db_path();
    let before = database_files(&db);
    for command in [vec!["restore", "/nonexistent/backup.db"], vec!["salvage"]] {
        let (status, text) = s.run_command(&command, &[]);
        assert!(!status.success(), "{command:?}: {text}");
        assert!(text.contains("lock"), "{command:?}: {text}");
        assert!(!text.contains("Restored"), "{text}");
        assert_eq!(database_files(&db), before, "{command:?} touched a file");
    }
    s.start_again();
    assert_eq!(s.client().stored_numbers("w"), [1]);
}

/// A restore killed after each step of the replace leaves the old database (before the
/// rename) or the new one (after it), complete; never an empty or a mixed one.
#[test]
fn a_restore_killed_at_any_step_leaves_the_old_or_the_new_database() {
    for step in 1..=4 {
        let (mut s, backup) = server_with_backup(1..=10, 11..=15);
        assert!(s.stop());
        let step_text = step.to_string();
        let (status, text) = s.run_command(
            &["restore", &backup],
            &[("AW_DATASTORE_CRASH_AT_REPLACE_STEP", &step_text)],
        );
        assert!(!status.success(), "step {step}: {text}");
        assert!(!text.contains("Restored"), "step {step}: {text}");
        s.start_again();
        let stored = s.client().stored_numbers("w");
        let expected: Vec<usize> = if step < 3 {
            (1..=15).collect()
        } else {
            (1..=10).collect()
        };
        assert_eq!(stored, expected, "after a crash at step {step}");
        assert!(
            !aw_tests::with_suffix(&s.db_path(), ".replacing").exists(),
            "step {step}: the replace was not finished"
        );
        assert!(s.stop());
    }
}

/// The writes of a client until its server dies: the numbers acknowledged with 200.
fn write_until_gone(port: u16, first: usize) -> std::thread::JoinHandle<Vec<usize>> {
    std::thread::spawn(move || {
        let mut c = Client::new(port);
        let mut acknowledged = Vec::new();
        for n in first.. {
            let body = aw_tests::http::numbered_event(n);
            match c.send_once(
                "POST",
                "/api/0/buckets/w/events",
                &[("Content-Type", "application/json")],
                Some(body.as_bytes()),
            ) {
                Some(r) if r.status == 200 => acknowledged.push(n),
                Some(r) => panic!("answered {}: {}", r.status, r.body),
                None => break,
            }
        }
        acknowledged
    })
}

#[test]
fn a_sigkill_during_a_write_loop_loses_no_acknowledged_write() {
    let mut s = TestServer::start_with(&["--no-legacy-import"]);
    s.client().create_test_bucket("w");
    let mut all = Vec::new();
    for round in 0..5 {
        let writer = write_until_gone(s.port, round * 1_000_000 + 1);
        // Kill points spread over the 15 s group commit's early life and its 100-event
        // trigger.
        std::thread::sleep(Duration::from_millis(150 + 170 * round as u64));
        s.kill();
        let acknowledged = writer.join().unwrap();
        all.extend(acknowledged.iter().copied());
        s.start_again();
        let stored = s.client().stored_numbers("w");
        let missing: Vec<usize> = all
            .iter()
            .filter(|n| stored.binary_search(n).is_err())
            .copied()
            .collect();
        eprintln!(
            "round {round}: {} acknowledged before the kill, {} lost",
            acknowledged.len(),
            missing.len()
        );
        assert!(missing.is_empty(), "lost: {missing:?}");
        let mut unique = stored.clone();
        unique.dedup();
        assert_eq!(unique.len(), stored.len(), "an event was stored twice");
    }
    assert!(s.stop());
}

/// The database opened as another program would (plain SQLite; skipped on encrypted runs).
#[cfg(not(feature = "encrypted"))]
fn other_program(db: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

/// The duration of the event of bucket `w` whose `data.n` is `n`.
#[cfg(not(feature = "encrypted"))]
fn duration_of(c: &mut Client, n: u64) -> f64 {
    let events = c.get("/api/0/buckets/w/events?limit=-1").json();
    let event = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["data"]["n"] == n)
        .unwrap_or_else(|| panic!("no event {n}: {events}"))
        .clone();
    event["duration"].as_f64().unwrap()
}

/// The acknowledged writes of a run killed before its commit are applied once at the next
/// start, also when another program wrote to the file in between and took their ids; and
/// once applied, never again (a newer value is not reverted).
#[test]
#[cfg(not(feature = "encrypted"))] // another program cannot open an encrypted database
fn held_writes_apply_exactly_once_after_another_program_wrote() {
    let mut s = TestServer::start_with(&["--no-legacy-import"]);
    let mut c = s.client();
    c.create_test_bucket("w");
    c.insert_numbered("w", 1);
    // Committed (a bucket's creation is at once; the idle commit follows the event).
    aw_tests::wait_until("the first event's commit", || {
        let conn = other_program(&s.db_path());
        conn.query_row("SELECT count(*) FROM events", [], |r| r.get::<_, i64>(0))
            .unwrap()
            == 1
    });
    // A burst the group commit has not written yet, then the kill.
    for n in 2..=40 {
        c.insert_numbered("w", n);
    }
    // A heartbeat that merges: an update of an acknowledged row, held too.
    let hb = |c: &mut Client, duration: f64| {
        let r = c.post_json(
            "/api/0/buckets/w/heartbeat?pulsetime=60",
            &format!(
                r#"{{"timestamp":"2026-02-01T00:00:00Z","duration":{duration},"data":{{"n":100}}}}"#
            ),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    hb(&mut c, 0.0);
    hb(&mut c, 30.0);
    s.kill();

    let conn = other_program(&s.db_path());
    let in_file: i64 = conn
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert!(
        in_file < 41,
        "the burst was committed already: no held writes to test"
    );
    // Another program writes: new events take the ids ours had answered with, and a
    // bucket of its own.
    let bucketrow: i64 = conn
        .query_row("SELECT id FROM buckets WHERE name = 'w'", [], |r| r.get(0))
        .unwrap();
    for n in 500..510 {
        conn.execute(
            "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (?1, ?2, ?2, ?3)",
            rusqlite::params![
                bucketrow,
                1_700_000_000_000_000_000i64 + n,
                format!(r#"{{"n":{n}}}"#)
            ],
        )
        .unwrap();
    }
    conn.execute(
        "INSERT INTO buckets (name, type, client, hostname, created, data)
         VALUES ('theirs', 't', 'c', 'h', '2026-01-01T00:00:00+00:00', '{}')",
        [],
    )
    .unwrap();
    drop(conn);

    s.start_again();
    let mut c = s.client();
    let mut expected: Vec<usize> = (1..=40).chain([100]).chain(500..510).collect();
    expected.sort_unstable();
    assert_eq!(c.stored_numbers("w"), expected);
    assert_eq!(duration_of(&mut c, 100), 30.0);
    assert_eq!(c.get("/api/0/buckets/theirs").status, 200);

    // A newer value after the replay, then kills: nothing is applied twice or reverted.
    hb(&mut c, 45.0);
    s.kill();
    s.start_again();
    s.kill();
    s.start_again();
    let mut c = s.client();
    assert_eq!(c.stored_numbers("w"), expected);
    assert_eq!(duration_of(&mut c, 100), 45.0);
    assert!(s.stop());
}

/// Held writes never go into a file other than the one they were written for: a file put
/// in place by hand (here, an older copy of the same database) leaves them aside, reported.
#[test]
fn held_writes_are_kept_aside_when_the_file_was_swapped_by_hand() {
    // Committed after the backup (the 100-event trigger), and more after that: the journal
    // now starts after a later commit than the backup's.
    let (mut s, backup) = server_with_backup(1..=1, 2..=130);
    let backup: PathBuf = s.dir.path().join("backups").join(backup);
    s.kill();
    let db = s.db_path();
    for side in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(aw_tests::with_suffix(&db, side));
    }
    std::fs::copy(&backup, &db).unwrap();
    s.start_again();
    assert_eq!(
        s.client().stored_numbers("w"),
        [1],
        "nothing applied to the old copy"
    );
    assert!(
        s.output_tail().contains("is not this database's"),
        "{}",
        s.output_tail()
    );
    let kept: Vec<String> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sqlite.db.journal.unmatched-"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(s.stop());
}

#[test]
fn files_made_beside_a_private_database_stay_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut s = TestServer::start_in(dir, &["--no-legacy-import"]);
    let mut c = s.client();
    c.create_test_bucket("w");
    c.insert_numbered("w", 1);
    assert!(s.stop());
    let db = s.db_path();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    s.start_again();
    s.client().backup_now();
    assert!(s.stop());
    let (status, text) = s.run_command(&["salvage"], &[]);
    assert!(status.success(), "{text}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let folder = s.dir.path().join("backups");
    assert_eq!(mode(&folder), 0o700, "the backup folder");
    let mut checked = 0;
    for entry in std::fs::read_dir(&folder)
        .unwrap()
        .chain(std::fs::read_dir(s.dir.path()).unwrap())
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_file() && name.starts_with("sqlite") {
            assert_eq!(mode(&entry.path()), 0o600, "{name}");
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked} files checked");
    s.start_again();
    assert_eq!(s.client().stored_numbers("w"), [1]);
}

/// Held writes belong to the file they were written for: a restore applies them to the
/// file it keeps aside (so undoing the restore brings them back), never to the backup put
/// in its place.
#[test]
fn a_restore_keeps_held_writes_with_the_file_it_replaces() {
    let (mut s, backup) = server_with_backup(1..=5, 6..=20);
    s.kill();

    let (status, text) = s.run_command(&["restore", &backup], &[]);
    assert!(status.success(), "{text}");
    s.start_again();
    assert_eq!(s.client().stored_numbers("w"), (1..=5).collect::<Vec<_>>());
    assert!(s.stop());

    let replaced = std::fs::read_dir(s.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("sqlite.db.replaced-")
                && !name.ends_with("-wal")
                && !name.ends_with("-shm")
        })
        .expect("the replaced file is kept");
    let (status, text) = s.run_command(&["restore", replaced.to_str().unwrap()], &[]);
    assert!(status.success(), "{text}");
    s.start_again();
    assert_eq!(
        s.client().stored_numbers("w"),
        (1..=20).collect::<Vec<_>>(),
        "undoing the restore brings back the held writes"
    );
    assert!(s.stop());
}

/// A SIGKILL at several instants while a whole-history deletion of 100,000 events runs
/// over HTTP (issue 36, item 6): after a restart the bucket holds all of its events or
/// none, never a part, and none if the deletion had been answered. The kills fall at a
/// fifth, half, four fifths and nineteen twentieths of how long one uninterrupted deletion
/// took on this machine. Whatever instant a kill meets (the preview, the backup, a step,
/// the seal, the commit), the verdict is the same; that a kill between two steps is among them is shown without a clock by
/// `aw-datastore/tests/durability.rs::a_kill_in_the_middle_of_a_range_deletion_leaves_none_of_it`.
#[test]
fn a_sigkill_during_a_range_deletion_leaves_all_or_none_of_it() {
    const EVENTS: u64 = 100_000;
    let mut s = TestServer::start_with(&["--no-legacy-import"]);
    let seed = |c: &mut Client| {
        let events: Vec<String> = (0..EVENTS)
            .map(|i| {
                format!(
                    r#"{{"timestamp":"2025-01-01T00:00:00Z","duration":{i},"data":{{"n":{i}}}}}"#
                )
            })
            .collect();
        let r = c.post_json(
            "/api/0/buckets/big/events",
            &format!("[{}]", events.join(",")),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    };
    let count = |c: &mut Client| -> u64 {
        let r = c.get("/api/0/buckets/big/events/count");
        assert_eq!(r.status, 200, "{}", r.body);
        r.json().as_u64().unwrap()
    };
    const ALL: &str =
        "/api/0/buckets/big/events?start=2000-01-01T00:00:00Z&end=2100-01-01T00:00:00Z";
    let mut c = s.client();
    c.create_test_bucket("big");
    seed(&mut c);
    let began = Instant::now();
    assert_eq!(c.delete(ALL).status, 200);
    let whole = began.elapsed();
    seed(&mut c);
    for (round, fraction) in [0.2, 0.5, 0.8, 0.95].into_iter().enumerate() {
        let port = s.port;
        let deletion = std::thread::spawn(move || {
            Client::new(port)
                .send_once("DELETE", ALL, &[], None)
                .map(|r| r.status)
        });
        std::thread::sleep(whole.mul_f64(fraction));
        s.kill();
        let answered = deletion.join().unwrap();
        s.start_again();
        let mut c = s.client();
        let left = count(&mut c);
        eprintln!(
            "round {round} (after {:?} of {whole:?}): answered {answered:?}, {left} events left",
            whole.mul_f64(fraction)
        );
        assert!(
            left == EVENTS || left == 0,
            "round {round}: a part is left: {left}"
        );
        if answered == Some(200) {
            assert_eq!(left, 0, "round {round}: an answered deletion was lost");
        }
        if left == 0 {
            seed(&mut c);
        }
    }
    assert!(s.stop());
}

/// Issue 44, case 7: where `flock` fails, a second server is refused all the same (by the
/// owner file, `<db>.owner`), so it never applies or appends to the first one's journal;
/// the owner file a killed server left is taken over by the next start.
#[test]
fn without_flock_a_second_server_is_refused_all_the_same() {
    let mut s = server_without_flock();
    let mut c = s.client();
    c.create_test_bucket("w");
    for n in 1..=3 {
        c.insert_numbered("w", n);
    }
    let port = aw_tests::free_port().to_string();
    let (status, text) = s.run_command(&["--port", &port], &[]);
    assert_eq!(status.code(), Some(3), "{text}");
    c.insert_numbered("w", 4);
    s.kill();
    s.start_again();
    assert_eq!(s.client().stored_numbers("w"), [1, 2, 3, 4]);
}

/// Issue 44, case 7: `aw-server backup` with no server running holds the database's lock
/// while it copies, and first applies what a killed server's journal held, so the backup
/// has every acknowledged write.
#[test]
fn a_backup_with_no_server_running_holds_every_acknowledged_write() {
    let (mut s, _) = server_with_backup(1..=3, 4..=6);
    s.kill();
    let (status, text) = s.run_command(&["backup"], &[]);
    assert!(status.success(), "{text}");
    let file = text
        .lines()
        .find_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .and_then(|entry| entry["file"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no backup named in {text}"));
    let (status, text) = s.run_command(&["restore", &file], &[]);
    assert!(status.success(), "{text}");
    s.start_again();
    assert_eq!(s.client().stored_numbers("w"), (1..=6).collect::<Vec<_>>());
}
