//! The key-value store and the privacy filter it configures.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_datastore::DatastoreError;
use common::*;
use serde_json::json;

#[test]
fn key_values_round_trip_and_list_by_prefix() {
    let mut s = TempStore::new();
    s.ds.set_key_value("settings.a", r#"{"x":[1,2.5,null,true]}"#)
        .wait()
        .unwrap();
    s.ds.set_key_value("settings.b", "null").wait().unwrap();
    s.ds.set_key_value("other", "1").wait().unwrap();
    assert_eq!(
        s.ds.get_key_value("settings.a").wait().unwrap(),
        r#"{"x":[1,2.5,null,true]}"#
    );
    assert!(matches!(
        s.ds.get_key_value("settings.c").wait(),
        Err(DatastoreError::NoSuchKey(_))
    ));
    s.reopen();
    let mut all = s.ds.get_key_values("settings.").wait().unwrap();
    all.sort();
    assert_eq!(
        all,
        vec![
            ("settings.a".into(), r#"{"x":[1,2.5,null,true]}"#.into()),
            ("settings.b".into(), "null".into())
        ]
    );
    // A prefix with LIKE wildcards is matched literally.
    assert!(s.ds.get_key_values("settings_").wait().unwrap().is_empty());
    s.ds.delete_key_value("settings.a").wait().unwrap();
    s.ds.delete_key_value("settings.missing").wait().unwrap();
    assert_eq!(s.ds.get_key_values("settings.").wait().unwrap().len(), 1);
}

#[test]
fn privacy_filter_drops_and_redacts_once_set() {
    let mut s = TempStore::new();
    s.ds.create_bucket(&bucket("aw-watcher-web-chrome"))
        .wait()
        .unwrap();
    let rules = json!([
        {"enabled": true, "bucket_prefix": "aw-watcher-web", "field": "url", "pattern": "bank", "action": "drop"},
        {"enabled": true, "field": "title", "pattern": "(?i)secret", "action": "redact", "replacement": "REDACTED"}
    ]);
    s.ds.set_key_value(aw_datastore::PRIVACY_FILTERS_KEY, &rules.to_string())
        .wait()
        .unwrap();
    let stored =
        s.ds.insert_events(
            "aw-watcher-web-chrome",
            &[
                ev(0, 1.0, json!({"url": "https://bank.example", "title": "x"})),
                ev(
                    1,
                    1.0,
                    json!({"url": "https://ok.example", "title": "My Secret"}),
                ),
            ],
        )
        .wait()
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].data,
        r#"{"title":"REDACTED","url":"https://ok.example"}"#
    );
    // The rules are loaded again after a restart.
    s.reopen();
    let stored =
        s.ds.insert_events(
            "aw-watcher-web-chrome",
            &[ev(5, 1.0, json!({"url": "https://bank.example"}))],
        )
        .wait()
        .unwrap();
    assert!(stored.is_empty());
    // Removing the setting turns filtering off.
    s.ds.delete_key_value(aw_datastore::PRIVACY_FILTERS_KEY)
        .wait()
        .unwrap();
    let stored =
        s.ds.insert_events(
            "aw-watcher-web-chrome",
            &[ev(6, 1.0, json!({"url": "https://bank.example"}))],
        )
        .wait()
        .unwrap();
    assert_eq!(stored.len(), 1);
}
