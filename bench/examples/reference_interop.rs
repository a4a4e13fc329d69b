//! The database file shared with another server (issue 33): ours is killed with writes in
//! its journal, the reference server (or any other build) then runs on the same file, with
//! our lock and side files beside it, and writes; ours starts again. Prints what each saw
//! and fails when an acknowledged write is missing or stored twice.
//!
//! ```sh
//! cargo build --release -p aw-server
//! cargo run --release -p aw-bench --example reference_interop -- REF_BIN
//! ```
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;

use aw_tests::{Client, TestServer};

fn insert(c: &mut Client, n: usize) {
    let body =
        format!(r#"[{{"timestamp":"2026-01-01T00:00:00Z","duration":{n},"data":{{"n":{n}}}}}]"#);
    let r = c.post_json("/api/0/buckets/w/events", &body);
    assert_eq!(r.status, 200, "{}", r.body);
}

fn main() {
    let other = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: reference_interop OTHER_SERVER_BINARY"),
    );
    let mut s = TestServer::start_with(&["--no-legacy-import"]);
    let mut c = s.client();
    c.create_test_bucket("w");
    for n in 1..=30 {
        insert(&mut c, n);
    }
    s.kill();
    let side: Vec<String> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sqlite.db"))
        .collect();
    println!("ours killed after 30 acknowledged inserts; beside the database: {side:?}");

    s.binary = Some(other.clone());
    s.args.clear();
    s.start_again();
    let mut c = s.client();
    let seen = c.stored_numbers("w");
    println!(
        "{}: opened the file, sees {} of ours (the rest wait in our journal)",
        other.display(),
        seen.len()
    );
    for n in 100..110 {
        insert(&mut c, n);
    }
    assert!(s.stop(), "{} did not stop cleanly", other.display());
    // What it left in the file (a server that does not commit at its stop loses its own
    // uncommitted writes: that is not ours to bring back).
    let conn = rusqlite::Connection::open(s.db_path()).unwrap();
    let theirs: Vec<usize> = conn
        .prepare(
            "SELECT json_extract(data, '$.n') FROM events WHERE json_extract(data, '$.n') >= 100",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, i64>(0))
        .unwrap()
        .map(|n| n.unwrap() as usize)
        .collect();
    drop(conn);
    println!(
        "{}: wrote 10 events and stopped; {} of them are in the file",
        other.display(),
        theirs.len()
    );

    s.binary = None;
    s.args = vec!["--no-legacy-import".into()];
    s.start_again();
    let stored = s.client().stored_numbers("w");
    let mut expected: Vec<usize> = (1..=30).chain(theirs).collect();
    expected.sort_unstable();
    println!(
        "ours started again: {} events, {}",
        stored.len(),
        if stored == expected {
            "every acknowledged write of ours and every row of theirs, once"
        } else {
            "MISMATCH"
        }
    );
    assert_eq!(stored, expected);
    assert!(s.stop());
}
