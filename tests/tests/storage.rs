//! `GET /api/0/storage` through the real binary (issue 48, item 1): the files' sizes, and a
//! measure of the events per bucket and per year taken over the backup connection, kept and
//! dated; a bad parameter is a 400 with a JSON message. In the encrypted pass of the test
//! command the server has a password, and the measure reads the encrypted file.

use aw_tests::{wait_until, Client, TestServer};
use serde_json::Value;

/// `n` one-second events a minute apart from `start` (RFC 3339) into `bucket`, each with
/// `text` as its title.
fn write(c: &mut Client, bucket: &str, start: &str, n: usize, text: &str) {
    let r = c.post_json(
        &format!("/api/0/buckets/{bucket}"),
        r#"{"client":"c","type":"currentwindow","hostname":"h"}"#,
    );
    assert!(r.status == 200 || r.status == 304, "{}", r.body);
    let start = chrono::DateTime::parse_from_rfc3339(start).unwrap();
    let events: Vec<Value> = (0..n)
        .map(|i| {
            let at = start + chrono::Duration::minutes(i64::try_from(i).unwrap());
            serde_json::json!({"timestamp": at.to_rfc3339(), "duration": 1,
                               "data": {"app": "a", "title": format!("{text} {i}")}})
        })
        .collect();
    let r = c.post_json(
        &format!("/api/0/buckets/{bucket}/events"),
        &Value::from(events).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

fn bucket<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["measure"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["bucket"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

#[test]
fn the_report_counts_every_bucket_and_year_and_says_when_it_measured() {
    let s = TestServer::start();
    let mut c = s.client();
    write(
        &mut c,
        "big",
        "2024-12-31T23:00:00Z",
        300,
        &"long title ".repeat(20),
    );
    write(&mut c, "small", "2025-06-01T00:00:00Z", 50, "t");
    c.post_json(
        "/api/0/buckets/empty",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    c.backup_now();

    let r = c.get("/api/0/storage?fresh=true");
    assert_eq!(r.status, 200, "{}", r.body);
    let report = r.json();
    let measure = &report["measure"];
    assert!(measure["measured_at"].is_string(), "{report}");
    // The largest first; 60 of big's events are in 2024, the rest in 2025.
    let names: Vec<&str> = measure["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["bucket"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["big", "small", "empty"], "{report}");
    assert_eq!(bucket(&report, "big")["events"], 300);
    assert_eq!(bucket(&report, "small")["events"], 50);
    assert_eq!(bucket(&report, "empty")["events"], 0);
    assert_eq!(bucket(&report, "empty")["first_ns"], Value::Null);
    let years: Vec<(i64, u64)> = measure["years"]
        .as_array()
        .unwrap()
        .iter()
        .map(|y| (y["year"].as_i64().unwrap(), y["events"].as_u64().unwrap()))
        .collect();
    assert_eq!(years, [(2024, 60), (2025, 290)], "{report}");
    let big = bucket(&report, "big");
    assert!(big["bytes"].as_u64().unwrap() > 300 * 200, "{report}");
    assert!(big["first_ns"].as_i64() < big["last_ns"].as_i64());
    // The buckets' shares add up to what the events' table and indexes take.
    let events_structures: u64 = measure["structures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("events"))
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    let shared: u64 = measure["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["bytes"].as_u64().unwrap())
        .sum();
    assert!(
        shared <= events_structures && events_structures - shared < 4,
        "{report}"
    );

    let files = &report["files"];
    assert!(files["database"].as_u64().unwrap() > 0, "{report}");
    assert!(
        files["journal_allocated"].as_u64().unwrap() >= files["journal_used"].as_u64().unwrap()
    );
    assert_eq!(files["backup_count"], 1, "{report}");
    assert!(files["backups"].as_u64().unwrap() > 0);
    assert!(report["free_bytes"].is_u64());

    // Kept: the next answer is immediate and carries the same measure.
    let again = c.get("/api/0/storage").json();
    assert_eq!(again["measure"]["measured_at"], measure["measured_at"]);
}

#[test]
fn a_first_look_starts_a_measure_in_the_background() {
    let s = TestServer::start();
    let mut c = s.client();
    write(&mut c, "w", "2025-01-01T00:00:00Z", 20, "t");
    let first = c.get("/api/0/storage");
    assert_eq!(first.status, 200, "{}", first.body);
    let first = first.json();
    assert!(first["files"]["database"].as_u64().unwrap() > 0);
    let mut last = Value::Null;
    wait_until("the background measure", || {
        last = c.get("/api/0/storage").json();
        !last["measure"].is_null() && last["measuring"] == false
    });
    assert_eq!(bucket(&last, "w")["events"], 20, "{last}");
}

#[test]
fn a_bad_parameter_is_a_400_naming_it() {
    let s = TestServer::start();
    let mut c = s.client();
    for path in [
        "/api/0/storage?fresh=yes",
        "/api/0/storage?fresh=true&fresh=true",
    ] {
        let r = c.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert!(
            r.json()["message"].as_str().unwrap().contains("fresh"),
            "{}",
            r.body
        );
    }
}

fn file_size(s: &TestServer) -> u64 {
    std::fs::metadata(s.db_path()).unwrap().len()
}

/// Fills bucket `name` with 3,000 events of 2 kB each (about 6 MB of pages).
fn fill(c: &mut Client, name: &str) {
    for part in 0..3 {
        write(
            c,
            name,
            &format!("202{part}-01-01T00:00:00Z"),
            1000,
            &"wide ".repeat(400),
        );
    }
}

/// `POST /api/0/storage/reclaim` gives a deletion's pages back while serving, on a file this
/// server made: the file is cut to its pages and the WAL emptied.
#[test]
fn a_new_file_gives_the_pages_a_deletion_freed_back_while_serving() {
    let s = TestServer::start();
    let mut c = s.client();
    write(&mut c, "kept", "2025-01-01T00:00:00Z", 100, "t");
    fill(&mut c, "gone");
    let full = c.get("/api/0/storage?fresh=true").json();
    assert_eq!(full["measure"]["auto_vacuum"], "incremental", "{full}");
    let r = c.delete("/api/0/buckets/gone?force=1");
    assert_eq!(r.status, 200, "{}", r.body);
    let r = c.post_json("/api/0/storage/reclaim", "");
    assert_eq!(r.status, 200, "{}", r.body);
    let answer = r.json();
    assert!(
        answer["incremental"] == true && answer["free_after"] == 0,
        "{answer}"
    );
    let pages_before = answer["pages_before"].as_u64().unwrap();
    let pages_after = answer["pages_after"].as_u64().unwrap();
    assert!(pages_after + 1000 < pages_before, "{answer}");
    let bytes = pages_after * answer["page_size"].as_u64().unwrap();
    assert_eq!(answer["file_bytes_after"], bytes, "{answer}");
    assert_eq!(file_size(&s), bytes);
    let report = c.get("/api/0/storage?fresh=true").json();
    assert!(
        report["files"]["wal"].as_u64().unwrap() < 1_000_000,
        "{report}"
    );
    assert_eq!(report["free_bytes"], 0, "{report}");
    assert_eq!(bucket(&report, "kept")["events"], 100);
    let r = c.get("/api/0/buckets/kept/events/count");
    assert_eq!(r.body.trim(), "100");
}

/// A file made in `auto_vacuum=NONE` mode (by the reference, or an older version) cannot
/// give pages back: 409 naming `aw-server compact`, which converts it (the server stopped,
/// a backup first). Plain: the file is set to NONE by SQLite itself, as the reference
/// makes it.
#[test]
fn a_file_without_auto_vacuum_is_told_to_compact_and_compact_converts_it() {
    let mut s = TestServer::start_with_password(None);
    let mut c = s.client();
    write(&mut c, "kept", "2025-01-01T00:00:00Z", 100, "t");
    fill(&mut c, "gone");
    assert!(s.stop());
    let conn = rusqlite::Connection::open(s.db_path()).unwrap();
    conn.execute_batch("PRAGMA auto_vacuum=NONE; VACUUM;")
        .unwrap();
    drop(conn);
    s.start_again();
    let mut c = s.client();
    let r = c.delete("/api/0/buckets/gone?force=1");
    assert_eq!(r.status, 200, "{}", r.body);
    let r = c.post_json("/api/0/storage/reclaim", "");
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("aw-server compact"),
        "{}",
        r.body
    );

    // Refused while the server runs; then, stopped, the file is rewritten.
    let (status, text) = s.run_command(&["compact"], &[]);
    assert!(!status.success(), "{text}");
    let before = file_size(&s);
    assert!(s.stop());
    let (status, text) = s.run_command(&["compact"], &[]);
    assert!(status.success(), "{text}");
    let report: Value = text
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no report in {text}"));
    assert_eq!(report["auto_vacuum_before"], "none", "{report}");
    assert!(
        report["bytes_after"].as_u64().unwrap() + 4_000_000 < before,
        "{report}"
    );
    let backups = std::fs::read_dir(s.db_path().parent().unwrap().join("backups"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(backups >= 1, "no backup before the compaction");
    s.start_again();
    let mut c = s.client();
    let report = c.get("/api/0/storage?fresh=true").json();
    assert_eq!(report["measure"]["auto_vacuum"], "incremental", "{report}");
    assert_eq!(bucket(&report, "kept")["events"], 100);
    let r = c.post_json("/api/0/storage/reclaim", "");
    assert_eq!(r.status, 200, "{}", r.body);
}
