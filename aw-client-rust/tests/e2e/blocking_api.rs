//! The blocking client against a real server: every method once, plus its threading
//! behaviour (clones across threads, use from inside an async runtime).

use std::time::Duration;

use aw_client_rust::aw_models::Bucket;
use aw_client_rust::blocking::AwClient;
use serde_json::{json, Value};

use crate::common::{at, data, event, free_port, secs, Server};

#[test]
fn blocking_buckets_events_and_heartbeats() {
    let server = Server::start();
    let client = server.blocking();
    assert!(client.get_info().unwrap().testing);
    client.wait_for_start().unwrap();

    let id = "aw-watcher-window_blocking";
    client.create_bucket_simple(id, "currentwindow").unwrap();
    client.create_bucket_simple(id, "currentwindow").unwrap(); // 304 is fine
    let full = Bucket {
        bid: None,
        id: "full".into(),
        _type: "t".into(),
        client: "c".into(),
        hostname: "h".into(),
        created: Some(at(0.0)),
        data: data(json!({"x": 1})),
        metadata: Default::default(),
        events: None,
        last_updated: None,
    };
    assert!(client.ensure_bucket(&full).unwrap());
    client.create_bucket(&full).unwrap();
    assert!(!client.ensure_bucket(&full).unwrap());
    assert_eq!(client.get_bucket("full").unwrap().data, full.data);
    assert_eq!(client.get_buckets().unwrap().len(), 2);
    assert_eq!(client.get_bucket(id).unwrap().client, "aw-client-rust-test");

    // Heartbeats every second with pulsetime 2 merge into one event.
    let d = json!({"app": "term", "title": "vim"});
    for i in 0..5 {
        client
            .heartbeat(id, &event(f64::from(i), 0.0, d.clone()), 2.0)
            .unwrap();
    }
    let hb = client
        .heartbeat_returning(id, &event(5.0, 0.0, json!({"app": "x"})), 2.0)
        .unwrap();
    assert_eq!(secs(&hb), 0.0);
    let events = client.get_events(id, None, None, None).unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!((events[1].timestamp, secs(&events[1])), (at(0.0), 4.0));

    client
        .insert_event(id, &event(100.0, 1.0, json!({"app": "y"})))
        .unwrap();
    client
        .insert_events(id, vec![event(200.0, 1.0, json!({"app": "z"}))])
        .unwrap();
    let stored = client
        .insert_events_returning(id, &[event(300.0, 1.0, json!({"app": "w"}))])
        .unwrap();
    let wid = stored[0].id.unwrap();
    assert_eq!(client.get_event(id, wid).unwrap().data["app"], "w");
    assert_eq!(client.get_event_count(id).unwrap(), 5);
    let n = client
        .get_event_count_range(id, Some(at(150.0)), Some(at(400.0)))
        .unwrap();
    // The client must send start/end (this server honours them).
    assert_eq!(n, 2);
    let newest = client
        .get_events(id, Some(at(50.0)), None, Some(2))
        .unwrap();
    let apps: Vec<_> = newest.iter().map(|e| e.data["app"].clone()).collect();
    assert_eq!(apps, vec![json!("w"), json!("z")]);
    client.delete_event(id, wid).unwrap();
    assert_eq!(client.get_event_count(id).unwrap(), 4);

    client.delete_bucket(id).unwrap();
    assert!(client.get_bucket(id).unwrap_err().is_not_found());
}

#[test]
fn blocking_settings_export_import() {
    let server = Server::start();
    let client = server.blocking();
    client.set_setting("theme", "dark").unwrap();
    client
        .set_setting("views", &json!([{"id": "summary"}]))
        .unwrap();
    assert_eq!(client.get_setting("theme").unwrap(), "dark");
    assert_eq!(client.get_settings().unwrap().len(), 2);
    client.delete_setting("theme").unwrap();
    assert_eq!(client.get_setting("theme").unwrap(), Value::Null);

    client.create_bucket_simple("b", "t").unwrap();
    client
        .insert_events(
            "b",
            vec![
                event(0.0, 1.0, json!({"k": 1})),
                event(5.0, 2.5, json!({"k": 2})),
            ],
        )
        .unwrap();
    let one = client.export_bucket("b").unwrap();
    let all = client.export_all().unwrap();
    assert_eq!(one.buckets.keys().collect::<Vec<_>>(), vec!["b"]);
    assert_eq!(all.buckets.len(), 1);
    client.delete_bucket("b").unwrap();
    client.import(one).unwrap();
    let events = client.get_events("b", None, None, None).unwrap();
    let got: Vec<_> = events
        .iter()
        .map(|e| (e.timestamp, secs(e), e.data.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (at(5.0), 2.5, data(json!({"k": 2}))),
            (at(0.0), 1.0, data(json!({"k": 1}))),
        ]
    );
    client.import(all).unwrap();
    assert_eq!(client.get_event_count("b").unwrap(), 2);

    let err = client.query("", vec![(at(0.0), at(1.0))]).unwrap_err();
    assert_eq!(err.status(), Some(500), "{err}");
}

#[test]
fn blocking_clones_work_from_many_threads() {
    let server = Server::start();
    let client = server.blocking();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let client = client.clone();
            std::thread::spawn(move || {
                let id = format!("thread-{t}");
                client.create_bucket_simple(&id, "t").unwrap();
                for i in 0..25 {
                    client
                        .heartbeat(&id, &event(f64::from(i), 0.0, json!({"t": t})), 1.5)
                        .unwrap();
                }
                id
            })
        })
        .collect();
    for handle in handles {
        let id = handle.join().unwrap();
        let events = client.get_events(&id, None, None, None).unwrap();
        assert_eq!(events.len(), 1, "{id}");
        assert_eq!(secs(&events[0]), 24.0);
    }
    drop(client);
}

#[test]
fn blocking_fields_are_live() {
    let server = Server::start();
    let other = Server::start();
    let mut client = server.blocking();
    client.create_bucket_simple("on-first", "t").unwrap();
    client.baseurl = other.blocking().baseurl;
    client.name = "renamed".into();
    client.hostname = "elsewhere".into();
    client.create_bucket_simple("on-second", "t").unwrap();
    let b = other.blocking().get_bucket("on-second").unwrap();
    assert_eq!(
        (b.client.as_str(), b.hostname.as_str()),
        ("renamed", "elsewhere")
    );
    assert!(server
        .blocking()
        .get_bucket("on-second")
        .unwrap_err()
        .is_not_found());
}

/// reqwest::blocking and `Runtime::block_on` panic inside an async runtime; this client
/// does not (it blocks the calling thread, which is fine here since the server is another
/// process).
#[tokio::test(flavor = "current_thread")]
async fn blocking_client_inside_a_current_thread_runtime() {
    let server = Server::start();
    let client = server.blocking();
    client.create_bucket_simple("inside", "t").unwrap();
    assert_eq!(client.get_event_count("inside").unwrap(), 0);
    drop(client); // dropping inside the runtime must not panic either
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_client_inside_a_multi_thread_runtime_and_spawn_blocking() {
    let server = Server::start();
    let client = server.blocking();
    assert!(client.get_info().unwrap().testing);
    let moved = client.clone();
    let count = tokio::task::spawn_blocking(move || {
        moved.create_bucket_simple("sb", "t").unwrap();
        moved.get_event_count("sb").unwrap()
    })
    .await
    .unwrap();
    assert_eq!(count, 0);
    let built_inside = AwClient::new("127.0.0.1", server.port, "inner").unwrap();
    assert_eq!(built_inside.get_buckets().unwrap().len(), 1);
}

#[test]
fn blocking_connection_refused_names_the_url() {
    let port = free_port();
    let client = AwClient::new("127.0.0.1", port, "nobody-home").unwrap();
    let err = client.get_info().unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("http://127.0.0.1:{port}/api/0/info")),
        "{text}"
    );
    let err = client
        .wait_for_start_timeout(Duration::from_millis(200))
        .unwrap_err();
    assert!(err.to_string().contains(&port.to_string()), "{err}");
}

/// Bucket ids with quotes, semicolons, newlines, backslashes and non-ASCII text go into the
/// desktop query as exactly those ids (the server's own lexer reads them back); an id that
/// ends with a backslash cannot be written, and the query says so instead of reading
/// another bucket.
#[test]
fn hostile_bucket_ids_read_back_as_themselves_in_built_queries() {
    use aw_client_rust::queries::{full_desktop_query, try_full_desktop_query, DesktopQueryParams};
    let server = Server::start();
    let client = server.blocking();
    for text in [
        r#"win"; RETURN = 1; x = ""#,
        "line\nbreak",
        r"back\slash\ x\\y",
        "ünïcödé ✓",
        r#"q\"uote"#,
    ] {
        let literal = aw_client_rust::query_literal::string(text).unwrap();
        let read = client
            .query(&format!("RETURN = {literal};"), vec![(at(0.0), at(1.0))])
            .unwrap();
        assert_eq!(read[0], json!(text), "{literal}");
    }
    let window = "aw-watcher-window_h\"; RETURN = 0; \"\nü\\d";
    let afk = "aw-watcher-afk_h;\\\"";
    client
        .create_bucket_simple(window, "currentwindow")
        .unwrap();
    client.create_bucket_simple(afk, "afkstatus").unwrap();
    client
        .insert_events(
            window,
            vec![event(0.0, 60.0, json!({"app": "editor", "title": "t"}))],
        )
        .unwrap();
    client
        .insert_events(afk, vec![event(0.0, 60.0, json!({"status": "not-afk"}))])
        .unwrap();
    let params = DesktopQueryParams {
        bid_window: window.into(),
        bid_afk: afk.into(),
        filter_afk: true,
        ..Default::default()
    };
    let result = client
        .query(&full_desktop_query(&params), vec![(at(-10.0), at(100.0))])
        .unwrap();
    assert_eq!(
        result[0]["window"]["duration"],
        json!(60.0),
        "{}",
        result[0]
    );
    assert_eq!(
        result[0]["window"]["app_events"][0]["data"]["app"],
        "editor"
    );

    let bad = DesktopQueryParams {
        bid_window: "aw-watcher-window_h\\".into(),
        ..params
    };
    assert!(try_full_desktop_query(&bad).is_err());
    let err = client
        .query(&full_desktop_query(&bad), vec![(at(-10.0), at(100.0))])
        .unwrap_err();
    assert!(err.to_string().contains("query_cannot_be_written"), "{err}");
}
