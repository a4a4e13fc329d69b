//! A device's changes to its own history reach the devices that pull it, at their next
//! pass: deletions, edits and backdated events of any age, renames, merges and privacy
//! runs; and a deletion made on the pulling device stands.

use aw_models::Event;
use chrono::SecondsFormat;
use serde_json::{json, Value};

use crate::common::{at, event, eventually, syncing_server, Device};

const WINDOW: &str = "aw-watcher-window_laptop";
/// The window bucket the merges fold into `WINDOW`.
const SECOND: &str = "aw-watcher-window_laptop-2";
/// The web bucket the renames rename.
const WEB: &str = "aw-watcher-web_laptop";

/// `per_day` window events on each of `days` days from [`at`]`(0)`, one a minute.
fn days_of_events(days: i64, per_day: i64) -> Vec<Event> {
    (0..days)
        .flat_map(|d| {
            (0..per_day).map(move |i| {
                event(
                    d * 86_400 + i * 60,
                    50,
                    json!({"app": format!("app{}", i % 5), "title": format!("day {d} title {i}")}),
                )
            })
        })
        .collect()
}

/// Waits until `d`'s copy of `source` on `from` holds exactly `from`'s events, but those
/// `left_out` says; panics with both sides otherwise.
fn converges(d: &Device, from: &Device, source: &str, left_out: impl Fn(&Value) -> bool) {
    let expected = || -> Vec<_> {
        from.events(source)
            .into_iter()
            .filter(|e| !left_out(&Value::Object(e.2.clone())))
            .collect()
    };
    let mut last = (Vec::new(), Vec::new());
    let ok = eventually(|| {
        let copy = d.client.get_buckets().unwrap().into_values().find(|b| {
            b.data.get("$aw.sync.device") == Some(&json!(from.device_id))
                && b.data.get("$aw.sync.source") == Some(&json!(source))
        });
        let Some(copy) = copy else { return false };
        last = (d.events(&copy.id), expected());
        last.0 == last.1
    });
    assert!(
        ok,
        "the copy did not follow: {} events here, {} expected; first difference: {:?}",
        last.0.len(),
        last.1.len(),
        last.0.iter().zip(&last.1).find(|(a, b)| a != b)
    );
}

/// Replaces event `id` of `bucket` over HTTP (`PUT`), which must answer 200.
fn replace_event(http: &mut aw_tests::Client, bucket: &str, id: i64, event: &Event) {
    let r = http.request(
        "PUT",
        &format!("/api/0/buckets/{bucket}/events/{id}"),
        &[("Content-Type", "application/json")],
        Some(serde_json::to_string(event).unwrap().as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Deletes event `id` of `bucket` on `d` by id, which must answer 200.
fn delete_event(d: &Device, bucket: &str, id: i64) {
    let r = d.server.client().post_json(
        &format!("/api/0/buckets/{bucket}/events/delete"),
        &json!({ "ids": [id] }).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The id of the event of `bucket` on `d` whose title is `title`.
fn id_of(d: &Device, bucket: &str, title: &str) -> i64 {
    d.client
        .get_events(bucket, None, None, None)
        .unwrap()
        .into_iter()
        .find(|e| e.data["title"] == title)
        .and_then(|e| e.id)
        .unwrap_or_else(|| panic!("no event titled {title} in {bucket}"))
}

/// A deletion, an edit and a backdated event on A reach B and C; B's own deletion stands.
#[test]
fn deletions_edits_and_backdated_events_follow_and_a_deletion_here_stands() {
    let folder = tempfile::tempdir().unwrap();
    let a = syncing_server(folder.path(), "");
    let b = syncing_server(folder.path(), "");
    let c = syncing_server(folder.path(), "");
    a.create_bucket(WINDOW, "currentwindow", "laptop");
    a.client
        .insert_events(WINDOW, days_of_events(3, 100))
        .unwrap();
    converges(&b, &a, WINDOW, |_| false);
    converges(&c, &a, WINDOW, |_| false);
    let mut http = a.server.client();

    // A deletes half an hour of day 1 (30 events), edits an event of day 0, and adds a
    // meeting five days before everything else.
    let (from, to) = (at(86_400 + 600), at(86_400 + 600 + 1800));
    let r = http.delete(&format!(
        "/api/0/buckets/{WINDOW}/events?start={}&end={}",
        from.to_rfc3339_opts(SecondsFormat::Secs, true),
        to.to_rfc3339_opts(SecondsFormat::Secs, true)
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["deleted"], 30, "{}", r.body);
    let edited = id_of(&a, WINDOW, "day 0 title 7");
    let mut changed = event(7 * 60, 55, json!({"app": "app2", "title": "renamed title"}));
    changed.id = Some(edited);
    replace_event(&mut http, WINDOW, edited, &changed);
    a.client
        .insert_events(
            WINDOW,
            vec![event(
                -5 * 86_400,
                3600,
                json!({"app": "meet", "title": "backdated"}),
            )],
        )
        .unwrap();
    converges(&b, &a, WINDOW, |_| false);
    converges(&c, &a, WINDOW, |_| false);

    // B deletes an event of day 2 from its copy; A then edits that event and the day
    // around it: the event stays deleted on B, the rest of the day follows.
    let copy = b.pulled(&a, WINDOW).id;
    let gone = id_of(&b, &copy, "day 2 title 40");
    delete_event(&b, &copy, gone);
    let target = id_of(&a, WINDOW, "day 2 title 40");
    let mut edit = event(
        2 * 86_400 + 40 * 60,
        50,
        json!({"app": "x", "title": "day 2 title 40 edited"}),
    );
    edit.id = Some(target);
    replace_event(&mut http, WINDOW, target, &edit);
    a.client
        .insert_events(
            WINDOW,
            vec![event(
                2 * 86_400 + 30,
                10,
                json!({"app": "late", "title": "day 2 late"}),
            )],
        )
        .unwrap();
    converges(&b, &a, WINDOW, |data| {
        data["title"] == "day 2 title 40 edited"
    });

    // The status says what the passes applied.
    let status = b.server.client().get("/api/0/sync").json();
    let device = status["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device_id"] == a.device_id.as_str())
        .cloned()
        .unwrap();
    assert!(device["last_changes"].is_object(), "{device}");
}

/// `n` events of `bucket`'s kind a day on `days` days, from `offset` seconds, titled
/// `<mark> day <d> title <i>`.
fn marked_events(mark: &str, days: i64, n: i64, offset: i64) -> Vec<Event> {
    (0..days)
        .flat_map(|d| {
            (0..n).map(move |i| {
                event(
                    d * 86_400 + offset + i * 60,
                    20,
                    json!({"app": "app", "title": format!("{mark} day {d} title {i}"), "url": "https://example.org/"}),
                )
            })
        })
        .collect()
}

/// Whether `d` has a copy of `source` of device `from`.
fn has_copy(d: &Device, from: &Device, source: &str) -> bool {
    d.client.get_buckets().unwrap().into_values().any(|b| {
        b.data.get("$aw.sync.device") == Some(&json!(from.device_id))
            && b.data.get("$aw.sync.source") == Some(&json!(source))
    })
}

/// On `http`'s device: merges `SECOND` into `WINDOW`, renames `WEB` to `renamed`, and
/// redacts the titles matching `pattern` in the stored history.
fn merge_rename_and_redact(http: &mut aw_tests::Client, renamed: &str, pattern: &str) {
    let r = http.post_json(
        &format!("/api/0/buckets/{WINDOW}/merge?force=true"),
        &json!({ "from": SECOND }).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = http.request(
        "PATCH",
        &format!("/api/0/buckets/{WEB}?force=true"),
        &[("Content-Type", "application/json")],
        Some(json!({ "id": renamed }).to_string().as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let rules = json!([{"enabled": true, "field": "title", "pattern": pattern, "action": "redact", "replacement": "(hidden)"}]);
    let r = http.post_json("/api/0/settings/privacy_filters", &rules.to_string());
    assert!(r.status == 200 || r.status == 201, "{}", r.body);
    let r = http.post_json("/api/0/privacy/apply", r#"{"dry_run": false}"#);
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn merges_renames_and_privacy_runs_follow_on_two_other_devices() {
    const RENAMED: &str = "aw-watcher-web-firefox_laptop";
    let secret = "payroll-2026-secret";
    let folder = tempfile::tempdir().unwrap();
    let a = syncing_server(folder.path(), "");
    let b = syncing_server(folder.path(), "");
    let c = syncing_server(folder.path(), "");
    a.create_bucket(WINDOW, "currentwindow", "laptop");
    a.create_bucket(SECOND, "currentwindow", "laptop");
    a.create_bucket(WEB, "web.tab.current", "laptop");
    let mut window = marked_events("w", 2, 50, 0);
    window[7]
        .data
        .insert("title".into(), json!(format!("the {secret} sheet")));
    a.client.insert_events(WINDOW, window).unwrap();
    a.client
        .insert_events(SECOND, marked_events("second", 2, 20, 30))
        .unwrap();
    a.client
        .insert_events(WEB, marked_events("web", 1, 30, 0))
        .unwrap();
    for d in [&b, &c] {
        for bucket in [WINDOW, SECOND, WEB] {
            converges(d, &a, bucket, |_| false);
        }
    }
    // B deletes an event from its copy of the bucket that is merged away next.
    let copy = b.pulled(&a, SECOND).id;
    let gone = id_of(&b, &copy, "second day 1 title 3");
    delete_event(&b, &copy, gone);

    let mut http = a.server.client();
    merge_rename_and_redact(&mut http, RENAMED, "payroll");

    // Both follow: the merged-away copy folded into the target's (B's deletion standing,
    // no event twice), the renamed copy renamed, the redacted text replaced.
    converges(&b, &a, WINDOW, |data| {
        data["title"] == "second day 1 title 3"
    });
    converges(&c, &a, WINDOW, |_| false);
    for d in [&b, &c] {
        converges(d, &a, RENAMED, |_| false);
        assert!(
            eventually(|| !has_copy(d, &a, SECOND) && !has_copy(d, &a, WEB)),
            "copies of the merged-away and the renamed bucket are left: {:?}",
            d.bucket_ids()
        );
    }
    // Nothing of the removed text in B's database, its WAL or its journal, once the pass
    // that applied the redaction ended (it scrubs them last).
    let holds_secret = || {
        ["", "-wal", ".journal"].iter().any(|suffix| {
            std::fs::read(aw_tests::with_suffix(&b.server.db_path(), suffix))
                .is_ok_and(|bytes| bytes.windows(secret.len()).any(|w| w == secret.as_bytes()))
        })
    };
    assert!(
        eventually(|| !holds_secret()),
        "the removed text is still in B's database files"
    );
}

/// The `aw-sync` program against our servers does the same over HTTP.
#[test]
fn the_aw_sync_program_carries_deletions_and_edits_and_a_deletion_here_stands() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::start();
    let b = Device::start();
    a.create_bucket(WINDOW, "currentwindow", "laptop");
    a.client
        .insert_events(WINDOW, days_of_events(2, 50))
        .unwrap();
    a.sync(f, &["sync"]);
    b.sync(f, &["sync"]);
    converges(&b, &a, WINDOW, |_| false);

    let copy = b.pulled(&a, WINDOW).id;
    let gone = id_of(&b, &copy, "day 1 title 9");
    b.client.delete_event(&copy, gone).unwrap();
    let mut http = a.server.client();
    let r = http.post_json(
        &format!("/api/0/buckets/{WINDOW}/events/delete"),
        &json!({ "ids": [id_of(&a, WINDOW, "day 0 title 3")] }).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    for title in ["day 0 title 4", "day 1 title 9"] {
        let id = id_of(&a, WINDOW, title);
        let mut changed = a.client.get_event(WINDOW, id).unwrap();
        changed
            .data
            .insert("title".into(), json!(format!("{title} edited")));
        replace_event(&mut http, WINDOW, id, &changed);
    }
    a.sync(f, &["sync"]);
    b.sync(f, &["sync"]);
    converges(&b, &a, WINDOW, |data| {
        data["title"] == "day 1 title 9 edited"
    });
    // A pass with nothing new changes nothing.
    b.sync(f, &["sync"]);
    converges(&b, &a, WINDOW, |data| {
        data["title"] == "day 1 title 9 edited"
    });
}

/// A device that was offline (its server stopped) through a deletion, an edit, a backdated
/// event, a merge, a rename and a privacy run converges at its first pass back.
#[test]
fn a_device_offline_through_every_kind_of_change_converges_when_it_is_back() {
    const RENAMED: &str = "aw-watcher-web-chrome_laptop";
    let folder = tempfile::tempdir().unwrap();
    let a = syncing_server(folder.path(), "");
    let mut b = syncing_server(folder.path(), "");
    a.create_bucket(WINDOW, "currentwindow", "laptop");
    a.create_bucket(SECOND, "currentwindow", "laptop");
    a.create_bucket(WEB, "web.tab.current", "laptop");
    a.client
        .insert_events(WINDOW, marked_events("w", 3, 40, 0))
        .unwrap();
    a.client
        .insert_events(SECOND, marked_events("second", 2, 10, 30))
        .unwrap();
    a.client
        .insert_events(WEB, marked_events("web", 2, 10, 0))
        .unwrap();
    for bucket in [WINDOW, SECOND, WEB] {
        converges(&b, &a, bucket, |_| false);
    }
    assert!(b.server.stop(), "B did not stop cleanly");

    let mut http = a.server.client();
    let (from, to) = (at(86_400), at(86_400 + 1200));
    let r = http.delete(&format!(
        "/api/0/buckets/{WINDOW}/events?start={}&end={}",
        from.to_rfc3339_opts(SecondsFormat::Secs, true),
        to.to_rfc3339_opts(SecondsFormat::Secs, true)
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    let id = id_of(&a, WINDOW, "w day 2 title 5");
    let mut changed = a.client.get_event(WINDOW, id).unwrap();
    changed
        .data
        .insert("title".into(), json!("w day 2 title 5 edited"));
    replace_event(&mut http, WINDOW, id, &changed);
    a.client
        .insert_events(
            WINDOW,
            vec![event(
                -30 * 86_400,
                600,
                json!({"app": "meet", "title": "a month before"}),
            )],
        )
        .unwrap();
    merge_rename_and_redact(&mut http, RENAMED, "title 1$");
    // A publishes all of it before B is back.
    let published = |http: &mut aw_tests::Client| http.get("/api/0/sync").json()["passes"].as_u64();
    let seen = published(&mut http);
    assert!(eventually(|| published(&mut http) >= seen.map(|n| n + 2)));

    b.server.start_again();
    let Device { server, .. } = b;
    let b = Device::with_server(server);
    converges(&b, &a, WINDOW, |_| false);
    converges(&b, &a, RENAMED, |_| false);
    assert!(
        eventually(|| !has_copy(&b, &a, SECOND) && !has_copy(&b, &a, WEB)),
        "{:?}",
        b.bucket_ids()
    );
}

/// A peer's day table that does not agree with its events (a digest row changed, rows
/// removed) is refused and reported day by day, and nothing of the copy is deleted.
#[test]
fn a_day_table_that_disagrees_with_its_file_is_refused_and_deletes_nothing() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::start();
    let b = syncing_server(f, "");
    a.create_bucket(WINDOW, "currentwindow", "laptop");
    a.client
        .insert_events(WINDOW, days_of_events(3, 20))
        .unwrap();
    a.sync(f, &["sync", "--mode", "push"]);
    converges(&b, &a, WINDOW, |_| false);
    let copy = b.pulled(&a, WINDOW).id;
    let before = b.events(&copy);

    // Hostile or damaged: one day's digest changed with a wrong count, another day's row
    // removed while its events stay (the file's own device folder, as anyone can write).
    let file = f.join(&a.device_id).join("test.db");
    let conn = rusqlite::Connection::open(&file).unwrap();
    let days: Vec<i64> = conn
        .prepare("SELECT day FROM aw_sync_day ORDER BY day")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(days.len(), 3);
    conn.execute(
        "UPDATE aw_sync_day SET count = count + 5, digest = 'forged' WHERE day = ?1",
        [days[0]],
    )
    .unwrap();
    conn.execute("DELETE FROM aw_sync_day WHERE day = ?1", [days[1]])
        .unwrap();
    drop(conn);

    let mut http = b.server.client();
    let mut status = Value::Null;
    assert!(
        eventually(|| {
            status = http.get("/api/0/sync").json();
            status["devices"].as_array().is_some_and(|d| {
                d.iter()
                    .any(|d| d["last_changes"]["refused_days"].as_u64() == Some(2))
            })
        }),
        "the two days were not refused: {status}"
    );
    assert_eq!(b.events(&copy), before, "the copy changed");
}

/// Retention rules on A: the deletions of a rule for A only stay on A (B keeps its copy of
/// those days, and still follows A's new events), those of a rule with `everywhere` reach
/// B at its next pass.
#[test]
fn a_retention_rule_for_this_device_stays_here_and_one_for_everywhere_travels() {
    let folder = tempfile::tempdir().unwrap();
    let a = syncing_server(folder.path(), "");
    let b = syncing_server(folder.path(), "");
    a.create_bucket(WINDOW, "currentwindow", "laptop");
    a.create_bucket(WEB, "web.tab.current", "laptop");
    a.client
        .insert_events(WINDOW, days_of_events(2, 20))
        .unwrap();
    let web: Vec<Event> = (0..10)
        .map(|i| {
            event(
                i * 60,
                30,
                json!({"url": format!("https://x.org/{i}"), "title": "t"}),
            )
        })
        .collect();
    a.client.insert_events(WEB, web).unwrap();
    // A recent event in each, so the rules empty neither.
    let recent = |data: Value| {
        let mut e = event(0, 30, data);
        e.timestamp = chrono::Utc::now() - chrono::Duration::hours(1);
        e
    };
    a.client
        .insert_events(WINDOW, vec![recent(json!({"app": "app1", "title": "now"}))])
        .unwrap();
    a.client
        .insert_events(
            WEB,
            vec![recent(json!({"url": "https://x.org/now", "title": "t"}))],
        )
        .unwrap();
    converges(&b, &a, WINDOW, |_| false);
    converges(&b, &a, WEB, |_| false);

    let mut http = a.server.client();
    let rules = json!([
        {"bucket_prefix": WINDOW, "older_than_days": 30, "action": "delete"},
        {"bucket_prefix": WEB, "older_than_days": 30, "action": "delete", "everywhere": true}
    ]);
    let r = http.post_json("/api/0/settings/retention_rules", &rules.to_string());
    assert_eq!(r.status, 201, "{}", r.body);
    let r = http.post_json("/api/0/retention/apply", r#"{"dry_run": false}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["dropped"], 50, "{}", r.body);
    assert_eq!(a.events(WINDOW).len(), 1);

    // The browser rule travels: B's copy follows A's.
    converges(&b, &a, WEB, |_| false);
    // A new event on A still travels; the window days A trimmed for itself stay on B.
    a.client
        .insert_events(
            WINDOW,
            vec![recent(json!({"app": "app3", "title": "later"}))],
        )
        .unwrap();
    let copy_of = |d: &Device| {
        d.client
            .get_buckets()
            .unwrap()
            .into_values()
            .find(|b| {
                b.data.get("$aw.sync.source") == Some(&json!(WINDOW))
                    && b.data.get("$aw.sync.device") == Some(&json!(a.device_id))
            })
            .map(|b| b.id)
            .unwrap()
    };
    let copy = copy_of(&b);
    let mut seen = 0;
    let ok = eventually(|| {
        seen = b.events(&copy).len();
        seen == 42
    });
    assert!(
        ok,
        "B's copy of the window bucket has {seen} events, not 40 old + 2 new"
    );
}
