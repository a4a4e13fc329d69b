//! Retention rules through the real binary (issue 48, item 2): the `retention_rules`
//! setting checked when it is written, `POST /api/0/retention/apply` as a dry run (events,
//! seconds, samples, buckets left empty) and as a run held to its preview's counts, with
//! its backup, the removed text gone from the database file, the run in the storage answer
//! with the backups that still hold what it removed, the days of a rule for this device
//! only kept from the sync, and the daily run after a start.

use aw_tests::{wait_until, Client, TestServer};
use serde_json::{json, Value};

/// `n` events of `seconds` each into `bucket` (created of `kind`), one an hour from
/// `days_ago` days before now on, each with a title that says how old it is.
fn write(c: &mut Client, bucket: &str, kind: &str, days_ago: i64, n: i64, seconds: f64) {
    let r = c.post_json(
        &format!("/api/0/buckets/{bucket}"),
        &json!({"client": "c", "type": kind, "hostname": "h"}).to_string(),
    );
    assert!(r.status == 200 || r.status == 304, "{}", r.body);
    let start = chrono::Utc::now() - chrono::Duration::days(days_ago);
    let events: Vec<Value> = (0..n)
        .map(|i| {
            let at = start + chrono::Duration::hours(i);
            json!({"timestamp": at.to_rfc3339(), "duration": seconds,
                   "data": {"app": "editor", "title": format!("{bucket} {days_ago}d-old note {i}"),
                            "url": format!("https://example.com/{days_ago}/{i}")}})
        })
        .collect();
    let r = c.post_json(
        &format!("/api/0/buckets/{bucket}/events"),
        &Value::from(events).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

fn set_rules(c: &mut Client, rules: &Value) -> u16 {
    c.post_json("/api/0/settings/retention_rules", &rules.to_string())
        .status
}

fn apply(c: &mut Client, body: &Value) -> (u16, Value) {
    let r = c.post_json("/api/0/retention/apply", &body.to_string());
    let json = serde_json::from_str(&r.body).unwrap_or(Value::Null);
    (r.status, json)
}

fn count(c: &mut Client, bucket: &str) -> u64 {
    let r = c.get(&format!("/api/0/buckets/{bucket}/events/count"));
    assert_eq!(r.status, 200, "{}", r.body);
    r.json().as_u64().unwrap()
}

#[test]
fn a_bad_rule_or_setting_is_refused_and_named() {
    let s = TestServer::start();
    let mut c = s.client();
    let cases = [
        (json!({"older_than_days": 3}), "JSON array"),
        (
            json!([{"older_than_days": 3, "action": "delete"}, {"older_than_days": 0, "action": "delete"}]),
            "rule 1: older_than_days",
        ),
        (
            json!([{"older_than_days": 3, "action": "shred"}]),
            "unknown action 'shred'",
        ),
        (
            json!([{"older_than_days": 3, "action": "redact"}]),
            "redact needs `fields`",
        ),
        (
            json!([{"older_than_days": 3, "action": "delete", "colour": "red"}]),
            "colour",
        ),
    ];
    for (rules, named) in cases {
        let r = c.post_json("/api/0/settings/retention_rules", &rules.to_string());
        assert_eq!(r.status, 400, "{rules}: {}", r.body);
        assert!(
            r.json()["message"].as_str().unwrap().contains(named),
            "{rules}: {}",
            r.body
        );
    }
    let r = c.post_json("/api/0/settings/retention_daily", "\"yes\"");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("retention_daily"), "{}", r.body);
    // Nothing was stored.
    assert_eq!(c.get("/api/0/settings/retention_rules").body, "null");
    // More counts than rules.
    assert_eq!(
        set_rules(&mut c, &json!([{"older_than_days": 3, "action": "delete"}])),
        201
    );
    let (status, answer) = apply(&mut c, &json!({"dry_run": false, "expect": [0, 0]}));
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("expect"),
        "{answer}"
    );
    let (status, answer) = apply(&mut c, &json!({"dry_run": "no"}));
    assert_eq!(status, 422, "{answer}");
}

#[test]
fn rules_delete_redact_and_trim_old_events_after_a_preview_and_a_backup() {
    let s = TestServer::start();
    let mut c = s.client();
    // 40 and 3 days old in a window bucket, 40 days old in a browser bucket, and short
    // events in a third.
    write(&mut c, "aw-watcher-window_h", "currentwindow", 40, 10, 60.0);
    write(&mut c, "aw-watcher-window_h", "currentwindow", 3, 10, 60.0);
    write(
        &mut c,
        "aw-watcher-web-firefox_h",
        "web.tab.current",
        40,
        10,
        30.0,
    );
    write(&mut c, "flicker", "currentwindow", 10, 20, 0.5);
    write(&mut c, "flicker", "currentwindow", 10, 5, 0.5);
    let rules = json!([
        {"bucket_type": "currentwindow", "bucket_prefix": "aw-watcher-window", "older_than_days": 30, "action": "delete"},
        {"bucket_type": "web.tab.current", "older_than_days": 30, "action": "redact", "fields": ["title", "url"], "everywhere": true},
        {"bucket_prefix": "flicker", "older_than_days": 1, "action": "delete_shorter", "shorter_than_seconds": 1},
        {"enabled": false, "older_than_days": 1, "action": "delete"}
    ]);
    assert_eq!(set_rules(&mut c, &rules), 201);

    let (status, preview) = apply(&mut c, &json!({"dry_run": true}));
    assert_eq!(status, 200, "{preview}");
    let lines = preview["rules"].as_array().unwrap();
    assert_eq!(lines.len(), 3, "{preview}");
    assert_eq!(lines[0]["dropped"], 10, "{preview}");
    assert_eq!(lines[0]["seconds"], 600.0, "{preview}");
    assert_eq!(lines[0]["samples"].as_array().unwrap().len(), 5);
    assert_eq!(lines[1]["redacted"], 10, "{preview}");
    assert_eq!(lines[1]["seconds"], 300.0, "{preview}");
    assert!(lines[1]["samples"][0]["value"]
        .as_str()
        .unwrap()
        .contains("40d-old"));
    // Every event of `flicker` is shorter than a second: the rule would empty it.
    assert_eq!(lines[2]["dropped"], 25, "{preview}");
    assert_eq!(lines[2]["empties"], json!(["flicker"]), "{preview}");
    // Nothing changed.
    assert_eq!(count(&mut c, "aw-watcher-window_h"), 20);

    // Refused while a rule would empty a bucket without saying it may.
    let (status, refused) = apply(&mut c, &json!({"dry_run": false}));
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("all_of_bucket"),
        "{refused}"
    );
    assert_eq!(count(&mut c, "flicker"), 25);

    let mut rules = rules;
    rules[2]["all_of_bucket"] = json!(true);
    assert_eq!(set_rules(&mut c, &rules), 201);
    // Held to the preview: a rule that would change more than it counted is refused.
    let (status, refused) = apply(&mut c, &json!({"dry_run": false, "expect": [9, 10, 25, 0]}));
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("Retention rule 0"),
        "{refused}"
    );
    assert_eq!(count(&mut c, "aw-watcher-window_h"), 20);

    let (status, done) = apply(
        &mut c,
        &json!({"dry_run": false, "expect": [10, 10, 25, 0]}),
    );
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["dropped"], 35, "{done}");
    assert_eq!(done["redacted"], 10, "{done}");
    let backup = done["backup"].as_str().unwrap().to_string();
    assert!(
        done["restore"].as_str().unwrap().contains("restore"),
        "{done}"
    );
    assert_eq!(count(&mut c, "aw-watcher-window_h"), 10);
    assert_eq!(count(&mut c, "flicker"), 0);
    let web = c
        .get("/api/0/buckets/aw-watcher-web-firefox_h/events")
        .json();
    for e in web.as_array().unwrap() {
        assert_eq!(e["data"]["title"], "(redacted)", "{e}");
        assert_eq!(e["data"]["url"], "(redacted)", "{e}");
        assert_eq!(e["data"]["app"], "editor", "{e}");
    }
    // The removed text is not left readable in the database file or beside it.
    let db = s.db_path();
    for suffix in ["", "-wal", ".journal"] {
        let path = aw_tests::with_suffix(&db, suffix);
        let bytes = std::fs::read(&path).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("40d-old"),
            "{} still holds removed text",
            path.display()
        );
    }

    // The run in the storage answer, with the backup that holds what it removed.
    let storage = c.get("/api/0/storage").json();
    let retention = &storage["retention"];
    assert_eq!(retention["daily"], false, "{storage}");
    assert_eq!(retention["runs"][0]["dropped"], 35, "{storage}");
    assert_eq!(retention["runs"][0]["automatic"], false, "{storage}");
    assert_eq!(retention["runs"][0]["backup"], backup.as_str(), "{storage}");
    let holding: Vec<&str> = retention["backups_holding_removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert!(holding.contains(&backup.as_str()), "{storage}");
    // The window rule stays on this device: its days are kept from the sync. The browser
    // rule travels; `flicker` lost all its days to a local rule.
    let frozen = c.get("/api/0/settings/retention_frozen").json();
    assert!(frozen["aw-watcher-window_h"].as_i64().is_some(), "{frozen}");
    assert!(frozen["flicker"].as_i64().is_some(), "{frozen}");
    assert!(frozen.get("aw-watcher-web-firefox_h").is_none(), "{frozen}");
    // A second run finds nothing.
    let (_, again) = apply(&mut c, &json!({"dry_run": true}));
    assert_eq!(again["dropped"], 0, "{again}");
    assert_eq!(again["redacted"], 0, "{again}");
}

/// Turns the daily run on, restarts the server, and waits for the run its start makes;
/// answers a client of the new start and the storage answer that lists the run.
fn daily_run_after_a_restart(s: &mut TestServer, c: &mut Client) -> (Client, Value) {
    let r = c.post_json("/api/0/settings/retention_daily", "true");
    assert_eq!(r.status, 201, "{}", r.body);
    s.restart();
    let mut c = s.client();
    wait_until("the daily run", || {
        c.get("/api/0/storage").json()["retention"]["runs"]
            .as_array()
            .is_some_and(|runs| !runs.is_empty())
    });
    let storage = c.get("/api/0/storage").json();
    (c, storage)
}

#[test]
fn the_daily_run_happens_after_a_start_once_it_is_turned_on() {
    let mut s = TestServer::start();
    let mut c = s.client();
    write(&mut c, "aw-watcher-window_h", "currentwindow", 40, 10, 60.0);
    write(&mut c, "aw-watcher-window_h", "currentwindow", 2, 2, 60.0);
    c.backup_now();
    let rules = json!([{"older_than_days": 30, "action": "delete"}]);
    assert_eq!(set_rules(&mut c, &rules), 201);
    let (mut c, storage) = daily_run_after_a_restart(&mut s, &mut c);
    let run = &storage["retention"]["runs"][0];
    assert_eq!(run["automatic"], true, "{storage}");
    assert_eq!(run["dropped"], 10, "{storage}");
    // The scheduled backup of a moment ago serves: no backup of its own.
    let backups = c.get("/api/0/backups").json();
    let kinds: Vec<&str> = backups["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["kind"].as_str().unwrap())
        .collect();
    assert!(!kinds.contains(&"before-rewrite"), "{backups}");
    assert!(run["backup"].is_string(), "{storage}");
    assert_eq!(count(&mut c, "aw-watcher-window_h"), 2);
}

#[test]
fn a_daily_run_that_cannot_run_says_why_and_waits_a_day() {
    let mut s = TestServer::start();
    let mut c = s.client();
    // Every event of the bucket is old: the rule would empty it, and does not say it may.
    write(&mut c, "notes", "notes", 40, 3, 60.0);
    let rules = json!([{"bucket_prefix": "notes", "older_than_days": 30, "action": "delete"}]);
    assert_eq!(set_rules(&mut c, &rules), 201);
    let (mut c, storage) = daily_run_after_a_restart(&mut s, &mut c);
    let run = &storage["retention"]["runs"][0];
    assert_eq!(run["automatic"], true, "{storage}");
    assert_eq!(run["dropped"], 0, "{storage}");
    assert!(
        run["error"].as_str().unwrap().contains("all_of_bucket"),
        "{storage}"
    );
    assert_eq!(count(&mut c, "notes"), 3);
    // Recorded, so the next start does not try again within the day.
    s.restart();
    let mut c = s.client();
    std::thread::sleep(std::time::Duration::from_secs(7));
    let runs = c.get("/api/0/storage").json()["retention"]["runs"].clone();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
}
