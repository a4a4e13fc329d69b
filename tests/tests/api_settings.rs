//! Settings routes through the real binary.

use aw_tests::TestServer;
use serde_json::json;

#[test]
fn settings_round_trip() {
    let s = TestServer::start();
    let mut c = s.client();
    assert_eq!(c.get("/api/0/settings").json(), json!({}));
    let r = c.get("/api/0/settings/theme");
    assert_eq!((r.status, r.body.as_str()), (200, "null"));
    for (key, value) in [
        ("theme", json!("dark")),
        ("startOfDay", json!("04:00")),
        ("n", json!(3.5)),
        ("flag", json!(true)),
        (
            "classes",
            json!([{"name": ["Work"], "rule": {"type": "regex", "regex": "a|b"}}]),
        ),
        ("obj", json!({"a": [1, 2.5, null, true]})),
        ("nothing", json!(null)),
        ("dotted.key", json!(1)),
    ] {
        let r = c.post_json(&format!("/api/0/settings/{key}"), &value.to_string());
        assert_eq!((r.status, r.body.as_str()), (201, ""), "{key}");
        assert_eq!(
            c.get(&format!("/api/0/settings/{key}")).json(),
            value,
            "{key}"
        );
    }
    let all = c.get("/api/0/settings").json();
    assert_eq!(all.as_object().unwrap().len(), 8);
    assert_eq!(all["nothing"], json!(null));
    assert_eq!(all["dotted.key"], json!(1));
    // Overwrite, then delete (twice: a missing key is fine).
    c.post_json("/api/0/settings/theme", "\"light\"");
    assert_eq!(c.get("/api/0/settings/theme").json(), json!("light"));
    assert_eq!(c.delete("/api/0/settings/theme").status, 200);
    assert_eq!(c.delete("/api/0/settings/theme").status, 200);
    assert_eq!(c.get("/api/0/settings/theme").body, "null");
}

#[test]
fn settings_errors() {
    let s = TestServer::start();
    let mut c = s.client();
    let long = "k".repeat(128);
    for r in [
        c.get(&format!("/api/0/settings/{long}")),
        c.post_json(&format!("/api/0/settings/{long}"), "1"),
        c.delete(&format!("/api/0/settings/{long}")),
    ] {
        assert_eq!(r.status, 400);
        assert_eq!(r.json()["message"], "Too long key");
    }
    assert_eq!(c.post_json("/api/0/settings/x", "{bad").status, 400);
    assert_eq!(
        c.request("POST", "/api/0/settings/x", &[], Some(b"1"))
            .status,
        404
    );
    let ok = "k".repeat(127);
    assert_eq!(
        c.post_json(&format!("/api/0/settings/{ok}"), "1").status,
        201
    );
}
