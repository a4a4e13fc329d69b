//! Encryption at rest, through the real binary (issue 16).
//!
//! Against a default build: a set `AW_DB_PASSWORD` refuses to start (no plaintext is written
//! for a user who asked for encryption). Against an `encryption` build: the file on disk is
//! not readable without the password, a wrong, empty or missing password is refused at
//! startup with a clear message that never contains the password, and `encrypt-db` /
//! `decrypt-db` move a database between plain and encrypted with nothing lost.

use aw_tests::TestServer;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PASSWORD: &str = "correct horse battery staple";

/// Runs `cmd` until it exits (killing it after 30 s); returns whether it succeeded and what
/// it printed.
fn run_to_exit(mut cmd: Command) -> (bool, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LOG_LEVEL", "info")
        .spawn()
        .expect("cannot start aw-server");
    let deadline = Instant::now() + aw_tests::HANG_GUARD;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("aw-server kept running; it should have refused to start");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    for mut pipe in [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn Read>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn Read>),
    ]
    .into_iter()
    .flatten()
    {
        let _ = pipe.read_to_string(&mut out);
    }
    (status.success(), out)
}

/// The server's command on its own database, with `password` (or none) in the environment.
fn command(s: &TestServer, password: Option<&str>) -> Command {
    let mut cmd = s.command();
    cmd.env_remove("AW_DB_PASSWORD");
    if let Some(p) = password {
        cmd.env("AW_DB_PASSWORD", p);
    }
    cmd.arg("--dbpath").arg(s.db_path()).arg("--port").arg("0");
    cmd
}

/// Every bucket with its events, as the export shows them.
#[cfg(feature = "encrypted")]
fn export(s: &TestServer) -> serde_json::Value {
    let r = s.client().get("/api/0/export");
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

/// A server on a new database encrypted with [`PASSWORD`], with a window bucket `w`.
#[cfg(feature = "encrypted")]
fn encrypted_server_with_bucket_w() -> TestServer {
    let s = TestServer::start_with_password(Some(PASSWORD));
    let r = s.client().post_json(
        "/api/0/buckets/w",
        r#"{"type":"currentwindow","client":"c","hostname":"h"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    s
}

/// Inserts one event titled `title` into "w" on 2024-05-01.
#[cfg(feature = "encrypted")]
fn insert_titled(s: &TestServer, title: &str) {
    let body = format!(
        r#"[{{"timestamp":"2024-05-01T10:00:00Z","duration":5,"data":{{"title":"{title}"}}}}]"#
    );
    let r = s.client().post_json("/api/0/buckets/w/events", &body);
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
#[cfg(not(feature = "encrypted"))]
fn a_default_build_refuses_a_password() {
    let mut s = TestServer::start_with_password(None);
    assert!(s.stop());
    let (ok, out) = run_to_exit(command(&s, Some(PASSWORD)));
    assert!(!ok);
    assert!(out.contains("no database encryption"), "{out}");
    assert!(!out.contains(PASSWORD));
}

#[test]
#[cfg(feature = "encrypted")]
fn an_encrypted_database_is_unreadable_without_its_password() {
    let mut s = encrypted_server_with_bucket_w();
    let marker = "a-window-title-nobody-else-writes";
    insert_titled(&s, marker);
    let before = export(&s);
    assert!(s.stop());

    // On disk: no SQLite header, no event text (the WAL was checkpointed at the stop).
    let mut bytes = std::fs::read(s.db_path()).unwrap();
    if let Ok(wal) = std::fs::read(format!("{}-wal", s.db_path().display())) {
        bytes.extend(wal);
    }
    assert!(!bytes.starts_with(b"SQLite format 3\0"));
    assert!(!bytes.windows(marker.len()).any(|w| w == marker.as_bytes()));

    // Wrong, empty and missing passwords are refused at startup, never echoing a password.
    for (password, says) in [
        (Some("wrong password"), "password is wrong"),
        (Some(""), "empty"),
        (None, "encrypted"),
    ] {
        let (ok, out) = run_to_exit(command(&s, password));
        assert!(!ok, "started with {password:?}: {out}");
        assert!(out.contains(says), "{password:?}: {out}");
        assert!(!out.contains(PASSWORD) && !out.contains("wrong password"));
    }

    // The right password reads everything.
    s.start_again();
    assert_eq!(export(&s), before);
}

/// The journal of acknowledged writes (`sqlite.db.journal`, beside the database) holds
/// every write until its commit: with an encrypted database its records are encrypted, so a
/// title written and then cut off by a SIGKILL is nowhere on disk in the clear, and it is
/// there after the restart.
#[test]
#[cfg(feature = "encrypted")]
fn the_journal_of_an_encrypted_database_holds_no_text_and_survives_a_kill() {
    let mut s = encrypted_server_with_bucket_w();
    let marker = "a-title-only-the-journal-holds";
    heartbeats_then_kill(&mut s, marker, 10);
    let journal = std::fs::read(format!("{}.journal", s.db_path().display())).unwrap();
    assert!(journal.len() > 64, "the journal holds the records");
    assert_no_file_holds(&s, marker);
    s.start_again();
    let r = s.client().get("/api/0/buckets/w/events?limit=100");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json().as_array().map(Vec::len), Some(20), "{}", r.body);
    assert!(r.body.contains(&format!("{marker}-19")));
}

/// The query results kept beside an encrypted database between runs (`<db>.derived`) are
/// encrypted too: the answer holds a title, the file does not; the next start reads them
/// back with the database's key.
#[test]
#[cfg(feature = "encrypted")]
fn the_kept_query_results_of_an_encrypted_database_hold_no_text() {
    let mut s = encrypted_server_with_bucket_w();
    let marker = "a-title-only-the-answer-holds";
    insert_titled(&s, marker);
    let query = serde_json::json!({
        "timeperiods": ["2024-05-01T00:00:00Z/2024-05-02T00:00:00Z"],
        "query": ["RETURN = query_bucket(\"w\");"],
    })
    .to_string();
    let answer = s.client().post_json("/api/0/query/", &query);
    assert!(answer.body.contains(marker), "{}", answer.body);
    assert!(s.stop());
    let kept = std::fs::read(format!("{}.derived", s.db_path().display())).unwrap();
    assert!(!kept.windows(marker.len()).any(|w| w == marker.as_bytes()));
    s.start_again();
    let mut c = s.client();
    aw_tests::wait_until("the kept results are read back", || {
        c.get("/api/0/query/cache").json()["restoring"] == false
    });
    assert_eq!(c.get("/api/0/query/cache").json()["restored"], 1);
    assert_eq!(c.post_json("/api/0/query/", &query).body, answer.body);
    assert_eq!(c.get("/api/0/query/cache").json()["hits"], 1);
}

/// 20 heartbeats into "w" titled `marker-0` … `marker-19`, in hour `hour` of 2024-05-01, then
/// a kill before the commit (15 s away): they are in the journal only.
#[cfg(feature = "encrypted")]
fn heartbeats_then_kill(s: &mut TestServer, marker: &str, hour: u32) {
    for i in 0..20 {
        let body = format!(
            r#"{{"timestamp":"2024-05-01T{hour:02}:00:{i:02}Z","duration":0,"data":{{"title":"{marker}-{i}"}}}}"#
        );
        let r = s
            .client()
            .post_json("/api/0/buckets/w/heartbeat?pulsetime=0", &body);
        assert_eq!(r.status, 200, "{}", r.body);
    }
    s.kill();
}

/// No file in the database's folder contains `text`.
#[cfg(feature = "encrypted")]
fn assert_no_file_holds(s: &TestServer, text: &str) {
    let folder = s.db_path().parent().unwrap().to_path_buf();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(text.len()).any(|w| w == text.as_bytes()),
                "{} holds the title in the clear",
                path.display()
            );
        }
    }
}

/// The events of "w".
#[cfg(feature = "encrypted")]
fn events_of_w(s: &TestServer) -> String {
    let r = s.client().get("/api/0/buckets/w/events?limit=1000");
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// `decrypt-db` and `encrypt-db` after a kill: the acknowledged writes only the journal
/// held are in the converted file (the journal is applied first: the converted file could
/// not read a journal sealed for the other), and no file beside an encrypted database
/// holds them in the clear afterwards.
#[test]
#[cfg(feature = "encrypted")]
fn a_conversion_after_a_kill_keeps_what_only_the_journal_held() {
    let mut s = encrypted_server_with_bucket_w();
    heartbeats_then_kill(&mut s, "decrypted-after-a-kill", 10);
    let mut decrypt = command(&s, Some(PASSWORD));
    decrypt.arg("decrypt-db");
    let (ok, out) = run_to_exit(decrypt);
    assert!(ok, "{out}");
    s.password = None;
    s.start_again();
    assert!(events_of_w(&s).contains("decrypted-after-a-kill-19"));
    heartbeats_then_kill(&mut s, "encrypted-after-a-kill", 11);
    let mut encrypt = command(&s, Some(PASSWORD));
    encrypt.arg("encrypt-db");
    let (ok, out) = run_to_exit(encrypt);
    assert!(ok, "{out}");
    assert_no_file_holds(&s, "encrypted-after-a-kill");
    s.password = Some(PASSWORD.into());
    s.start_again();
    let events = events_of_w(&s);
    assert!(events.contains("encrypted-after-a-kill-19"), "{events}");
    assert!(events.contains("decrypted-after-a-kill-0"), "{events}");
}

/// `encrypt-db` and `decrypt-db` on the benchmark's generated year: every event survives
/// both ways, and the files are what they claim to be.
#[test]
#[cfg(feature = "encrypted")]
fn encrypt_and_decrypt_round_trip_a_year_exactly() {
    let mut s = TestServer::start_with_password(None);
    let data = aw_tests::year::generate(365);
    let r = s.client().post_json("/api/0/import", &data.export_json());
    assert_eq!(r.status, 200, "{}", r.body);
    let before = export(&s);
    assert!(s.stop());
    let header = |s: &TestServer| std::fs::read(s.db_path()).unwrap()[..16].to_vec();
    assert_eq!(header(&s), b"SQLite format 3\0");

    let mut encrypt = command(&s, Some(PASSWORD));
    encrypt.arg("encrypt-db");
    let (ok, out) = run_to_exit(encrypt);
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!("{} events", data.event_count())),
        "{out}"
    );
    assert_ne!(header(&s), b"SQLite format 3\0");
    s.password = Some(PASSWORD.into());
    s.start_again();
    assert_eq!(export(&s), before);
    assert!(s.stop());

    let mut decrypt = command(&s, Some(PASSWORD));
    decrypt.arg("decrypt-db");
    let (ok, out) = run_to_exit(decrypt);
    assert!(ok, "{out}");
    assert_eq!(header(&s), b"SQLite format 3\0");
    s.password = None;
    s.start_again();
    assert_eq!(export(&s), before);
}

/// When the suite runs on encrypted databases (`AW_TEST_DB_PASSWORD`, the second pass of
/// `scripts/test-all.sh`), every test server's file really is encrypted.
#[test]
#[cfg(feature = "encrypted")]
fn the_suite_runs_on_encrypted_files_when_asked() {
    let mut s = TestServer::start();
    assert!(s.stop());
    let bytes = std::fs::read(s.db_path()).unwrap();
    assert!(!bytes.starts_with(b"SQLite format 3\0"));
}
