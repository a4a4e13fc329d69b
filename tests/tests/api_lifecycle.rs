//! The process: shutdown and restart keep every acknowledged write, crash safety, files
//! created on first start, flags and config, static files.

use aw_tests::TestServer;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn sigterm_restart_keeps_everything_acknowledged() {
    let mut s = TestServer::start();
    let mut c = s.client();
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    let mut expected = 0;
    for round in 0..5 {
        // Writes right before SIGTERM: nothing acknowledged may be lost (hazard 3).
        for i in 0..7 {
            let ts = format!("2020-01-01T{round:02}:{i:02}:00Z");
            let r = c.post_json(
                "/api/0/buckets/b/events",
                &json!([{"timestamp": ts, "duration": 1, "data": {"r": round, "i": i}}])
                    .to_string(),
            );
            assert_eq!(r.status, 200);
            expected += 1;
        }
        let r = c.post_json(
            "/api/0/buckets/b/heartbeat?pulsetime=5",
            &json!({"timestamp": format!("2021-01-01T00:00:{round:02}Z"), "data": {"hb": 1}})
                .to_string(),
        );
        assert_eq!(r.status, 200);
        if round == 0 {
            expected += 1;
        }
        c.post_json(&format!("/api/0/settings/round{round}"), &round.to_string());
        drop(c);
        s.restart();
        c = s.client();
        assert_eq!(
            c.get("/api/0/buckets/b/events/count").body,
            expected.to_string(),
            "round {round}"
        );
        assert_eq!(
            c.get(&format!("/api/0/settings/round{round}")).json(),
            json!(round)
        );
        let hb = c
            .get("/api/0/buckets/b/events?start=2021-01-01T00:00:00Z")
            .json();
        assert_eq!(
            hb[0]["duration"],
            json!(round as f64),
            "merged heartbeat after round {round}"
        );
    }
}

#[test]
fn sigterm_exits_promptly_with_idle_keep_alive_connections() {
    let mut s = TestServer::start();
    // Watchers keep a connection open between heartbeats; each used to delay a stop by
    // Rocket's two-second grace period.
    let mut clients: Vec<_> = (0..3).map(|_| s.client()).collect();
    for c in &mut clients {
        assert_eq!(c.get("/api/0/info").status, 200);
    }
    let started = Instant::now();
    assert!(s.stop(), "not a clean stop");
    let took = started.elapsed();
    eprintln!("stop with 3 idle keep-alive connections: {took:?}");
    // Prompt means no grace period waited out: the bug cost at least Rocket's two seconds.
    // Measured on a two-core machine, idle or with another process keeping a core busy, the
    // stop takes 20-27 ms (the harness looks every 20 ms); 1.5 s is 50 times that, and still
    // below one grace period. The setting itself is checked where it is made (`server.rs`).
    assert!(
        took < Duration::from_millis(1500),
        "the stop took {took:?}: a grace period for idle connections?"
    );
}

/// A SIGTERM sent the moment the server says it is listening is a clean stop (exit 0, final
/// commit), not the default kill: the handlers once got installed only after that line, and
/// a test stopping a server at once failed CI this way. Both races behind it showed only on
/// a busy machine, so the rounds run beside busy threads (with them, the build before the
/// fix failed within a few rounds; without them, it passed).
#[test]
fn sigterm_right_after_the_listening_line_is_a_clean_stop() {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let done = done.clone();
            std::thread::spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let unclean = (0..30).find(|_| {
        let mut s = TestServer::start();
        !s.stop()
    });
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for b in busy {
        let _ = b.join();
    }
    assert_eq!(unclean, None, "a round whose stop was not a clean exit");
}

/// An import whose request has reached the server and is held there, half of its body
/// sent, until [`HeldImport::finish`] sends the rest: the test knows it is in flight (the
/// server counts it, `GET /api/0/health`) without guessing how long it takes to arrive.
struct HeldImport {
    stream: std::net::TcpStream,
    rest: Vec<u8>,
}

impl HeldImport {
    fn start(s: &TestServer, body: &str) -> HeldImport {
        use std::io::Write;
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", s.port)).unwrap();
        let (head, rest) = body.as_bytes().split_at(body.len() / 2);
        write!(
            stream,
            "POST /api/0/import HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: \
             application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            s.port,
            body.len()
        )
        .unwrap();
        stream.write_all(head).unwrap();
        stream.flush().unwrap();
        // This request and the import.
        aw_tests::wait_until("the import reaches the server", || {
            s.client().get("/api/0/health").json()["requests_in_flight"] == json!(2)
        });
        HeldImport {
            stream,
            rest: rest.to_vec(),
        }
    }

    /// Sends the rest of the body; the answer's status.
    fn finish(mut self) -> u16 {
        use std::io::{Read, Write};
        self.stream.write_all(&self.rest).unwrap();
        let mut answer = String::new();
        self.stream.read_to_string(&mut answer).unwrap();
        answer
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no HTTP answer: {answer:?}"))
    }
}

fn stored_events(s: &TestServer) -> usize {
    let buckets = s.client().get("/api/0/buckets/").json();
    buckets
        .as_object()
        .unwrap()
        .keys()
        .map(|b| {
            s.client()
                .get(&format!("/api/0/buckets/{b}/events/count"))
                .body
                .parse::<usize>()
                .unwrap()
        })
        .sum()
}

/// A request in flight when SIGTERM arrives is finished and answered before the server
/// exits (closing its connection would make the client retry an import or insert that was
/// already stored).
#[test]
fn sigterm_finishes_the_request_in_flight() {
    let mut s = TestServer::start();
    let data = aw_tests::dataset::Dataset::generate(7, "h", 0, 7);
    let import = HeldImport::start(&s, &data.export_json());
    let mut probe = s.client();
    let stopped = std::thread::spawn(move || {
        assert!(s.stop());
        s
    });
    // The server is stopping (it refuses new requests) and still waits for the import.
    aw_tests::wait_until("the server refuses new requests", || {
        probe.get("/api/0/info").status == 503
    });
    assert_eq!(import.finish(), 200);
    let mut s = stopped.join().unwrap();
    s.start_again();
    assert_eq!(stored_events(&s), data.event_count());
}

/// Once SIGTERM arrived, a request that comes in while the server waits for one in flight
/// is refused with 503 and stores nothing (it could otherwise be stored and then cut off
/// unanswered by the stop, and the client would send it again).
#[test]
fn requests_arriving_while_stopping_are_refused() {
    let mut s = TestServer::start();
    let created = s.client().post_json(
        "/api/0/buckets/late",
        r#"{"type":"t","client":"c","hostname":"h"}"#,
    );
    assert_eq!(created.status, 200, "{}", created.body);
    let body = aw_tests::dataset::Dataset::generate(30, "h", 0, 7).export_json();
    let import = HeldImport::start(&s, &body);
    let pid = s.pid().unwrap();
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    // The signal is handled on the server's own time: send until it says it is stopping.
    // Each insert answered 200 before that was stored and stays; none after.
    let mut late = None;
    let mut accepted = 0;
    aw_tests::wait_until("the server refuses new requests", || {
        let r = s.client().post_json(
            "/api/0/buckets/late/events",
            &format!(
                r#"[{{"timestamp":"2020-01-01T00:00:{:02}Z","duration":1,"data":{{}}}}]"#,
                accepted % 60
            ),
        );
        match r.status {
            503 => late = Some(r),
            200 => accepted += 1,
            _ => panic!("{} {}", r.status, r.body),
        }
        late.is_some()
    });
    let late = late.unwrap();
    assert!(late.json()["message"]
        .as_str()
        .unwrap()
        .contains("stopping"));
    assert_eq!(import.finish(), 200);
    assert!(s.stop());
    s.start_again();
    assert_eq!(
        s.client().get("/api/0/buckets/late/events/count").body,
        accepted.to_string()
    );
}

#[test]
fn sigkill_after_idle_keeps_writes() {
    let mut s = TestServer::start();
    let mut c = s.client();
    c.post_json(
        "/api/0/buckets/b",
        r#"{"client":"c","type":"t","hostname":"h"}"#,
    );
    // The bucket's creation is committed before the worker answers its next request.
    assert_eq!(c.get("/api/0/buckets/b/events").status, 200);
    let wal = aw_tests::with_suffix(&s.db_path(), "-wal");
    let written = || std::fs::metadata(&wal).and_then(|m| m.modified()).ok();
    let before = written();
    let r = c.post_json(
        "/api/0/buckets/b/events",
        r#"[{"timestamp":"2020-01-01T00:00:00Z","duration":1,"data":{}}]"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The idle commit comes about a second after the last write: SQLite writes the
    // transaction's pages to the WAL only when it commits, so the WAL's change time tells.
    aw_tests::wait_until("the idle commit", || written() != before);
    s.kill();
    s.start_again();
    let mut c = s.client();
    assert_eq!(c.get("/api/0/buckets/b/events/count").body, "1");
}

#[test]
fn first_start_writes_config_device_id_and_log() {
    let s = TestServer::start();
    let config = std::fs::read_to_string(s.config_path()).unwrap();
    assert_eq!(
        config,
        "### DEFAULT SETTINGS ###\n#address = \"127.0.0.1\"\n#port = 5600\n#cors = []\n#cors_regex = []\n#\n#[auth]\n#\n#[custom_static]\n"
    );
    let device_file = s
        .dir
        .path()
        .join("data/activitywatch/aw-server-rust/device_id");
    let id = std::fs::read_to_string(&device_file).unwrap();
    assert_eq!(id.len(), 36);
    assert_eq!(
        s.client().get("/api/0/info").json()["device_id"],
        id.as_str()
    );
    let logs = std::fs::read_dir(s.dir.path().join("cache/activitywatch/log/aw-server-rust"))
        .unwrap()
        .count();
    assert_eq!(logs, 1);
    let t = TestServer::start_with(&["--testing"]);
    let config = std::fs::read_to_string(
        t.dir
            .path()
            .join("config/activitywatch/aw-server-rust/config-testing.toml"),
    )
    .unwrap();
    assert!(config.contains("#port = 5666"));
}

#[test]
fn bad_startup_input_fails_with_a_message() {
    let s = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let bad_config = dir.path().join("bad.toml");
    std::fs::write(&bad_config, "port = \"x\"\n").unwrap();
    let missing_static = dir.path().join("static.toml");
    std::fs::write(
        &missing_static,
        "[custom_static]\nx = \"/does/not/exist\"\n",
    )
    .unwrap();
    let db = dir.path().join("db.sqlite");
    let db = db.to_str().unwrap();
    let in_use = format!(
        "is in use by another aw-server (pid {}, listening on http://127.0.0.1:{}/)",
        s.pid().unwrap(),
        s.port
    );
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (vec!["--bogus-flag".into()], 2, ""),
        (vec!["--port".into(), "abc".into()], 2, ""),
        (
            vec![
                "--host".into(),
                "not-an-ip".into(),
                "--dbpath".into(),
                db.into(),
            ],
            1,
            "not an IP address",
        ),
        (
            vec![
                "--config".into(),
                bad_config.to_str().unwrap().into(),
                "--dbpath".into(),
                db.into(),
            ],
            1,
            "invalid config",
        ),
        (
            vec![
                "--config".into(),
                missing_static.to_str().unwrap().into(),
                "--dbpath".into(),
                db.into(),
            ],
            1,
            "does not exist",
        ),
        // A second server on a database in use fails fast instead of sharing it, names the
        // process holding it and where it listens, and exits with its own code (3), on
        // which the systemd unit does not restart.
        (
            vec![
                "--dbpath".into(),
                s.db_path().to_str().unwrap().into(),
                "--port".into(),
                aw_tests::free_port().to_string(),
            ],
            3,
            &in_use,
        ),
    ];
    for (args, code, message) in cases {
        let out = s
            .command()
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = aw_tests::output_text(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {text}");
        assert!(text.contains(message), "{args:?}: {text}");
    }
}

#[test]
fn static_web_ui_and_custom_pages() {
    let web = tempfile::tempdir().unwrap();
    std::fs::write(web.path().join("index.html"), "<html>ui</html>").unwrap();
    std::fs::create_dir(web.path().join("css")).unwrap();
    std::fs::write(web.path().join("css/app.css"), "body{}").unwrap();
    std::fs::create_dir(web.path().join("js")).unwrap();
    std::fs::write(web.path().join("js/app.js"), "1").unwrap();
    std::fs::write(web.path().join("favicon.ico"), "ico").unwrap();
    let pages = tempfile::tempdir().unwrap();
    std::fs::write(pages.path().join("index.html"), "<p>custom</p>").unwrap();
    std::fs::write(pages.path().join("data.json"), "{}").unwrap();
    std::fs::write(pages.path().join(".hidden"), "secret").unwrap();
    let custom = format!("mine={},gone=/does/not/exist", pages.path().display());
    let s = TestServer::start_with(&[
        "--webpath",
        web.path().to_str().unwrap(),
        "--custom-static",
        &custom,
    ]);
    let mut c = s.client();
    let r = c.get("/");
    assert_eq!((r.status, r.body.as_str()), (200, "<html>ui</html>"));
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let r = c.get("/css/app.css");
    assert!(r.header("content-type").unwrap().starts_with("text/css"));
    assert!(c
        .get("/js/app.js")
        .header("content-type")
        .unwrap()
        .contains("javascript"));
    assert_eq!(c.get("/favicon.ico").status, 200);
    assert_eq!(c.get("/index.html").status, 404);
    assert_eq!(c.get("/css/../index.html").status, 404);
    assert_eq!(c.get("/css/missing.css").status, 404);
    // A file the given build lacks falls back to the embedded dashboard's.
    assert_eq!(c.get("/static/style.css").status, 200);
    for path in ["/pages/mine", "/pages/mine/"] {
        assert_eq!(c.get(path).body, "<p>custom</p>", "{path}");
    }
    assert_eq!(
        c.get("/pages/mine/data.json").header("content-type"),
        Some("application/json")
    );
    assert_eq!(c.get("/pages/mine/.hidden").status, 404);
    assert_eq!(c.get("/pages/gone/").status, 404);
}

#[test]
fn built_in_page_without_web_ui() {
    // Without --webpath the embedded dashboard answers at / and its assets under /static/.
    let s = TestServer::start();
    let mut c = s.client();
    let r = c.get("/");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    assert!(r.body.contains("/static/style.css"), "{}", r.body);
    let css = c.get("/static/style.css");
    assert_eq!(css.status, 200);
    assert!(css.header("content-type").unwrap().starts_with("text/css"));
    assert_eq!(c.get("/static/nope.js").status, 404);
}

/// The service files shipped in `packaging/`: the systemd unit restarts on failure but not
/// on the exit code of a database in use (3, which the server really exits with: see
/// `bad_startup_input_fails_with_a_message`), waits for readiness (`Type=notify`, which the
/// server sends), and `systemd-analyze` accepts it where it is installed.
#[test]
fn the_service_files_restart_on_failure_but_not_when_the_database_is_in_use() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let unit = std::fs::read_to_string(root.join("packaging/systemd/aw-server.service")).unwrap();
    for line in [
        "Type=notify",
        "ExecStart=%h/.cargo/bin/aw-server",
        "Restart=on-failure",
        "RestartPreventExitStatus=3",
        "WantedBy=default.target",
    ] {
        assert!(
            unit.lines().any(|l| l.trim() == line),
            "no '{line}' in the unit"
        );
    }
    // `systemd-analyze verify` checks the unit's syntax (ExecStart pointed at the built
    // binary, since ~/.cargo/bin/aw-server need not exist here).
    if std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("aw-server.service");
        std::fs::write(
            &copy,
            unit.replace(
                "%h/.cargo/bin/aw-server",
                aw_tests::server_binary().to_str().unwrap(),
            ),
        )
        .unwrap();
        let out = std::process::Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&copy)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            !text.contains("aw-server.service:"),
            "systemd-analyze found problems in the unit: {text}"
        );
    }
    let plist =
        std::fs::read_to_string(root.join("packaging/launchd/net.activitywatch.aw-server.plist"))
            .unwrap();
    for key in [
        "<key>KeepAlive</key>",
        "<key>SuccessfulExit</key>",
        "<key>ThrottleInterval</key>",
    ] {
        assert!(plist.contains(key), "no {key} in the plist");
    }
}

/// The log on disk is bounded, whatever is logged: with `[log] file_size_mb = 1` and
/// `files = 3`, 100 imports each logging a warning that quotes a bucket id of 200 KB leave
/// the newest three files, none much over 1 MiB (a file is changed between lines, and a
/// line is cut at 64 KiB).
#[test]
fn the_log_folder_keeps_only_its_newest_files_of_bounded_size() {
    let s = TestServer::start_with_config("[log]\nfile_size_mb = 1\nfiles = 3\n");
    let mut c = s.client();
    let long = "x".repeat(200_000);
    for i in 0..100 {
        let id = format!("{long}{i}");
        let document = serde_json::json!({"buckets": {&id: {
            "id": &id, "type": "t", "client": "c", "hostname": "h",
            "created": "2026-01-01T00:00:00Z",
            "events": [{"timestamp": "2020-01-01T00:00:00Z", "duration": 1e300, "data": {}}],
        }}});
        let r = c.post_json("/api/0/import", &document.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let folder = s.dir.path().join("cache/activitywatch/log/aw-server-rust");
    let sizes: Vec<u64> = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .collect();
    eprintln!("100 warnings quoting 200 KB: log files {sizes:?}");
    assert_eq!(sizes.len(), 3, "{sizes:?}");
    assert!(
        sizes.iter().all(|&n| n <= (1 << 20) + (64 << 10)),
        "{sizes:?}"
    );
    assert!(
        sizes.iter().filter(|&&n| n >= 1 << 20).count() >= 2,
        "{sizes:?}"
    );

    // A value of 0 is refused with a message, not taken as "no log".
    let bad = tempfile::tempdir().unwrap();
    let path = bad.path().join("c.toml");
    std::fs::write(&path, "[log]\nfiles = 0\n").unwrap();
    let out = s
        .command()
        .args(["--port", "0", "--config", &path.to_string_lossy()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        aw_tests::output_text(&out).contains("[log] file_size_mb and files must be at least 1"),
        "{}",
        aw_tests::output_text(&out)
    );
}
