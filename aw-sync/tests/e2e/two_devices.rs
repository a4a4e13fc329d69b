//! Two devices sharing one folder: both directions, re-runs, growing events, modes,
//! filters, paging, and a kill in the middle of a pull and of a push.

use std::process::Stdio;
use std::time::{Duration, Instant};

use aw_sync::PeerFile;
use serde_json::json;

use crate::common::{event, window_events, Device};

const WINDOW_A: &str = "aw-watcher-window_laptop";
const AFK_A: &str = "aw-watcher-afk_laptop";
const WINDOW_B: &str = "aw-watcher-window_desktop";

/// The events committed to the database at `path`, as another program reads them while it
/// is written (0 while it cannot be read yet).
fn committed_events(path: &std::path::Path) -> i64 {
    rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row("SELECT count(*) FROM events", [], |r| r.get(0)))
        .unwrap_or(0)
}

fn laptop() -> Device {
    let a = Device::start();
    a.create_bucket(WINDOW_A, "currentwindow", "laptop");
    a.client
        .insert_events(WINDOW_A, window_events(300, 0))
        .unwrap();
    a.create_bucket(AFK_A, "afkstatus", "laptop");
    let afk = vec![
        event(0, 1200, json!({"status": "not-afk"})),
        event(1200, 600, json!({"status": "afk"})),
        event(1800, 1200, json!({"status": "not-afk"})),
    ];
    a.client.insert_events(AFK_A, afk).unwrap();
    a
}

fn desktop() -> Device {
    let b = Device::start();
    b.create_bucket(WINDOW_B, "currentwindow", "desktop");
    b.client
        .insert_events(WINDOW_B, window_events(200, 5))
        .unwrap();
    b
}

#[test]
fn both_directions_then_reruns_change_nothing_and_growth_is_extended() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let (a, b) = (laptop(), desktop());
    a.sync(f, &["sync"]);
    b.sync(f, &["sync"]);
    a.sync(f, &["sync"]);

    for source in [WINDOW_A, AFK_A] {
        let pulled = b.pulled(&a, source);
        assert!(
            pulled.id.starts_with(&format!("{source}-synced-from-")),
            "{}",
            pulled.id
        );
        assert_eq!(b.events(&pulled.id), a.events(source), "{source}");
        assert_eq!(pulled.hostname, "laptop");
    }
    let back = a.pulled(&b, WINDOW_B);
    assert_eq!(a.events(&back.id), b.events(WINDOW_B));
    // Nobody re-imports its own data, and imports are not passed on.
    assert_eq!(a.bucket_ids().len(), 3, "{:?}", a.bucket_ids());
    assert_eq!(b.bucket_ids().len(), 3, "{:?}", b.bucket_ids());

    // Running again moves nothing.
    for _ in 0..2 {
        let out_a = a.sync(f, &["sync"]);
        let out_b = b.sync(f, &["sync"]);
        for out in [out_a, out_b] {
            assert!(
                out.contains("Pulled 0 events from 1 devices, pushed 0 events"),
                "{out}"
            );
        }
    }
    assert_eq!(b.events(&b.pulled(&a, WINDOW_A).id), a.events(WINDOW_A));

    // The last event grows (a heartbeat merges into it) and new events follow.
    let last = window_events(300, 0).pop().unwrap();
    let mut grow = last.clone();
    grow.timestamp += chrono::Duration::seconds(8);
    grow.duration = chrono::Duration::seconds(30);
    a.client.heartbeat(WINDOW_A, &grow, 1.0).unwrap();
    a.client
        .insert_events(WINDOW_A, window_events(10, 4000))
        .unwrap();
    a.sync(f, &["sync"]);
    let out = b.sync(f, &["sync"]);
    assert!(out.contains("Pulled 11 events"), "{out}");
    let copy = b.events(&b.pulled(&a, WINDOW_A).id);
    assert_eq!(copy, a.events(WINDOW_A));
    assert_eq!(copy.len(), 310);
}

#[test]
fn modes_bucket_lists_and_start_dates() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let (a, b) = (laptop(), desktop());
    // Push only: A's file is written, nothing is pulled.
    a.sync(f, &["sync", "--mode", "push"]);
    assert!(f.join(&a.device_id).join("test.db").is_file());
    b.sync(f, &["sync", "--mode", "push"]);
    assert_eq!(b.bucket_ids(), [WINDOW_B]);
    assert_eq!(a.bucket_ids(), [AFK_A, WINDOW_A]);

    // Pull only, one bucket.
    b.sync(
        f,
        &[
            "sync",
            "--mode",
            "pull",
            "--buckets",
            &format!(" {AFK_A} ,"),
        ],
    );
    assert_eq!(b.bucket_ids().len(), 2, "{:?}", b.bucket_ids());
    assert_eq!(b.events(&b.pulled(&a, AFK_A).id), a.events(AFK_A));

    // A start date: only events from it on (on the first sync of a bucket). 09:00 + 300 ×
    // 10 s ends before 10:00: a start date the day after pulls nothing.
    let pulled_since = |date: &str| {
        let d = Device::start();
        let args = [
            "sync",
            "--mode",
            "pull",
            "--buckets",
            WINDOW_A,
            "--start-date",
            date,
        ];
        d.sync(f, &args);
        let events = d.events(&d.pulled(&a, WINDOW_A).id);
        (d, events)
    };
    assert_eq!(pulled_since("2026-03-01").1, a.events(WINDOW_A));
    let (d, events) = pulled_since("2026-03-02");
    assert!(events.is_empty());
    assert!(!f.join(&d.device_id).exists(), "pull-only wrote a file");
}

/// `n` events in groups of three sharing a start (different data), so page boundaries
/// fall inside groups of ties.
fn tied_events(n: usize) -> Vec<aw_models::Event> {
    (0..n as i64)
        .map(|i| {
            event(
                (i / 3) * 5,
                4 + i % 3,
                json!({"app": format!("app{}", i % 3), "n": i % 11}),
            )
        })
        .collect()
}

#[test]
fn large_buckets_page_exactly_and_a_killed_pull_or_push_resumes_without_loss_or_doubles() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::with_window_events(WINDOW_A, "laptop", tied_events(60_001));
    let expected = a.events(WINDOW_A);
    assert_eq!(expected.len(), 60_001);

    // A push killed midway leaves no file, or the previous one: never a torn one.
    let own = f.join(&a.device_id).join("test.db");
    let work = a
        .home
        .path()
        .join(format!("data/activitywatch/aw-sync/{}.db", a.device_id));
    let mut child = a
        .aw_sync_command(f)
        .args(["sync", "--mode", "push"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the push has committed some of the events to its working copy, long
    // before all 60,001 are in and the copy is published.
    let deadline = Instant::now() + aw_tests::HANG_GUARD;
    while committed_events(&work) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    let _ = child.wait();
    eprintln!(
        "push killed with {} of 60,001 events committed to its working copy",
        committed_events(&work)
    );
    assert!(
        !own.exists(),
        "killed while writing its working copy, yet published"
    );
    a.sync(f, &["sync", "--mode", "push"]);
    let file = PeerFile::open(&own, true).unwrap();
    let bucket = file
        .buckets()
        .unwrap()
        .into_iter()
        .find(|b| b.bucket.id == WINDOW_A)
        .unwrap();
    assert_eq!(
        file.count(bucket.row).unwrap(),
        60_001,
        "the pushed copy is exact"
    );
    drop(file);

    // A pull killed after its first pages, then run again: every event once. The kill must
    // land mid-pull; on a busy machine the whole pull may finish before this thread sees its
    // first page, so a round that missed is tried again with a fresh device.
    let mut kills = Vec::new();
    let b = loop {
        let b = Device::start();
        let mut child = b
            .aw_sync_command(f)
            .args(["sync", "--mode", "pull"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        let at_kill = loop {
            let pulled = b
                .client
                .get_buckets()
                .unwrap()
                .into_keys()
                .find(|id| id.starts_with(WINDOW_A));
            let n = pulled.map_or(0, |id| b.client.get_event_count(&id).unwrap());
            if n > 0 || Instant::now() > deadline {
                break n;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        child.kill().unwrap();
        let _ = child.wait();
        kills.push(at_kill);
        if at_kill > 0 && at_kill < 60_001 {
            break b;
        }
        assert!(kills.len() < 5, "no kill landed mid-pull: {kills:?}");
    };
    b.sync(f, &["sync", "--mode", "pull"]);
    assert_eq!(b.events(&b.pulled(&a, WINDOW_A).id), expected);
    let out = b.sync(f, &["sync", "--mode", "pull"]);
    assert!(out.contains("Pulled 0 events"), "{out}");
}

#[test]
fn a_privacy_filter_on_the_receiving_server_never_causes_duplicates() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let (a, b) = (laptop(), desktop());
    // B redacts some titles of what it pulls, and drops others.
    let rules = json!([
        {"enabled": true, "bucket_prefix": format!("{WINDOW_A}-synced-from-"), "field": "title",
         "pattern": "^title 1[0-2]?$", "action": "redact", "replacement": "REDACTED"},
        {"enabled": true, "bucket_prefix": format!("{WINDOW_A}-synced-from-"), "field": "title",
         "pattern": "^title 7$", "action": "drop"},
    ]);
    let r = b
        .server
        .client()
        .post_json("/api/0/settings/privacy_filters", &rules.to_string());
    assert!(r.status / 100 == 2, "{} {}", r.status, r.body);
    a.sync(f, &["sync"]);
    b.sync(f, &["sync"]);
    let pulled = b.pulled(&a, WINDOW_A).id;
    let first = b.events(&pulled);
    // 300 events, titles cycling over 13: "title 7" 23 times.
    assert_eq!(first.len(), 300 - 23);
    assert!(first.iter().any(|e| e.2["title"] == "REDACTED"));

    // A new newest event that B redacts, growing between passes.
    let mut last = event(3000, 8, json!({"app": "app0", "title": "title 1"}));
    a.client
        .insert_events(WINDOW_A, vec![last.clone()])
        .unwrap();
    for _ in 0..3 {
        // A heartbeat at the event's end: merged into it, which grows by 5 s.
        last.timestamp += last.duration;
        last.duration = chrono::Duration::seconds(5);
        a.client.heartbeat(WINDOW_A, &last, 1.0).unwrap();
        a.sync(f, &["sync"]);
        b.sync(f, &["sync"]);
    }
    let after = b.events(&pulled);
    assert_eq!(after.len(), first.len() + 1, "one new event, no duplicates");
    let newest = after.last().unwrap();
    assert_eq!(newest.2["title"], "REDACTED");
    assert_eq!(newest.0, event(3000, 0, json!({})).timestamp);
    let source = a.events(WINDOW_A);
    assert_eq!(
        newest.1,
        source.last().unwrap().1,
        "the growth reached the redacted copy"
    );
}
