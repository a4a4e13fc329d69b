//! A damaged database through the real binary (issue 25, item 3): pages in the middle of
//! the file overwritten while the server is stopped. The server starts, serves what it can
//! read, answers a read that meets the damage with 500 and `"reason": "damaged"`, and keeps
//! taking writes; at the next start it salvages the file by itself: every event that a
//! point lookup by id reached before is back, the writes it acknowledged meanwhile are
//! there, and the damaged file is kept aside. `aw-server salvage` does the same by hand.

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

/// The ids of bucket `b` a point lookup reaches (the oracle), of ids 1..=last.
fn reachable(c: &mut Client, bucket: &str, last: i64) -> Vec<i64> {
    (1..=last)
        .filter(|id| {
            c.get(&format!("/api/0/buckets/{bucket}/events/{id}"))
                .status
                == 200
        })
        .collect()
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
fn a_damaged_database_is_served_then_salvaged_at_the_next_start_losing_nothing_reachable() {
    let mut s = TestServer::start();
    let mut c = s.client();
    seed(&mut c, "window", 6000);
    seed(&mut c, "afk", 1000);
    c.post_json("/api/0/settings/theme", r#""dark""#);
    assert!(s.stop());
    damage(&s.db_path(), 8);

    s.start_again();
    let mut c = s.client();
    // What is readable is served; what meets the damage says so.
    assert_eq!(c.get("/api/0/buckets/").status, 200);
    let window = reachable(&mut c, "window", 7000);
    let afk = reachable(&mut c, "afk", 7000);
    let theme_readable = c.get("/api/0/settings/theme").status == 200;
    assert!(
        window.len() < 6000,
        "the damage hit no event: the test would prove nothing"
    );
    let all = c.get("/api/0/buckets/window/events?limit=-1");
    assert_eq!(all.status, 500, "{}", all.body);
    assert_eq!(all.json()["reason"], "damaged", "{}", all.body);
    // Writes: each is stored (200) or refused with 500 and `damaged` (the official
    // clients keep and retry a 500), never lost after a 200.
    let mut acknowledged = Vec::new();
    for k in 0..200 {
        let r = c.post_json(
            "/api/0/buckets/afk/heartbeat?pulsetime=0",
            &format!(
                r#"{{"timestamp":"2026-03-01T00:{:02}:{:02}Z","duration":1,"data":{{"k":{k}}}}}"#,
                k / 60,
                k % 60
            ),
        );
        match r.status {
            200 => acknowledged.push(k),
            500 => assert_eq!(r.json()["reason"], "damaged", "{}", r.body),
            other => panic!("{other}: {}", r.body),
        }
    }
    // The final commit may meet the damage too: then the acknowledged writes it could not
    // commit are kept beside the database for the next start (and the exit says it failed).
    let clean = s.stop();
    let log = s.output_tail();
    assert!(log.contains("will be salvaged at the next start"), "{log}");
    assert!(clean || log.contains("applied at the next start"), "{log}");

    // The next start salvages.
    s.start_again();
    let mut c = s.client();
    assert!(s.output_tail().contains("Salvaged"), "{}", s.output_tail());
    assert_eq!(aside(&s.db_path()).len(), 1);
    let got: Vec<i64> = c
        .get("/api/0/buckets/window/events?limit=-1")
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    let mut got = got;
    got.sort_unstable();
    for id in &window {
        assert!(
            got.binary_search(id).is_ok(),
            "event {id} was reachable but is not back"
        );
    }
    let afk_after = reachable(&mut c, "afk", 8000);
    for id in &afk {
        assert!(
            afk_after.contains(id),
            "afk event {id} was reachable but is not back"
        );
    }
    let stored: Vec<i64> = c
        .get("/api/0/buckets/afk/events?start=2026-03-01T00:00:00Z&limit=-1")
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"]["k"].as_i64().unwrap())
        .collect();
    for k in &acknowledged {
        assert!(
            stored.contains(&(*k as i64)),
            "acknowledged heartbeat {k} lost: {stored:?}"
        );
    }
    if theme_readable {
        assert_eq!(c.get("/api/0/settings/theme").json(), "dark");
    }
    eprintln!(
        "salvage through the server: window {} of 6000 back ({} reachable by id in the damaged file), afk {} of 1000 reachable; {} of 200 heartbeats acknowledged while damaged, all back",
        got.len(),
        window.len(),
        afk.len(),
        acknowledged.len()
    );

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
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"events\":"), "{text}");
    assert_eq!(aside(&s.db_path()).len(), 2);
    s.start_again();
    let mut c = s.client();
    assert_eq!(c.get("/api/0/buckets/window/events?limit=-1").status, 200);
    assert_eq!(c.get("/api/0/buckets/").status, 200);
}
