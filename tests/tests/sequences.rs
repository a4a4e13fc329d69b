//! Ordinary sequences of the database file's life that once lost acknowledged writes
//! (issue 44), each against the real binary: every step is an everyday one (a preview
//! before a deletion, a backup, a restore, a start, another program reading the file); the
//! loss lived in their order. The in-process simulation
//! (`aw-datastore/tests/file_life.rs`) walks random sequences of the same steps; these are
//! its named regressions through the server.

use aw_tests::TestServer;

/// A server on a new database with bucket `w` holding the events numbered `numbers`,
/// committed (a backup commits first).
fn server_with(numbers: std::ops::RangeInclusive<usize>) -> TestServer {
    let s = TestServer::start_with(&["--no-legacy-import"]);
    let mut c = s.client();
    c.create_test_bucket("w");
    for n in numbers {
        c.insert_numbered("w", n);
    }
    c.backup_now();
    s
}

fn restore(s: &TestServer, backup: &str) {
    let (status, text) = s.run_command(&["restore", backup], &[]);
    assert!(status.success(), "restore {backup}: {text}");
}

fn numbers(s: &TestServer) -> Vec<usize> {
    s.client().stored_numbers("w")
}

/// Case 1: a preview (a dry run appends a record that changes no row), then a commit with
/// nothing to commit (a backup), then writes and a kill. The commit must store the number
/// the preview moved, or the journal's header runs ahead of the database and the next
/// start puts the journal, with the writes after it, aside.
#[test]
fn writes_after_a_preview_and_an_empty_commit_survive_a_kill() {
    let mut s = server_with(1..=5);
    let mut c = s.client();
    let preview = c.delete(
        "/api/0/buckets/w/events?start=2000-01-01T00:00:00Z&end=2000-01-02T00:00:00Z&dry_run=true",
    );
    assert_eq!(preview.status, 200, "{}", preview.body);
    c.backup_now();
    for n in 6..=8 {
        c.insert_numbered("w", n);
    }
    s.kill();
    s.start_again();
    assert_eq!(
        numbers(&s),
        (1..=8).collect::<Vec<_>>(),
        "{}",
        s.output_tail()
    );
    let aside = std::fs::read_dir(s.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".unmatched-"))
        .count();
    assert_eq!(aside, 0, "no journal was put aside");
}

/// Case 2: a deletion undone by restoring the backup taken before it, then two starts:
/// the deletion's records, committed into the file the restore replaced, must never be
/// applied to the restored one.
#[test]
fn an_undone_deletion_stays_undone_across_starts() {
    let mut s = server_with(1..=5);
    let mut c = s.client();
    let all = c.get("/api/0/buckets/w/events?limit=-1").json();
    let ids: Vec<i64> = all
        .as_array()
        .unwrap()
        .iter()
        .take(2)
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    let deleted = c.post_json(
        "/api/0/buckets/w/events/delete",
        &format!(r#"{{"ids": {ids:?}}}"#),
    );
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let backup = deleted.json()["backup"].as_str().unwrap().to_string();
    assert_eq!(numbers(&s).len(), 3);
    assert!(s.stop());
    restore(&s, &backup);
    for start in 1..=3 {
        s.start_again();
        assert_eq!(numbers(&s), (1..=5).collect::<Vec<_>>(), "start {start}");
        assert!(s.stop());
    }
}

/// Case 2, the other way: one backup restored twice, with writes between. The second
/// restore must yield the backup's contents, and nothing written after it must come back
/// at the start after.
#[test]
fn a_backup_restored_twice_yields_its_contents_each_time() {
    let mut s = server_with(1..=3);
    let backup = s.client().backup_now();
    let mut c = s.client();
    for n in 4..=6 {
        c.insert_numbered("w", n);
    }
    assert!(s.stop());
    restore(&s, &backup);
    s.start_again();
    assert_eq!(numbers(&s), vec![1, 2, 3]);
    let mut c = s.client();
    for n in 7..=9 {
        c.insert_numbered("w", n);
    }
    assert!(s.stop());
    restore(&s, &backup);
    s.start_again();
    assert_eq!(numbers(&s), vec![1, 2, 3]);
    assert!(s.stop());
    s.start_again();
    assert_eq!(numbers(&s), vec![1, 2, 3], "nothing from after the restore");
    let mut c = s.client();
    c.insert_numbered("w", 10);
    s.kill();
    s.start_again();
    assert_eq!(
        numbers(&s),
        vec![1, 2, 3, 10],
        "and what comes after it is kept"
    );
}

/// Runs the `sqlite3` command (another program, as users' scripts run it: Debian's, with
/// its own SQLite) on the database; `None` when there is no such command.
#[cfg(not(feature = "encrypted"))]
fn another_program(db: &std::path::Path, sql: &str) -> Option<String> {
    let out = match std::process::Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("cannot run sqlite3: {e}"),
    };
    assert!(out.status.success(), "{}", aw_tests::output_text(&out));
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Case 3: a database the server made, read by another program while the server runs (as
/// users' scripts do with `sqlite3`). No descriptor of the server's may drop SQLite's
/// locks, or that program's clean close deletes the live WAL, and every commit after it
/// goes to a deleted file. (A plain database: the other program cannot open an encrypted
/// one.)
#[cfg(not(feature = "encrypted"))]
#[test]
fn another_program_reading_a_new_database_takes_nothing_from_it() {
    let mut s = TestServer::start_with(&["--no-legacy-import"]);
    let db = s.db_path();
    let mut c = s.client();
    c.create_test_bucket("w");
    c.insert_numbered("w", 1);
    c.backup_now();
    let wal = aw_tests::with_suffix(&db, "-wal");
    assert!(wal.exists(), "the server's WAL");
    let Some(count) = another_program(&db, "SELECT count(*) FROM events") else {
        aw_tests::prerequisite_missing("the sqlite3 command (Debian's sqlite3 package)");
        return;
    };
    assert_eq!(count, "1");
    assert!(
        wal.exists(),
        "the other program's close left the server's WAL in place"
    );
    for n in 2..=11 {
        c.insert_numbered("w", n);
    }
    // Committed into the WAL the server has open.
    c.backup_now();
    s.kill();
    s.start_again();
    assert_eq!(
        numbers(&s),
        (1..=11).collect::<Vec<_>>(),
        "{}",
        s.output_tail()
    );
}
