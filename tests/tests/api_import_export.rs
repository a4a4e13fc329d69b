//! Export and import through the real binary: one bucket, all buckets, JSON and multipart,
//! round trips, idempotent re-import.

use aw_tests::{Client, TestServer};
use serde_json::{json, Value};

fn seed(c: &mut Client) {
    c.post_json(
        "/api/0/buckets/aw-watcher-window_h",
        r#"{"client":"aw-watcher-window","type":"currentwindow","hostname":"h","data":{"k":"v"}}"#,
    );
    c.post_json(
        "/api/0/buckets/aw-watcher-afk_h",
        r#"{"client":"aw-watcher-afk","type":"afkstatus","hostname":"h"}"#,
    );
    let window: Vec<Value> = (0..50)
        .map(|i| json!({"timestamp": format!("2024-03-01T10:{:02}:00Z", i), "duration": 59.5, "data": {"app": format!("app{}", i % 4), "title": format!("t{i}")}}))
        .collect();
    c.post_json(
        "/api/0/buckets/aw-watcher-window_h/events",
        &Value::Array(window).to_string(),
    );
    let afk: Vec<Value> = (0..5)
        .map(|i| json!({"timestamp": format!("2024-03-01T1{i}:00:00Z"), "duration": 3000.0, "data": {"status": if i % 2 == 0 { "not-afk" } else { "afk" }}}))
        .collect();
    c.post_json(
        "/api/0/buckets/aw-watcher-afk_h/events",
        &Value::Array(afk).to_string(),
    );
    // Heartbeat-merged durations with odd fractions must survive export → import exactly.
    for ts in [
        "2024-03-02T00:00:00Z",
        "2024-03-02T00:00:01.001Z",
        "2024-03-02T00:00:02.000000007Z",
    ] {
        let hb =
            json!({"timestamp": ts, "duration": 0.333333333, "data": {"app": "hb", "title": "x"}});
        let r = c.post_json(
            "/api/0/buckets/aw-watcher-window_h/heartbeat?pulsetime=5",
            &hb.to_string(),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
}

/// The export with ids and server-maintained fields removed, for comparing two servers.
fn comparable(mut export: Value) -> Value {
    for bucket in export["buckets"].as_object_mut().unwrap().values_mut() {
        for e in bucket["events"].as_array_mut().unwrap() {
            e.as_object_mut().unwrap().remove("id");
        }
    }
    export
}

#[test]
fn export_one_and_all() {
    let s = TestServer::start();
    let mut c = s.client();
    seed(&mut c);
    let r = c.get("/api/0/buckets/aw-watcher-window_h/export");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-disposition"),
        Some("attachment; filename=aw-bucket-export_aw-watcher-window_h.json")
    );
    let doc = r.json();
    let b = &doc["buckets"]["aw-watcher-window_h"];
    assert_eq!(b["events"].as_array().unwrap().len(), 51);
    assert_eq!(b["events"][1]["data"]["title"], "t49");
    assert!(b["events"][0]["id"].is_i64());
    assert_eq!(b["data"], json!({"k": "v"}));
    assert_eq!(b["metadata"]["start"], "2024-03-01T10:00:00Z");
    let r = c.get("/api/0/export");
    assert_eq!(
        r.header("content-disposition"),
        Some("attachment; filename=aw-buckets-export.json")
    );
    assert_eq!(r.json()["buckets"].as_object().unwrap().len(), 2);
    assert_eq!(c.get("/api/0/buckets/nope/export").status, 404);
}

#[test]
fn import_round_trip_is_equal_and_idempotent() {
    let a = TestServer::start();
    let mut ca = a.client();
    seed(&mut ca);
    let export = ca.get("/api/0/export").body;

    let b = TestServer::start();
    let mut cb = b.client();
    assert_eq!(cb.post_json("/api/0/import", &export).status, 200);
    let again = cb.get("/api/0/export").json();
    assert_eq!(
        comparable(again.clone()),
        comparable(serde_json::from_str(&export).unwrap())
    );
    // Importing the same file again adds nothing.
    assert_eq!(cb.post_json("/api/0/import", &export).status, 200);
    assert_eq!(
        cb.get("/api/0/buckets/aw-watcher-window_h/events/count")
            .body,
        "51"
    );
    assert_eq!(
        comparable(cb.get("/api/0/export").json()),
        comparable(again)
    );
}

#[test]
fn import_merges_into_existing_buckets_and_ignores_ids() {
    let s = TestServer::start();
    let mut c = s.client();
    seed(&mut c);
    let existing_id = c
        .get("/api/0/buckets/aw-watcher-afk_h/events?limit=1")
        .json()[0]["id"]
        .clone();
    // One duplicate, one new event; the new one carries the id of an afk event.
    let doc = json!({"buckets": {"whatever": {"id": "aw-watcher-window_h", "type": "currentwindow", "client": "c", "hostname": "h", "events": [
        {"timestamp": "2024-03-01T10:00:00Z", "duration": 59.5, "data": {"title": "t0", "app": "app0"}},
        {"id": existing_id, "timestamp": "2024-03-02T10:00:00Z", "duration": 1.0, "data": {"app": "new"}}
    ]}}});
    assert_eq!(c.post_json("/api/0/import", &doc.to_string()).status, 200);
    assert_eq!(
        c.get("/api/0/buckets/aw-watcher-window_h/events/count")
            .body,
        "52"
    );
    // The afk event with that id is untouched (the reference overwrote it).
    assert_eq!(
        c.get(&format!(
            "/api/0/buckets/aw-watcher-afk_h/events/{existing_id}"
        ))
        .status,
        200
    );
    assert_eq!(
        c.get("/api/0/buckets/aw-watcher-afk_h/events/count").body,
        "5"
    );
}

fn multipart(field: &str, content: &str) -> (String, Vec<u8>) {
    let boundary = "----awtestboundary1234";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"export.json\"\r\nContent-Type: application/json\r\n\r\n{content}\r\n--{boundary}--\r\n"
    );
    (
        format!("multipart/form-data; boundary={boundary}"),
        body.into_bytes(),
    )
}

#[test]
fn import_multipart_like_the_web_ui() {
    let a = TestServer::start();
    let mut ca = a.client();
    seed(&mut ca);
    let export = ca.get("/api/0/buckets/aw-watcher-afk_h/export").body;
    let b = TestServer::start();
    let mut cb = b.client();
    let (ct, body) = multipart("buckets.json", &export);
    let r = cb.request(
        "POST",
        "/api/0/import",
        &[("Content-Type", &ct)],
        Some(&body),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        cb.get("/api/0/buckets/aw-watcher-afk_h/events/count").body,
        "5"
    );
    let (ct, body) = multipart("buckets", &export);
    assert_eq!(
        cb.request(
            "POST",
            "/api/0/import",
            &[("Content-Type", &ct)],
            Some(&body)
        )
        .status,
        200
    );
    let (ct, body) = multipart("other", &export);
    assert_eq!(
        cb.request(
            "POST",
            "/api/0/import",
            &[("Content-Type", &ct)],
            Some(&body)
        )
        .status,
        422
    );
    let (ct, body) = multipart("buckets.json", "{not json");
    assert_eq!(
        cb.request(
            "POST",
            "/api/0/import",
            &[("Content-Type", &ct)],
            Some(&body)
        )
        .status,
        400
    );
}

#[test]
fn import_errors() {
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(c.post_json("/api/0/import", "{}").status, 422);
    assert_eq!(c.post_json("/api/0/import", "{bad").status, 400);
    assert_eq!(
        c.post_json("/api/0/import", r#"{"buckets": {"x": {"id": "x"}}}"#)
            .status,
        422
    );
    assert_eq!(
        c.request(
            "POST",
            "/api/0/import",
            &[("Content-Type", "text/plain")],
            Some(b"{}")
        )
        .status,
        404
    );
}

/// An import keeps every event that can be stored and reports each one that cannot (the
/// reference skipped them silently; refusing the whole document left nothing imported).
/// Data nested 120 levels deep imports; 200 levels cannot be stored (JSON bodies are
/// limited to 127 levels). A bucket created with events still refuses a bad one with 4xx.
#[test]
fn an_import_keeps_what_it_can_and_reports_what_it_could_not() {
    let s = TestServer::start();
    let mut c = s.client();
    let deep = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
    let doc = |events: &str| {
        format!(
            r#"{{"buckets":{{"x":{{"id":"x","type":"t","client":"c","hostname":"h","events":[{events}]}}}}}}"#
        )
    };
    let good = r#"{"timestamp":"2020-01-01T00:00:00Z","duration":1,"data":{"ok":1}}"#;
    for (bad, reason) in [
        (
            format!(
                r#"{{"timestamp":"2020-01-01T00:00:01Z","data":{}}}"#,
                deep(200)
            ),
            "127 levels of nesting",
        ),
        (
            r#"{"timestamp":"2020-01-01T00:00:00Z","duration":1e13,"data":{}}"#.to_string(),
            "duration",
        ),
        (
            r#"{"timestamp":"1500-01-01T00:00:00Z","data":{}}"#.to_string(),
            "timestamp",
        ),
        (
            r#"{"timestamp":"2020-01-01T00:00:00Z","data":7}"#.to_string(),
            "data",
        ),
        (r#"{"data":{}}"#.to_string(), "timestamp"),
    ] {
        let r = c.post_json("/api/0/import", &doc(&format!("{good},{bad},{good}")));
        assert_eq!(r.status, 200, "{bad}: {}", r.body);
        let report = r.json();
        assert_eq!(report["imported"], 2, "{report}");
        assert_eq!(report["skipped"], 1, "{report}");
        let problem = &report["problems"][0];
        assert_eq!(
            (problem["bucket"].as_str(), problem["index"].as_u64()),
            (Some("x"), Some(1))
        );
        assert!(
            problem["reason"].as_str().unwrap().contains(reason),
            "{report}"
        );
        // Both good events are stored (duplicates are judged against what was stored before).
        assert_eq!(c.get("/api/0/buckets/x/events/count").body, "2", "{bad}");
        assert_eq!(c.delete("/api/0/buckets/x?force=1").status, 200);
        // A bucket created with the same events is refused as well.
        let r = c.post_json(
            "/api/0/buckets/y",
            &format!(r#"{{"client":"c","type":"t","hostname":"h","events":[{good},{bad}]}}"#),
        );
        assert!(
            (400..500).contains(&r.status),
            "{bad}: {} {}",
            r.status,
            r.body
        );
        assert_eq!(c.get("/api/0/buckets/y").status, 404, "{bad}");
    }
    let ok = format!(
        r#"{{"timestamp":"2020-01-01T00:00:01Z","data":{}}}"#,
        deep(120)
    );
    let r = c.post_json("/api/0/import", &doc(&format!("{good},{ok}")));
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        json!({"imported": 2, "skipped": 0, "problems": []})
    );
    assert_eq!(c.get("/api/0/buckets/x/events/count").body, "2");
}

/// Every bucket id gets a valid `Content-Disposition`: the reference's exact header where
/// the id is a plain token, RFC 6266 `filename*` where it is not (a control character made
/// hyper refuse the header, so that bucket's export failed).
#[test]
fn export_headers_are_valid_for_any_bucket_id() {
    let s = TestServer::start();
    let mut c = s.client();
    for (encoded, expected) in [
        ("plain-id_1.2", "attachment; filename=aw-bucket-export_plain-id_1.2.json"),
        (
            "a%20b%22c%3B%C3%A9",
            "attachment; filename=\"aw-bucket-export_a b_c;_.json\"; filename*=UTF-8''aw-bucket-export_a%20b%22c%3B%C3%A9.json",
        ),
        (
            "ctl%01x%0D%0Ay",
            "attachment; filename=\"aw-bucket-export_ctl_x__y.json\"; filename*=UTF-8''aw-bucket-export_ctl%01x%0D%0Ay.json",
        ),
    ] {
        let path = format!("/api/0/buckets/{encoded}");
        assert_eq!(
            c.post_json(&path, r#"{"client":"c","type":"t","hostname":"h"}"#)
                .status,
            200,
            "{encoded}"
        );
        let r = c.get(&format!("{path}/export"));
        assert_eq!(r.status, 200, "{encoded}");
        assert_eq!(r.header("content-disposition"), Some(expected));
    }
}

/// `format=csv` (issue 36, item 7): the header, a row per event oldest first, RFC 4180
/// quoting, formulas defused, nested values as JSON, a range cut to it; an unknown format
/// is 400 and the JSON export is unchanged without `format`.
#[test]
fn csv_export_is_what_a_spreadsheet_opens() {
    let s = TestServer::start();
    let mut c = s.client();
    for (id, host) in [("b1", "laptop"), ("b2", "=host")] {
        let r = c.post_json(
            &format!("/api/0/buckets/{id}"),
            &format!(r#"{{"client":"c","type":"t","hostname":"{host}"}}"#),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = c.post_json(
        "/api/0/buckets/b1/events",
        r#"[{"timestamp":"2026-01-01T10:00:00Z","duration":1.5,"data":{"app":"=cmd|' /C calc'!A0","title":"a, \"b\"\nc"}},
            {"timestamp":"2026-01-01T09:00:00Z","duration":60,"data":{"app":"Code","n":-3,"tags":["x",{"y":1}]}}]"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = c.post_json(
        "/api/0/buckets/b2/events",
        r#"[{"timestamp":"2026-01-01T09:30:00Z","duration":0,"data":{"ok":true,"none":null}}]"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);

    let r = c.get("/api/0/export?format=csv");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("text/csv; charset=utf-8"));
    assert!(r
        .header("content-disposition")
        .unwrap()
        .contains("aw-buckets-export.csv"));
    assert_eq!(
        r.body,
        "bucket,host,timestamp,duration,data.app,data.n,data.none,data.ok,data.tags,data.title\r\n\
         b1,laptop,2026-01-01T09:00:00Z,60.0,Code,-3,,,\"[\"\"x\"\",{\"\"y\"\":1}]\",\r\n\
         b1,laptop,2026-01-01T10:00:00Z,1.5,'=cmd|' /C calc'!A0,,,,,\"a, \"\"b\"\"\nc\"\r\n\
         b2,'=host,2026-01-01T09:30:00Z,0.0,,,,true,,\r\n"
    );
    // One bucket, a range: the event across its start is cut to it.
    let r = c.get(
        "/api/0/buckets/b1/export?format=csv&start=2026-01-01T09:00:30Z&end=2026-01-01T09:30:00Z",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body,
        "bucket,host,timestamp,duration,data.app,data.n,data.tags\r\n\
         b1,laptop,2026-01-01T09:00:30Z,30.0,Code,-3,\"[\"\"x\"\",{\"\"y\"\":1}]\"\r\n"
    );
    let r = c.get("/api/0/export?format=xml");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.json()["message"].as_str().unwrap().contains("xml"));
    let r = c.get("/api/0/export");
    assert_eq!(r.status, 200);
    assert!(r.json()["buckets"]["b1"]["events"].is_array());
    assert_eq!(c.get("/api/0/buckets/nope/export?format=csv").status, 404);
}
