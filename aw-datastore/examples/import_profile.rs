//! Times the phases of an import (parse, convert, insert, commit) for an export file:
//! `cargo run --release -p aw-datastore --example import_profile -- FILE`.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let doc = std::fs::read_to_string(&path).unwrap();
    let t = Instant::now();
    let export: aw_models::BucketsExport = serde_json::from_str(&doc).unwrap();
    println!("parse BucketsExport: {:?}", t.elapsed());
    let t = Instant::now();
    let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
    println!("parse Value: {:?}", t.elapsed());
    drop(v);
    let t = Instant::now();
    let mut n = 0;
    for b in export.buckets.values() {
        let ev = aw_datastore::NewEvent::from_events(b.events.as_ref().unwrap()).unwrap();
        n += ev.len();
    }
    println!("NewEvent conversion of {n}: {:?}", t.elapsed());
    let dir = tempfile::tempdir().unwrap();
    let ds = aw_datastore::Datastore::open(&dir.path().join("x.db")).unwrap();
    let t = Instant::now();
    ds.import_buckets(export.buckets.into_values().collect())
        .wait()
        .unwrap();
    println!("import_buckets (convert + worker): {:?}", t.elapsed());
    let t = Instant::now();
    ds.force_commit().wait().unwrap();
    println!("commit: {:?}", t.elapsed());
}
