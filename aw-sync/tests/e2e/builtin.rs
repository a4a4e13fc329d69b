//! The sync built into aw-server (`[sync]` in config.toml): two servers syncing through one
//! folder on their own, with a device running the aw-sync binary in the same folder, the
//! status route, and a clean stop.

use serde_json::Value;

use crate::common::{describe, eventually, syncing_server, window_events, Device};
fn count_of(d: &Device, prefix: &str) -> Option<usize> {
    let id = d
        .client
        .get_buckets()
        .ok()?
        .into_keys()
        .find(|id| id.starts_with(prefix) && id.contains("-synced-from-"))?;
    d.client.get_event_count(&id).ok().map(|n| n as usize)
}

#[test]
fn servers_sync_by_themselves_and_with_the_aw_sync_binary() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let mut a = syncing_server(f, "");
    let mut b = syncing_server(f, "");
    let c = Device::start(); // syncs with the binary
    a.create_bucket("aw-watcher-window_laptop", "currentwindow", "laptop");
    a.client
        .insert_events("aw-watcher-window_laptop", window_events(500, 0))
        .unwrap();
    c.create_bucket("aw-watcher-window_tablet", "currentwindow", "tablet");
    c.client
        .insert_events("aw-watcher-window_tablet", window_events(50, 3))
        .unwrap();
    c.sync(f, &["sync"]);

    assert!(
        eventually(|| count_of(&b, "aw-watcher-window_laptop") == Some(500)),
        "A's events did not reach B"
    );
    assert!(
        eventually(|| count_of(&b, "aw-watcher-window_tablet") == Some(50)),
        "the binary's device did not reach B"
    );
    c.sync(f, &["sync"]);
    assert_eq!(count_of(&c, "aw-watcher-window_laptop"), Some(500));
    assert_eq!(
        b.events(&b.pulled(&a, "aw-watcher-window_laptop").id),
        a.events("aw-watcher-window_laptop")
    );

    // The status route: enabled, both other devices seen, a push and a pull done. A pass is
    // recorded when it ends, so the pass that pulled the events above may still be running
    // (on a slow machine it was): wait until a recorded pass has seen both devices.
    let mut http = b.server.client();
    let seen_both = |status: &Value| {
        let devices = status["devices"].as_array().cloned().unwrap_or_default();
        [&a.device_id, &c.device_id].iter().all(|id| {
            devices
                .iter()
                .any(|d| d["device_id"].as_str() == Some(id.as_str()))
        }) && status["last_pull"].is_string()
    };
    let mut status = Value::Null;
    assert!(
        eventually(|| {
            status = http.get("/api/0/sync").json();
            seen_both(&status)
        }),
        "no recorded pass saw both devices: {status}"
    );
    assert_eq!(status["enabled"], true, "{status}");
    assert_eq!(status["device_id"], b.device_id.as_str());
    assert_eq!(status["mode"], "both");
    assert!(status["passes"].as_u64().unwrap() >= 1, "{status}");
    assert!(
        status["last_push"].is_string() && status["last_pull"].is_string(),
        "{status}"
    );
    let seen: Vec<&str> = status["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device_id"].as_str().unwrap())
        .collect();
    assert!(
        seen.contains(&a.device_id.as_str()) && seen.contains(&c.device_id.as_str()),
        "{status}"
    );
    assert_eq!(status["last_error"], Value::Null);

    // Both hold query results, which a clean stop keeps beside their own databases, never
    // in the sync folder.
    let query = r#"{"timeperiods": ["2000-01-01T00:00:00Z/2100-01-01T00:00:00Z"], "query": ["RETURN = query_bucket_names();"]}"#;
    for d in [&a, &b] {
        let r = d.server.client().post_json("/api/0/query/", query);
        assert_eq!(r.status, 200, "{}", r.body);
    }

    // A stops cleanly mid-interval, then B (which otherwise goes on publishing, through a
    // temporary file, while the folder is walked): no side files in the folder.
    assert!(a.server.stop(), "aw-server with sync did not stop cleanly");
    assert!(b.server.stop(), "aw-server with sync did not stop cleanly");
    assert!(aw_tests::with_suffix(&a.server.db_path(), ".derived").exists());
    for path in crate::common::files_under(f) {
        assert!(
            path.extension().is_some_and(|e| e == "db"),
            "{}",
            path.display()
        );
    }
}

#[test]
fn sync_is_off_without_a_folder_and_bad_settings_stop_the_start() {
    let d = Device::start();
    let status = d.server.client().get("/api/0/sync").json();
    assert_eq!(status["enabled"], false, "{status}");
    assert_eq!(status["device_id"], d.device_id.as_str());

    for bad in [
        "[sync]\nfolder = \"relative/path\"\n",
        "[sync]\nfolder = \"/tmp/x\"\nmode = \"sideways\"\n",
        "[sync]\nfolder = \"/tmp/x\"\ninterval = 0\n",
        "[sync]\nfolder = \"/tmp/x\"\nstart_date = \"yesterday\"\n",
        "[sync]\nfolder = \"/tmp/x\"\nfolders = \"typo\"\n",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.toml");
        std::fs::write(&config, bad).unwrap();
        let out = std::process::Command::new(aw_tests::server_binary())
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .env("XDG_CACHE_HOME", dir.path())
            .args(["--port", "0", "--config"])
            .arg(&config)
            .arg("--dbpath")
            .arg(dir.path().join("db.sqlite"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}: {}", describe(&out));
        let text = describe(&out);
        assert!(
            text.contains("sync") || text.contains("folders"),
            "{bad}: {text}"
        );
    }
}

/// Events deleted from a pulled bucket stay deleted (issue 36, item 9): the pull resumes
/// where it stopped even when the server's copy now ends before that point. A pulled
/// bucket deleted as a whole is pulled again from its start.
#[test]
fn events_deleted_from_a_pulled_bucket_are_not_pulled_again() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::with_window_events("aw-watcher-window_laptop", "laptop", window_events(100, 0));
    a.sync(f, &["sync", "--mode", "push"]);
    let b = syncing_server(f, "");
    let mut http = b.server.client();
    let passes = |http: &mut aw_tests::Client| {
        http.get("/api/0/sync").json()["passes"]
            .as_u64()
            .unwrap_or(0)
    };
    assert!(eventually(
        || count_of(&b, "aw-watcher-window_laptop") == Some(100)
    ));
    let pulled = b.pulled(&a, "aw-watcher-window_laptop").id;
    // The newest 30 events (one every 10 s from 09:00, so 09:11:40 on) are deleted.
    let r = http.delete(&format!(
        "/api/0/buckets/{pulled}/events?start=2026-03-01T09:11:40Z&end=2026-03-01T10:00:00Z"
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["deleted"], 30, "{}", r.body);
    let seen = passes(&mut http);
    assert!(eventually(|| passes(&mut http) >= seen + 2), "no passes");
    assert_eq!(
        count_of(&b, "aw-watcher-window_laptop"),
        Some(70),
        "deleted events came back"
    );
    // New events of the peer still arrive.
    a.client
        .insert_events("aw-watcher-window_laptop", window_events(5, 5_000))
        .unwrap();
    a.sync(f, &["sync", "--mode", "push"]);
    assert!(eventually(
        || count_of(&b, "aw-watcher-window_laptop") == Some(75)
    ));
    // The whole bucket deleted: pulled again, all of it.
    assert_eq!(http.delete(&format!("/api/0/buckets/{pulled}")).status, 200);
    assert!(eventually(
        || count_of(&b, "aw-watcher-window_laptop") == Some(105)
    ));
}

/// After the history is rewritten (here: the privacy rules applied to it), this device's
/// file in the sync folder is built anew, so text removed from the database is not left
/// in the file other devices read (the incremental push never rewrites an event).
#[test]
fn a_privacy_run_republishes_this_devices_file_without_the_removed_text() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let d = syncing_server(f, "");
    let secret = "payroll-2026-secret";
    d.create_bucket("aw-watcher-window_laptop", "currentwindow", "laptop");
    let mut events = window_events(20, 0);
    events[3]
        .data
        .insert("title".into(), Value::String(format!("the {secret} sheet")));
    d.client
        .insert_events("aw-watcher-window_laptop", events)
        .unwrap();
    let published = f.join(&d.device_id).join("test.db");
    let holds_secret = || {
        std::fs::read(&published)
            .is_ok_and(|b| b.windows(secret.len()).any(|w| w == secret.as_bytes()))
    };
    assert!(eventually(holds_secret), "the event was never published");
    let mut http = d.server.client();
    let r = http.post_json(
        "/api/0/settings/privacy_filters",
        r#"[{"enabled": true, "field": "title", "pattern": "payroll", "action": "redact", "replacement": "(hidden)"}]"#,
    );
    assert!(r.status == 200 || r.status == 201, "{}", r.body);
    let r = http.post_json("/api/0/privacy/apply", r#"{"dry_run": false}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        eventually(|| !holds_secret()),
        "the published file still holds the removed text"
    );
    assert!(std::fs::read(&published).is_ok_and(|b| b.windows(8).any(|w| w == b"(hidden)")));
}
