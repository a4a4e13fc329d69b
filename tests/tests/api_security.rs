//! Host check, CORS and API key through the real binary.

use aw_tests::TestServer;

#[test]
fn host_header_check() {
    let s = TestServer::start();
    let mut c = s.client();
    for host in ["127.0.0.1", "localhost", &format!("localhost:{}", s.port)] {
        assert_eq!(
            c.request("GET", "/api/0/info", &[("Host", host)], None)
                .status,
            200,
            "{host}"
        );
    }
    for host in [
        "evil.com",
        "LOCALHOST",
        "[::1]",
        "192.168.1.2:5600",
        "127.0.0.1.evil.com",
    ] {
        let r = c.request("GET", "/api/0/info", &[("Host", host)], None);
        assert_eq!(r.status, 400, "{host}");
        assert_eq!(r.json()["message"], "Host header is invalid");
    }
    // Static files and OPTIONS too; a rejected DELETE deletes nothing.
    assert_eq!(
        c.request("GET", "/", &[("Host", "evil.com")], None).status,
        400
    );
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    assert_eq!(
        c.request("DELETE", "/api/0/buckets/b", &[("Host", "evil.com")], None)
            .status,
        400
    );
    assert_eq!(c.get("/api/0/buckets/b").status, 200);
}

#[test]
fn host_check_off_when_not_bound_to_loopback_name() {
    let s = TestServer::start_with(&["--host", "0.0.0.0"]);
    let mut c = s.client();
    assert_eq!(
        c.request("GET", "/api/0/info", &[("Host", "example.com")], None)
            .status,
        200
    );
}

#[test]
fn cors() {
    let s = TestServer::start();
    let mut c = s.client();
    let own = format!("http://127.0.0.1:{}", s.port);
    for origin in [
        own.as_str(),
        "moz-extension://1234-abcd",
        "chrome-extension://nglaklhklhcoonedhgnpgddginnjdadi",
    ] {
        let r = c.request("GET", "/api/0/info", &[("Origin", origin)], None);
        assert_eq!(r.status, 200, "{origin}");
        assert_eq!(r.header("access-control-allow-origin"), Some(origin));
    }
    // No Origin: not CORS, no header.
    assert_eq!(
        c.get("/api/0/info").header("access-control-allow-origin"),
        None
    );
    // Disallowed origin: 403 for any method, and the handler does not run.
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    for (m, origin) in [
        ("GET", "http://evil.com"),
        ("DELETE", "chrome-extension://other"),
    ] {
        let r = c.request(m, "/api/0/buckets/b", &[("Origin", origin)], None);
        assert_eq!(r.status, 403, "{m} {origin}");
        assert!(r.header("access-control-allow-origin").is_none());
    }
    assert_eq!(c.get("/api/0/buckets/b").status, 200);
    // Preflight.
    let r = c.request(
        "OPTIONS",
        "/api/0/buckets/x/heartbeat",
        &[
            ("Origin", "moz-extension://x"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "Content-Type, X-Thing"),
        ],
        None,
    );
    assert_eq!((r.status, r.body.as_str()), (200, ""));
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("moz-extension://x")
    );
    assert_eq!(
        r.header("access-control-allow-headers"),
        Some("content-type, x-thing")
    );
    let methods = r
        .header("access-control-allow-methods")
        .unwrap()
        .to_string();
    // The reference's three, and PUT and PATCH of the routes that edit history.
    for m in ["GET", "POST", "DELETE", "PUT", "PATCH"] {
        assert!(methods.contains(m), "{methods}");
    }
    let r = c.request(
        "OPTIONS",
        "/api/0/info",
        &[
            ("Origin", "moz-extension://x"),
            ("Access-Control-Request-Method", "TRACE"),
        ],
        None,
    );
    assert_eq!(r.status, 403);
    let r = c.request(
        "OPTIONS",
        "/api/0/info",
        &[
            ("Origin", "http://evil.com"),
            ("Access-Control-Request-Method", "GET"),
        ],
        None,
    );
    assert_eq!(r.status, 403);
    assert_eq!(
        c.request("OPTIONS", "/anything/at/all", &[], None).status,
        200
    );
}

#[test]
fn cors_from_config_and_testing_mode() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        "cors = [\"http://my.dashboard\"]\ncors_regex = [\"^https://.*\\\\.example\\\\.org$\"]\n",
    )
    .unwrap();
    let s = TestServer::start_with(&["--config", config.to_str().unwrap()]);
    let mut c = s.client();
    for (origin, status) in [
        ("http://my.dashboard", 200),
        ("https://a.example.org", 200),
        ("https://a.example.org.evil", 403),
        ("http://127.0.0.1:27180", 403),
    ] {
        assert_eq!(
            c.request("GET", "/api/0/info", &[("Origin", origin)], None)
                .status,
            status,
            "{origin}"
        );
    }
    let t = TestServer::start_with(&["--testing"]);
    let mut c = t.client();
    for origin in ["http://127.0.0.1:27180", "chrome-extension://anything"] {
        assert_eq!(
            c.request("GET", "/api/0/info", &[("Origin", origin)], None)
                .status,
            200,
            "{origin}"
        );
    }
    assert_eq!(c.get("/api/0/info").json()["testing"], true);
}

#[test]
fn cors_patterns_match_the_whole_origin_and_unanchored_ones_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        "cors_regex = [\"https://dash\\\\.example\\\\.com\", \"^http://anchored\\\\.test$\"]\n",
    )
    .unwrap();
    let s = TestServer::start_with(&["--config", config.to_str().unwrap()]);
    let mut c = s.client();
    for (origin, status) in [
        ("https://dash.example.com", 200),
        ("https://dash.example.com.evil.net", 403),
        ("https://evil.net/?https://dash.example.com", 403),
        ("http://anchored.test", 200),
        // The built-in patterns are whole-origin too.
        ("chrome-extension://nglaklhklhcoonedhgnpgddginnjdadi", 200),
        ("chrome-extension://nglaklhklhcoonedhgnpgddginnjdadix", 403),
        ("moz-extension://0d6f5c9e-1234", 200),
    ] {
        assert_eq!(
            c.request("GET", "/api/0/info", &[("Origin", origin)], None)
                .status,
            status,
            "{origin}"
        );
    }
    let log = s.output_tail();
    assert!(
        log.contains(
            "cors_regex 'https://dash\\.example\\.com' is matched against the whole origin"
        ),
        "{log}"
    );
    assert!(!log.contains("cors_regex '^http://anchored"), "{log}");
}

/// Headers as Chromium sends them for a request of the given mode and destination from a
/// page on another site.
fn from_another_site<'a>(mode: &'a str, dest: &'a str) -> [(&'a str, &'a str); 3] {
    [
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Mode", mode),
        ("Sec-Fetch-Dest", dest),
    ]
}

#[test]
fn cross_site_requests_without_cors_do_no_work() {
    let s = TestServer::start();
    let mut c = s.client();
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    // What an <img>, a <script>, a no-cors fetch and an <iframe> on another site send.
    for (mode, dest) in [
        ("no-cors", "image"),
        ("no-cors", "script"),
        ("no-cors", "empty"),
        ("navigate", "iframe"),
    ] {
        for path in [
            "/api/0/export",
            "/api/0/info",
            "/%61pi/0/export",
            "//api/0/buckets/",
        ] {
            let r = c.request("GET", path, &from_another_site(mode, dest), None);
            assert_eq!(r.status, 403, "{mode} {dest} {path}");
            let message = r.json()["message"].as_str().unwrap().to_string();
            assert!(message.contains("Cross-site request refused"), "{message}");
            assert_eq!(r.header("Access-Control-Allow-Origin"), None);
        }
    }
    // A refused DELETE deletes nothing.
    let r = c.request(
        "DELETE",
        "/api/0/buckets/b",
        &from_another_site("no-cors", "empty"),
        None,
    );
    assert_eq!(r.status, 403);
    assert_eq!(c.get("/api/0/buckets/b").status, 200);

    // Allowed: a link the user follows (a top-level navigation), the dashboard's files,
    // the same site or origin, a typed URL, watchers and scripts (no Sec-Fetch-* at all).
    let allowed: [&[(&str, &str)]; 6] = [
        &from_another_site("navigate", "document"),
        &[
            ("Sec-Fetch-Site", "same-origin"),
            ("Sec-Fetch-Mode", "cors"),
            ("Sec-Fetch-Dest", "empty"),
        ],
        &[
            ("Sec-Fetch-Site", "same-site"),
            ("Sec-Fetch-Mode", "no-cors"),
            ("Sec-Fetch-Dest", "image"),
        ],
        &[
            ("Sec-Fetch-Site", "none"),
            ("Sec-Fetch-Mode", "cors"),
            ("Sec-Fetch-Dest", "empty"),
        ],
        &[
            ("Sec-Fetch-Site", "none"),
            ("Sec-Fetch-Mode", "navigate"),
            ("Sec-Fetch-Dest", "document"),
        ],
        &[],
    ];
    for headers in allowed {
        assert_eq!(
            c.request("GET", "/api/0/export", headers, None).status,
            200,
            "{headers:?}"
        );
    }
    assert_eq!(
        c.request("GET", "/", &from_another_site("no-cors", "image"), None)
            .status,
        200,
        "the dashboard's own files are not the API"
    );
    // With an Origin, CORS decides: the extension's origin is allowed, another site's not.
    let mut extension = from_another_site("cors", "empty").to_vec();
    extension.push((
        "Origin",
        "chrome-extension://nglaklhklhcoonedhgnpgddginnjdadi",
    ));
    assert_eq!(
        c.request("GET", "/api/0/buckets/", &extension, None).status,
        200
    );
    let mut page = from_another_site("cors", "empty").to_vec();
    page.push(("Origin", "https://evil.example"));
    assert_eq!(c.request("GET", "/api/0/buckets/", &page, None).status, 403);

    let log = s.output_tail();
    assert!(
        log.contains("Refused a cross-site request from a web page"),
        "{log}"
    );
}

#[test]
fn api_key() {
    let s = TestServer::start_with_config("[auth]\napi_key = \"s3cret\"\n");
    let mut c = s.client();
    // Exempt: exactly /api/0/info, OPTIONS, and static files.
    assert_eq!(c.get("/api/0/info").status, 200);
    assert_eq!(c.get("/api/0/info/").status, 401);
    assert_eq!(
        c.request("OPTIONS", "/api/0/buckets/", &[], None).status,
        200
    );
    assert_eq!(c.get("/").status, 200);
    for (auth, status) in [
        ("", 401),
        ("Bearer wrong", 401),
        ("bearer s3cret", 401),
        ("Bearer s3cret", 200),
        ("Bearer s3cret2", 401),
    ] {
        let r = c.request("GET", "/api/0/buckets/", &[("Authorization", auth)], None);
        assert_eq!(r.status, status, "{auth:?}");
        if status == 401 {
            assert_eq!(
                r.json()["message"],
                "Missing or invalid API key. Set 'Authorization: Bearer <key>' header."
            );
        }
    }
    // Unknown API paths: 401 before 404; a bad Host still wins.
    assert_eq!(c.get("/api/0/nope").status, 401);
    assert_eq!(
        c.request("GET", "/api/0/buckets/", &[("Host", "evil.com")], None)
            .status,
        400
    );
    assert_eq!(c.request("GET", "//api/0/buckets/", &[], None).status, 401);
}

#[test]
fn empty_api_key_disables_auth() {
    let s = TestServer::start_with_config("[auth]\napi_key = \"\"\n");
    assert_eq!(s.client().get("/api/0/buckets/").status, 200);
}

/// Every spelling of an API path needs the key (COMPATIBILITY.md, server #17): percent-encoded letters,
/// encoded slashes, dot segments and doubled slashes, for GET, POST and DELETE. None of
/// them may read, create or delete anything without it; with the key they do what the plain
/// path does.
#[test]
fn api_key_guards_every_spelling_of_the_api() {
    let s = TestServer::start_with_config("[auth]\napi_key = \"s3cret\"\n");
    let mut c = s.client();
    let key = [("Authorization", "Bearer s3cret")];
    let json = |extra: &[(&'static str, &'static str)]| {
        let mut h = vec![("Content-Type", "application/json")];
        h.extend_from_slice(extra);
        h
    };
    let bucket = r#"{"client":"c","type":"t","hostname":"h"}"#;
    let r = c.request(
        "POST",
        "/api/0/buckets/kept",
        &json(&key),
        Some(bucket.as_bytes()),
    );
    assert_eq!(r.status, 200);

    // Spellings of `/api/0`: each letter of `api` encoded (either case of hex), all of
    // them, upper-case letters, doubled slashes, dot segments, encoded slashes.
    let mut prefixes: Vec<String> = vec![
        "/%61pi/0".into(),
        "/a%70i/0".into(),
        "/ap%69/0".into(),
        "/%61%70%69/0".into(),
        "/%61%50%49/0".into(),
        "/%41PI/0".into(),
        "/API/0".into(),
        "//api/0".into(),
        "///%61pi//0".into(),
        "/./api/0".into(),
        "/api/./0".into(),
        "/x/../api/0".into(),
        "/%2e/api/0".into(),
        "/x/%2e%2e/api/0".into(),
        "/api%2F0".into(),
        "/api%2f0".into(),
        "/%61pi%2F0".into(),
        "/api%5C0".into(),
        "/api/%30".into(),
    ];
    prefixes.push("/api/0".into());
    for prefix in &prefixes {
        for (method, tail, body) in [
            ("GET", "/export", None),
            ("GET", "/buckets/", None),
            ("GET", "/buckets/kept/events", None),
            ("GET", "/settings", None),
            ("POST", "/buckets/made", Some(bucket)),
            ("POST", "/buckets/kept/events", Some("[]")),
            ("POST", "/buckets/kept/heartbeat?pulsetime=1", Some("{}")),
            ("POST", "/query/", Some("{}")),
            ("DELETE", "/buckets/kept", None),
        ] {
            let path = format!("{prefix}{tail}");
            let headers = json(&[]);
            let r = c.request(method, &path, &headers, body.map(str::as_bytes));
            assert_eq!(r.status, 401, "{method} {path} without a key: {}", r.body);
            assert_eq!(
                r.json()["message"],
                "Missing or invalid API key. Set 'Authorization: Bearer <key>' header.",
                "{method} {path}"
            );
        }
    }
    // Nothing was created or deleted by the refused requests.
    let r = c.request("GET", "/api/0/buckets/", &key, None);
    assert_eq!(r.status, 200);
    let names: Vec<String> = r.json().as_object().unwrap().keys().cloned().collect();
    assert_eq!(names, vec!["kept".to_string()]);

    // With the key, an encoded spelling reaches the same route as the plain path.
    let r = c.request("GET", "/%61pi/0/buckets/kept", &key, None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["id"], "kept");
    let r = c.request(
        "POST",
        "/%61pi/0/buckets/made",
        &json(&key),
        Some(bucket.as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = c.request("DELETE", "/a%70i/0/buckets/made", &key, None);
    assert_eq!(r.status, 200, "{}", r.body);

    // The exemption is the literal path only; static files stay open.
    assert_eq!(c.get("/api/0/info").status, 200);
    assert_eq!(c.get("/%61pi/0/info").status, 401);
    assert_eq!(c.get("/").status, 200);
    assert_ne!(c.get("/apiary.html").status, 401);
}
