//! Shared helpers for the datastore tests: real SQLite files in temporary directories.
#![allow(dead_code)]

use aw_datastore::Datastore;
use aw_models::{Bucket, Event};
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{json, Map, Value};
use std::path::PathBuf;

/// The longest a test waits for something that takes far less on any machine (a commit, a
/// worker that stops): only a hang reaches it, so no verdict depends on the machine's speed.
pub const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(120);

/// Polls `done` every 20 ms until it holds, for at most [`HANG_GUARD`]; panics with `what`
/// when it never does.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {HANG_GUARD:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs the ignored test `child` of this test executable as a child process with `AW_CHILD_DB` set
/// to `path`, and waits until it printed `marker` (it is killed, and the test fails, if it
/// exits or hangs before).
pub fn child_at(child: &str, path: &std::path::Path, marker: &str) -> std::process::Child {
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            child,
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AW_CHILD_DB", path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + HANG_GUARD;
    while !seen.contains(marker) {
        let mut buf = [0u8; 256];
        let n = std::io::Read::read(&mut out, &mut buf).unwrap();
        if n == 0 || std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child exited or hung before it printed {marker}: {seen}");
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    child
}

pub struct TempStore {
    pub dir: tempfile::TempDir,
    pub ds: Datastore,
}

impl TempStore {
    pub fn new() -> TempStore {
        let dir = tempfile::tempdir().unwrap();
        let ds = Datastore::open(&dir.path().join("sqlite.db")).unwrap();
        TempStore { dir, ds }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("sqlite.db")
    }

    /// Closes and opens the same file again.
    pub fn reopen(&mut self) {
        self.ds.close().unwrap();
        self.ds = Datastore::open(&self.path()).unwrap();
    }
}

pub fn bucket(id: &str) -> Bucket {
    serde_json::from_value(json!({
        "id": id, "type": "currentwindow", "client": "test", "hostname": "host"
    }))
    .unwrap()
}

pub fn t(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_600_000_000 + secs, 0).unwrap()
}

pub fn data(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

pub fn ev(start: i64, dur_secs: f64, d: Value) -> Event {
    Event::new(
        t(start),
        Duration::nanoseconds((dur_secs * 1e9) as i64),
        data(d),
    )
}
