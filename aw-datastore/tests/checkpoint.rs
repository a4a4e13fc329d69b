//! The WAL copied into the database off the worker's turn (`file/checkpointer.rs`): it stays
//! as short as what is written between two checkpoints, and a clean stop removes it.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use common::*;
use serde_json::json;

fn wal_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(aw_datastore::with_suffix(path, "-wal")).map_or(0, |m| m.len())
}

#[test]
fn the_wal_starts_again_once_copied_and_is_gone_after_a_stop() {
    let s = TempStore::new();
    let path = s.path();
    s.ds.create_bucket(&bucket("b")).wait().unwrap();
    let text = "x".repeat(1000);
    let mut largest = 0;
    for round in 0..30 {
        // About 2 MB of pages a round, committed.
        let events: Vec<_> = (0..2000)
            .map(|i| ev(round * 10_000 + i, 1.0, json!({ "text": text, "i": i })))
            .collect();
        s.ds.insert_events("b", &events).wait().unwrap();
        s.ds.force_commit().wait().unwrap();
        // The checkpoint copies the round in the background; the next write then begins
        // the WAL again from its start.
        std::thread::sleep(std::time::Duration::from_millis(100));
        s.ds.heartbeat("b", &ev(1_000_000 + round, 0.0, json!({})), 0.0)
            .wait()
            .unwrap();
        largest = largest.max(wal_len(&path));
    }
    // 60 MB written: without the restart the WAL would hold all of it.
    assert!(largest < 16 << 20, "the WAL grew to {largest} bytes");
    assert_eq!(
        s.ds.get_event_count("b", None, None).wait().unwrap(),
        60_030
    );
    s.ds.close().unwrap();
    assert_eq!(wal_len(&path), 0, "a clean stop leaves no WAL");
}
