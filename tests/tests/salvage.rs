//! A damaged database through the real binary (issue 25, item 3): pages in the middle of
//! the file overwritten while the server is stopped. The server starts; the first request
//! that meets the damage gets 500 with `"reason": "damaged"`, and the datastore salvages
//! the file at once and goes on with the copy: reads and writes are served again, the
//! damaged file is kept aside, and what was written after survives a restart. A marker
//! left by an unfinished salvage makes the next start salvage first; `aw-server salvage`
//! does it by hand. (That every event reachable by id comes back is checked against a
//! point-lookup oracle in `aw-datastore/tests/salvage.rs`.)

use std::path::{Path, PathBuf};

use aw_tests::{Client, TestServer};

fn seed(c: &mut Client, bucket: &str, n: usize) {
    let r = c.post_json(
        &format!("/api/0/buckets/{bucket}"),
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for chunk in 0..n / 500 {
        let events: Vec<String> = (0..500)
            .map(|i| {
                let k = chunk * 500 + i;
                format!(
                    r#"{{"timestamp":"2026-01-{:02}T{:02}:{:02}:00Z","duration":30,"data":{{"app":"a{}","title":"{} {}"}}}}"#,
                    1 + k / 1440,
                    (k / 60) % 24,
                    k % 60,
                    k % 13,
                    k,
                    "t".repeat(k % 70)
                )
            })
            .collect();
        let r = c.post_json(
            &format!("/api/0/buckets/{bucket}/events"),
            &format!("[{}]", events.join(",")),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
}

/// Overwrites `count` pages around the middle of the file with noise.
fn damage(db: &Path, count: usize) {
    let mut bytes = std::fs::read(db).unwrap();
    let pages = bytes.len() / 4096;
    for k in 0..count {
        let page = pages / 4 + k * pages / (2 * count.max(1));
        for (i, b) in bytes[page * 4096..(page + 1) * 4096].iter_mut().enumerate() {
            *b = (i.wrapping_mul(2654435761) >> 9) as u8 ^ k as u8;
        }
    }
    std::fs::write(db, bytes).unwrap();
}

fn aside(db: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("sqlite.db.damaged-")
                && !name.ends_with("-wal")
                && !name.ends_with("-shm")
        })
        .collect()
}

#[test]
fn a_damaged_database_is_salvaged_while_serving_and_writes_go_on() {
    let mut s = TestServer::start();
    let mut c = s.client();
    seed(&mut c, "window", 6000);
    seed(&mut c, "afk", 1000);
    c.post_json("/api/0/settings/theme", r#""dark""#);
    assert!(s.stop());
    damage(&s.db_path(), 8);

    s.start_again();
    let mut c = s.client();
    // The first read that meets the damage says so; the worker salvages the file at once.
    let first = c.get("/api/0/buckets/window/events?limit=-1");
    assert_eq!(first.status, 500, "{}", first.body);
    assert_eq!(first.json()["reason"], "damaged", "{}", first.body);
    // From then on every request is served, from the salvaged copy.
    let all = c.get("/api/0/buckets/window/events?limit=-1");
    assert_eq!(all.status, 200, "{}", s.output_tail());
    let back = all.json().as_array().unwrap().len();
    assert!(back > 0 && back < 6000, "{back}");
    assert!(s.output_tail().contains("Salvaged"), "{}", s.output_tail());
    assert_eq!(aside(&s.db_path()).len(), 1);
    let health = c.get("/api/0/health").json();
    assert_eq!(health["database"], "salvaged", "{health}");
    let salvaged = health["salvage"]["events"].as_u64().unwrap_or(0);
    assert!(salvaged >= back as u64, "{health}");
    // Events come back whole: each title still names its own number.
    for e in all.json().as_array().unwrap() {
        let title = e["data"]["title"].as_str().unwrap();
        assert!(title.starts_with(char::is_numeric), "{e}");
    }
    // Writes go on, and survive a restart.
    let mut acknowledged = 0;
    for k in 0..200 {
        let r = c.post_json(
            "/api/0/buckets/afk/heartbeat?pulsetime=0",
            &format!(
                r#"{{"timestamp":"2026-03-01T00:{:02}:{:02}Z","duration":1,"data":{{"k":{k}}}}}"#,
                k / 60,
                k % 60
            ),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        acknowledged += 1;
    }
    assert!(s.stop(), "the server did not stop cleanly");
    s.start_again();
    let mut c = s.client();
    assert_eq!(c.get("/api/0/health").json()["database"], "ok");
    let stored = c
        .get("/api/0/buckets/afk/events?start=2026-03-01T00:00:00Z&limit=-1")
        .json()
        .as_array()
        .unwrap()
        .len();
    assert_eq!(stored, acknowledged);
    assert_eq!(
        c.get("/api/0/buckets/window/events?limit=-1")
            .json()
            .as_array()
            .unwrap()
            .len(),
        back
    );
    eprintln!("salvaged while serving: window {back} of 6000 back; {acknowledged} heartbeats after it, all kept");

    // A marker left by a salvage that could not finish: the next start salvages first.
    assert!(s.stop());
    std::fs::write(aw_marker(&s.db_path()), "damaged").unwrap();
    s.start_again();
    assert!(
        s.output_tail().contains("salvaging it first"),
        "{}",
        s.output_tail()
    );
    assert_eq!(aside(&s.db_path()).len(), 2);

    // By hand: `aw-server salvage` with the server stopped.
    assert!(s.stop());
    damage(&s.db_path(), 2);
    let out = s
        .command()
        .arg("--dbpath")
        .arg(s.db_path())
        .arg("salvage")
        .output()
        .unwrap();
    let text = aw_tests::output_text(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"events\":"), "{text}");
    assert_eq!(aside(&s.db_path()).len(), 3);
    s.start_again();
    assert_eq!(s.client().get("/api/0/buckets/").status, 200);
}

fn aw_marker(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(".damaged");
    PathBuf::from(name)
}

/// A query that meets the damage is told why, like any other request (issue 35): 500 with
/// `"reason": "damaged"` and the reference's message shape. Before, the query engine kept
/// only the error's text and the answer had no reason.
#[test]
fn a_query_that_meets_damage_answers_with_the_reason() {
    let mut s = TestServer::start();
    let mut c = s.client();
    seed(&mut c, "window", 6000);
    assert!(s.stop());
    damage(&s.db_path(), 8);

    s.start_again();
    let mut c = s.client();
    let query = r#"{"timeperiods":["2026-01-01T00:00:00Z/2026-01-06T00:00:00Z"],
        "query":["RETURN = query_bucket(\"window\");"]}"#;
    let first = c.post_json("/api/0/query", query);
    assert_eq!(first.status, 500, "{}", first.body);
    assert_eq!(first.json()["reason"], "damaged", "{}", first.body);
    let message = first.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(r#"BucketQueryError("Failed to query bucket: Other("#),
        "{message}"
    );
    // Salvaged at once: the same query is answered from the copy.
    let again = c.post_json("/api/0/query", query);
    assert_eq!(again.status, 200, "{}", again.body);
}
