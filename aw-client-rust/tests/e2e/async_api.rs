//! Every method of the async client against a real server.

use std::time::Duration;

use aw_client_rust::aw_models::{Bucket, Event};
use aw_client_rust::{AwClient, ClientError};
use serde_json::{json, Map, Value};

use crate::common::{at, data, event, free_port, secs, Server};

fn bucket(id: &str, kind: &str) -> Bucket {
    Bucket {
        bid: None,
        id: id.to_string(),
        _type: kind.to_string(),
        client: "test-client".to_string(),
        hostname: "test-host".to_string(),
        created: Some(at(-3600.0)),
        data: data(json!({"origin": "test", "n": 1})),
        metadata: Default::default(),
        events: None,
        last_updated: None,
    }
}

/// (timestamp, duration, data) — what must survive a round trip; ids may change.
fn content(events: &[Event]) -> Vec<(String, f64, Map<String, Value>)> {
    let mut v: Vec<_> = events
        .iter()
        .map(|e| (e.timestamp.to_rfc3339(), secs(e), e.data.clone()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    v
}

#[tokio::test]
async fn info_reports_the_testing_server() {
    let server = Server::start();
    let info = server.client().get_info().await.unwrap();
    assert!(info.testing);
    assert!(info.version.starts_with('v'), "{info:?}");
    assert!(!info.device_id.is_empty());
    assert!(!info.hostname.is_empty());
}

#[tokio::test]
async fn bucket_lifecycle_and_idempotent_create() {
    let server = Server::start();
    let client = server.client();
    let b = bucket("aw-watcher-window_test-host", "currentwindow");

    assert!(client.ensure_bucket(&b).await.unwrap(), "first create");
    assert!(!client.ensure_bucket(&b).await.unwrap(), "304 → existed");
    client.create_bucket(&b).await.unwrap(); // 304 is not an error

    let got = client.get_bucket(&b.id).await.unwrap();
    assert_eq!(got.id, b.id);
    assert_eq!(got._type, "currentwindow");
    assert_eq!(got.client, "test-client");
    assert_eq!(got.hostname, "test-host");
    assert_eq!(got.created, b.created);
    assert_eq!(got.data, b.data);
    assert_eq!(got.metadata.start, None);

    client
        .insert_events(&b.id, vec![event(0.0, 10.0, json!({"app": "a"}))])
        .await
        .unwrap();
    let got = client.get_bucket(&b.id).await.unwrap();
    assert_eq!(got.metadata.start, Some(at(0.0)), "metadata kept");
    assert_eq!(got.metadata.end, Some(at(10.0)));

    let all = client.get_buckets().await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[&b.id].metadata.end, Some(at(10.0)));

    client.delete_bucket(&b.id).await.unwrap();
    let err = client.get_bucket(&b.id).await.unwrap_err();
    assert_eq!(err.status(), Some(404), "{err}");
    assert!(client.get_buckets().await.unwrap().is_empty());
}

#[tokio::test]
async fn create_bucket_simple_uses_client_name_and_hostname() {
    let server = Server::start();
    let client = AwClient::builder("127.0.0.1", server.port, "my-watcher")
        .hostname("box-1")
        .build()
        .unwrap();
    client
        .create_bucket_simple("my-watcher_box-1", "afkstatus")
        .await
        .unwrap();
    client
        .create_bucket_simple("my-watcher_box-1", "afkstatus")
        .await
        .unwrap();
    let b = client.get_bucket("my-watcher_box-1").await.unwrap();
    assert_eq!(
        (b.client.as_str(), b.hostname.as_str()),
        ("my-watcher", "box-1")
    );
    assert_eq!(b._type, "afkstatus");

    // Default hostname is this machine's.
    let plain = server.client();
    plain.create_bucket_simple("plain", "t").await.unwrap();
    let b = plain.get_bucket("plain").await.unwrap();
    assert_eq!(b.hostname, plain.hostname);
    assert_eq!(b.client, "aw-client-rust-test");
}

#[tokio::test]
async fn awkward_ids_and_keys_are_percent_encoded() {
    let server = Server::start();
    let client = server.client();
    for id in [
        "a b/c",
        "ü?#&=+%",
        "...",
        "x%2Fy",
        "dots.in.id",
        "tab\there",
    ] {
        client.create_bucket(&bucket(id, "t")).await.unwrap();
        assert_eq!(client.get_bucket(id).await.unwrap().id, id);
        client
            .heartbeat(id, &event(0.0, 0.0, json!({"k": id})), 5.0)
            .await
            .unwrap();
        let events = client.get_events(id, None, None, None).await.unwrap();
        assert_eq!(events.len(), 1, "{id}");
        let eid = events[0].id.unwrap();
        assert_eq!(client.get_event(id, eid).await.unwrap().data["k"], id);
        assert_eq!(client.get_event_count(id).await.unwrap(), 1);
        assert!(client
            .export_bucket(id)
            .await
            .unwrap()
            .buckets
            .contains_key(id));
    }
    let ids: Vec<String> = client.get_buckets().await.unwrap().into_keys().collect();
    assert_eq!(ids.len(), 6, "{ids:?}");
    for id in [
        "a b/c",
        "ü?#&=+%",
        "...",
        "x%2Fy",
        "dots.in.id",
        "tab\there",
    ] {
        client.delete_bucket(id).await.unwrap();
    }
    assert!(client.get_buckets().await.unwrap().is_empty());

    for key in ["a b/c", "ü?#&", "x.y"] {
        client.set_setting(key, &json!({"key": key})).await.unwrap();
        assert_eq!(client.get_setting(key).await.unwrap(), json!({"key": key}));
    }
    let all = client.get_settings().await.unwrap();
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(all["a b/c"], json!({"key": "a b/c"}));
}

#[tokio::test]
async fn events_insert_get_count_replace_delete() {
    let server = Server::start();
    let client = server.client();
    let id = "events";
    client.create_bucket_simple(id, "test").await.unwrap();

    client
        .insert_event(id, &event(0.0, 10.0, json!({"n": 0})))
        .await
        .unwrap();
    client
        .insert_events(
            id,
            vec![
                event(20.0, 10.0, json!({"n": 1})),
                event(40.0, 10.0, json!({"n": 2})),
            ],
        )
        .await
        .unwrap();
    let stored = client
        .insert_events_returning(id, &[event(60.0, 1.5, json!({"n": 3, "b": [1, 2]}))])
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    let id3 = stored[0].id.expect("stored event has an id");
    assert_eq!(stored[0].data, data(json!({"n": 3, "b": [1, 2]})));

    // Newest first, with ids.
    let all = client.get_events(id, None, None, None).await.unwrap();
    let order: Vec<_> = all.iter().map(|e| e.data["n"].clone()).collect();
    assert_eq!(order, vec![json!(3), json!(2), json!(1), json!(0)]);
    assert!(all.iter().all(|e| e.id.is_some()));
    assert_eq!(all[0].id, Some(id3));
    assert_eq!(secs(&all[0]), 1.5);

    // Limit keeps the newest.
    let two = client.get_events(id, None, None, Some(2)).await.unwrap();
    assert_eq!(content(&two), content(&all[..2]));
    assert!(client
        .get_events(id, None, None, Some(0))
        .await
        .unwrap()
        .is_empty());

    // Range: overlapping events, clipped by the server to [start, end].
    let ranged = client
        .get_events(id, Some(at(25.0)), Some(at(45.0)), None)
        .await
        .unwrap();
    assert_eq!(ranged.len(), 2, "{ranged:?}");
    assert_eq!(ranged[0].data["n"], 2);
    assert_eq!((ranged[0].timestamp, secs(&ranged[0])), (at(40.0), 5.0));
    assert_eq!((ranged[1].timestamp, secs(&ranged[1])), (at(25.0), 5.0));
    // Sub-second precision in the query string.
    let precise = client
        .get_events(id, Some(at(60.25)), None, None)
        .await
        .unwrap();
    assert_eq!(precise.len(), 1);
    assert_eq!(precise[0].timestamp, at(60.25));

    // One event by id.
    let one = client.get_event(id, id3).await.unwrap();
    assert_eq!(one, all[0]);

    // Counts.
    assert_eq!(client.get_event_count(id).await.unwrap(), 4);
    let in_range = client
        .get_event_count_range(id, Some(at(35.0)), None)
        .await
        .unwrap();
    // The client must send start/end (this server honours them; the reference ignored them).
    assert_eq!(in_range, 2);

    // An event with an id replaces the stored one.
    let mut replacement = event(60.0, 2.0, json!({"n": "replaced"}));
    replacement.id = Some(id3);
    client.insert_event(id, &replacement).await.unwrap();
    assert_eq!(
        client.get_event(id, id3).await.unwrap().data["n"],
        "replaced"
    );
    assert_eq!(client.get_event_count(id).await.unwrap(), 4);

    // Delete.
    client.delete_event(id, id3).await.unwrap();
    client.delete_event(id, id3).await.unwrap(); // already gone: still fine
    assert_eq!(client.get_event_count(id).await.unwrap(), 3);
    let err = client.get_event(id, id3).await.unwrap_err();
    let status = err.status();
    assert_eq!(status, Some(404), "{err}");
    assert!(!err.message().unwrap_or_default().is_empty());
}

#[tokio::test]
async fn heartbeats_merge_as_the_server_reports() {
    let server = Server::start();
    let client = server.client();
    let id = "hb";
    client
        .create_bucket_simple(id, "currentwindow")
        .await
        .unwrap();
    let a = json!({"app": "editor", "title": "main.rs"});
    let b = json!({"app": "browser", "title": "docs"});

    let first = client
        .heartbeat_returning(id, &event(0.0, 0.0, a.clone()), 2.0)
        .await
        .unwrap();
    let a_id = first.id.expect("id");
    assert_eq!(secs(&first), 0.0);

    // Within pulsetime: the same event grows.
    let merged = client
        .heartbeat_returning(id, &event(1.0, 0.0, a.clone()), 2.0)
        .await
        .unwrap();
    assert_eq!(
        (merged.id, merged.timestamp, secs(&merged)),
        (Some(a_id), at(0.0), 1.0)
    );
    let merged = client
        .heartbeat_returning(id, &event(3.0, 0.0, a.clone()), 2.0)
        .await
        .unwrap();
    assert_eq!((merged.id, secs(&merged)), (Some(a_id), 3.0));

    // Different data: a new event.
    let other = client
        .heartbeat_returning(id, &event(4.0, 0.0, b.clone()), 2.0)
        .await
        .unwrap();
    assert_ne!(other.id, Some(a_id));
    assert_eq!((other.timestamp, secs(&other)), (at(4.0), 0.0));

    // Same data but after end + pulsetime: a new event.
    let late = client
        .heartbeat_returning(id, &event(10.0, 0.0, b.clone()), 2.0)
        .await
        .unwrap();
    assert_ne!(late.id, other.id);

    // Queued (Python-style) heartbeats carry durations and still merge.
    client
        .heartbeat(id, &event(11.0, 5.0, b.clone()), 2.0)
        .await
        .unwrap();
    client
        .heartbeat(id, &event(16.0, 5.0, b.clone()), 2.0)
        .await
        .unwrap();

    let events = client.get_events(id, None, None, None).await.unwrap();
    let summary: Vec<_> = events
        .iter()
        .map(|e| (e.timestamp, secs(e), e.data["app"].clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (at(10.0), 11.0, json!("browser")),
            (at(4.0), 0.0, json!("browser")),
            (at(0.0), 3.0, json!("editor")),
        ]
    );
    // Fractional pulsetime is sent as such.
    let frac = client
        .heartbeat_returning(id, &event(21.4, 0.0, b.clone()), 0.5)
        .await
        .unwrap();
    assert_eq!((frac.timestamp, secs(&frac)), (at(10.0), 11.4));
}

#[tokio::test]
async fn settings_round_trip() {
    let server = Server::start();
    let client = server.client();
    let values = [
        ("startOfDay", json!("04:00")),
        ("durationDefault", json!(3600)),
        ("ratio", json!(2.5)),
        ("devmode", json!(true)),
        (
            "classes",
            json!([{"name": ["Work"], "rule": {"type": "regex", "regex": "vim"}}]),
        ),
        (
            "nested",
            json!({"a": [1, 2.5, null, true], "b": {"c": "d"}}),
        ),
        ("nothing", Value::Null),
    ];
    assert!(client.get_settings().await.unwrap().is_empty());
    for (key, value) in &values {
        client.set_setting(key, value).await.unwrap();
    }
    for (key, value) in &values {
        assert_eq!(&client.get_setting(key).await.unwrap(), value, "{key}");
    }
    let all = client.get_settings().await.unwrap();
    assert_eq!(all.len(), values.len(), "{all:?}");
    for (key, value) in &values {
        assert_eq!(&all[*key], value);
    }
    // Typed values serialise too.
    client.set_setting("typed", &vec![1u8, 2, 3]).await.unwrap();
    assert_eq!(client.get_setting("typed").await.unwrap(), json!([1, 2, 3]));
    // Overwrite, delete, missing.
    client.set_setting("startOfDay", "05:00").await.unwrap();
    assert_eq!(client.get_setting("startOfDay").await.unwrap(), "05:00");
    client.delete_setting("startOfDay").await.unwrap();
    client.delete_setting("startOfDay").await.unwrap();
    assert_eq!(client.get_setting("startOfDay").await.unwrap(), Value::Null);
    assert!(!client
        .get_settings()
        .await
        .unwrap()
        .contains_key("startOfDay"));
    assert_eq!(client.get_setting("never-set").await.unwrap(), Value::Null);
}

#[tokio::test]
async fn export_import_round_trip() {
    let server = Server::start();
    let client = server.client();
    let window = bucket("aw-watcher-window_test-host", "currentwindow");
    let afk = bucket("aw-watcher-afk_test-host", "afkstatus");
    client.create_bucket(&window).await.unwrap();
    client.create_bucket(&afk).await.unwrap();
    let window_events = vec![
        event(0.0, 30.0, json!({"app": "a", "title": "t1"})),
        event(30.0, 12.5, json!({"app": "b", "title": "t2"})),
        event(50.0, 0.0, json!({"app": "a", "title": "ü ✓"})),
    ];
    let afk_events = vec![
        event(0.0, 45.0, json!({"status": "not-afk"})),
        event(45.0, 100.0, json!({"status": "afk"})),
    ];
    client
        .insert_events(&window.id, window_events.clone())
        .await
        .unwrap();
    client
        .insert_events(&afk.id, afk_events.clone())
        .await
        .unwrap();

    // One bucket.
    let one = client.export_bucket(&window.id).await.unwrap();
    assert_eq!(one.buckets.len(), 1);
    let exported = &one.buckets[&window.id];
    assert_eq!(exported._type, "currentwindow");
    assert_eq!(exported.metadata.start, Some(at(0.0)));
    let exported_events = &exported.events.as_ref().expect("events");
    assert_eq!(content(exported_events), content(&window_events));
    assert!(
        exported_events[0].timestamp >= exported_events[1].timestamp,
        "newest first"
    );

    // Everything.
    let all = client.export_all().await.unwrap();
    assert_eq!(all.buckets.len(), 2);

    // Into an empty server.
    client.delete_bucket(&window.id).await.unwrap();
    client.delete_bucket(&afk.id).await.unwrap();
    client.import(all.clone()).await.unwrap();
    let buckets = client.get_buckets().await.unwrap();
    assert_eq!(buckets.len(), 2);
    for (b, events) in [(&window, &window_events), (&afk, &afk_events)] {
        let got = &buckets[&b.id];
        assert_eq!(
            (&got._type, &got.client, &got.hostname),
            (&b._type, &b.client, &b.hostname)
        );
        assert_eq!(got.data, b.data);
        let stored = client.get_events(&b.id, None, None, None).await.unwrap();
        assert_eq!(content(&stored), content(events), "{}", b.id);
    }

    // Importing the same document again merges: nothing is duplicated.
    client.import(all.clone()).await.unwrap();
    assert_eq!(client.get_event_count(&window.id).await.unwrap(), 3);
    assert_eq!(client.get_event_count(&afk.id).await.unwrap(), 2);

    // The round trip is stable: exporting again gives the same content.
    let again = client.export_all().await.unwrap();
    for (id, b) in &all.buckets {
        let before = &b.events.as_ref().unwrap();
        let after = &again.buckets[id].events.as_ref().unwrap();
        assert_eq!(content(before), content(after));
    }
}

/// Reproducer for a server issue: a heartbeat-merged event of 1.001 s is stored as exactly
/// 1 001 000 000 ns and exported as `1.001`, but the server reads `1.001` back as
/// `trunc(1.001 × 1e9)` = 1 000 999 999 ns, so importing its own export does not recognise
/// the event as already present and inserts a duplicate.
#[tokio::test]
async fn reimport_of_heartbeat_merged_export_is_idempotent() {
    let server = Server::start();
    let client = server.client();
    client.create_bucket_simple("dup", "t").await.unwrap();
    for ts in [0.0, 1.001] {
        client
            .heartbeat("dup", &event(ts, 0.0, json!({"a": 1})), 5.0)
            .await
            .unwrap();
    }
    let export = client.export_bucket("dup").await.unwrap();
    client.import(export).await.unwrap();
    assert_eq!(client.get_event_count("dup").await.unwrap(), 1);
}

/// Needs the query engine; the server may still answer 501 until it lands.
#[tokio::test]
async fn query_round_trip() {
    let server = Server::start();
    let client = server.client();
    let id = "query-window";
    client
        .create_bucket_simple(id, "currentwindow")
        .await
        .unwrap();
    client
        .insert_events(
            id,
            vec![
                event(0.0, 10.0, json!({"app": "a"})),
                event(10.0, 5.0, json!({"app": "b"})),
                event(3600.0, 20.0, json!({"app": "a"})),
            ],
        )
        .await
        .unwrap();
    let query = format!(
        "events = query_bucket(\"{id}\");\nevents = merge_events_by_keys(events, [\"app\"]);\nRETURN = sort_by_duration(events);"
    );
    let periods = vec![
        (at(-10.0), at(100.0)),
        (at(0.0), at(7200.0)),
        (at(9000.0), at(9999.0)),
    ];
    let results = client.query(&query, periods).await.unwrap();
    assert_eq!(results.len(), 3);
    let apps = |v: &Value| -> Vec<(String, f64)> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["data"]["app"].as_str().unwrap().to_string(),
                    e["duration"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        apps(&results[0]),
        vec![("a".into(), 10.0), ("b".into(), 5.0)]
    );
    assert_eq!(
        apps(&results[1]),
        vec![("a".into(), 30.0), ("b".into(), 5.0)]
    );
    assert!(apps(&results[2]).is_empty());
}

#[tokio::test]
async fn query_errors_carry_status_and_message() {
    let server = Server::start();
    let client = server.client();
    // An empty program is an error for the engine (500 EmptyQuery): a typed HTTP error with
    // the server's message.
    let err = client
        .query("", vec![(at(0.0), at(10.0))])
        .await
        .unwrap_err();
    let status = err.status();
    assert_eq!(status, Some(500), "{err}");
    assert!(!err.message().unwrap_or_default().is_empty(), "{err:?}");
    assert!(err.url().unwrap().ends_with("/api/0/query/"), "{err}");
}

#[tokio::test]
async fn wait_for_start_waits_for_a_late_server() {
    let port = free_port();
    let client = AwClient::new("127.0.0.1", port, "waiter").unwrap();
    let waiting = tokio::spawn({
        let client = client.clone();
        // Longer than the default: the server's start is on this machine's time.
        async move {
            client
                .wait_for_start_timeout(Duration::from_secs(120))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _server = tokio::task::spawn_blocking(move || Server::start_on(port))
        .await
        .unwrap();
    waiting.await.unwrap().unwrap();
    assert!(client.get_info().await.unwrap().testing);
}

#[tokio::test]
async fn wait_for_start_gives_up_with_the_last_error() {
    let port = free_port();
    let client = AwClient::new("127.0.0.1", port, "waiter").unwrap();
    let started = std::time::Instant::now();
    let err = client
        .wait_for_start_timeout(Duration::from_millis(400))
        .await
        .unwrap_err();
    // It gave up (only a hang would reach this bound; the time is the machine's).
    assert!(started.elapsed() < Duration::from_secs(60));
    match &err {
        ClientError::NotStarted {
            last_error, url, ..
        } => {
            assert!(last_error.is_connect(), "{last_error}");
            assert!(url.contains(&format!("127.0.0.1:{port}")), "{url}");
        }
        other => panic!("unexpected {other:?}"),
    }
}
