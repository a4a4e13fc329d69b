//! Shared helpers for the datastore tests: real SQLite files in temporary directories.
#![allow(dead_code)]

use aw_datastore::Datastore;
use aw_models::{Bucket, Event};
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{json, Map, Value};
use std::path::PathBuf;

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
        self.ds.close().wait().unwrap();
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
