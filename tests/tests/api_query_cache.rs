//! The query-result cache through the real binary: a repeated query is answered from the
//! cache, and every kind of write into the period makes the next answer fresh again, while
//! writes elsewhere leave it cached.

use aw_tests::{Client, TestServer};
use serde_json::{json, Value};

/// The day the queries ask for, and a day far from it.
const DAY: &str = "2024-01-10T00:00:00+00:00/2024-01-11T00:00:00+00:00";
const IN_DAY: &str = "2024-01-10T12:00:00Z";
const ELSEWHERE: &str = "2024-01-02T12:00:00Z";

const EVENTS: &str = r#"events = query_bucket("w");
RETURN = {"events": events, "sum": sum_durations(events), "buckets": query_bucket_names()};"#;

struct Fixture {
    server: TestServer,
    c: Client,
    /// Makes every fresh evaluation's program text unique (a different cache key).
    nonce: u32,
}

fn ev(ts: &str, dur: f64, app: &str) -> Value {
    json!({"timestamp": ts, "duration": dur, "data": {"app": app}})
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::on(TestServer::start())
    }

    /// On a server with `server`'s database, "w" created and two events in it.
    fn on(server: TestServer) -> Fixture {
        let mut f = Fixture {
            c: server.client(),
            server,
            nonce: 0,
        };
        f.create_bucket("w");
        f.insert(&[ev(IN_DAY, 60.0, "a"), ev(ELSEWHERE, 60.0, "a")]);
        f
    }

    fn create_bucket(&mut self, id: &str) {
        let r = self.c.post_json(
            &format!("/api/0/buckets/{id}"),
            r#"{"client":"c","type":"currentwindow","hostname":"h"}"#,
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }

    fn insert(&mut self, events: &[Value]) -> Value {
        let r = self
            .c
            .post_json("/api/0/buckets/w/events", &json!(events).to_string());
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }

    fn heartbeat(&mut self, event: Value) {
        let r = self.c.post_json(
            "/api/0/buckets/w/heartbeat?pulsetime=120",
            &event.to_string(),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }

    fn query_text(&mut self, code: &str) -> String {
        let body = json!({"timeperiods": [DAY], "query": [code]}).to_string();
        let r = self.c.post_json("/api/0/query/", &body);
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    }

    /// The answer of a program no cached entry can match.
    fn fresh(&mut self, code: &str) -> String {
        self.nonce += 1;
        self.query_text(&format!("{code}\n# fresh {}", self.nonce))
    }

    fn stats(&mut self) -> Value {
        let r = self.c.get("/api/0/query/cache");
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()
    }

    /// Asks twice: the second answer comes from the cache and is the same.
    fn cached(&mut self) -> String {
        let first = self.query_text(EVENTS);
        let hits = self.stats()["hits"].as_u64().unwrap();
        assert_eq!(self.query_text(EVENTS), first);
        assert_eq!(self.stats()["hits"].as_u64().unwrap(), hits + 1);
        first
    }

    /// Waits for the background read-back of the kept results after a start, and returns
    /// how many came back.
    fn restored(&mut self) -> u64 {
        let mut restored = 0;
        aw_tests::wait_until("the kept results are read back", || {
            let stats = self.stats();
            restored = stats["restored"].as_u64().unwrap_or(0);
            stats["restoring"] == false
        });
        restored
    }

    /// A new client after the server started again.
    fn reconnect(&mut self) {
        self.c = self.server.client();
    }

    /// After `write` into the day, the answer changed and equals a fresh evaluation.
    fn check_write(&mut self, what: &str, write: impl FnOnce(&mut Fixture)) {
        let before = self.cached();
        write(self);
        let after = self.query_text(EVENTS);
        assert_ne!(after, before, "{what}: the cached answer was kept");
        assert_eq!(after, self.fresh(EVENTS), "{what}");
    }
}

#[test]
fn every_kind_of_write_into_the_period_refreshes_the_answer() {
    let mut f = Fixture::new();
    f.check_write("insert", |f| {
        f.insert(&[ev("2024-01-10T13:00:00Z", 10.0, "b")]);
    });
    f.check_write("heartbeat, new event", |f| {
        f.heartbeat(ev("2024-01-10T14:00:00Z", 0.0, "c"));
    });
    f.check_write("heartbeat, merged", |f| {
        f.heartbeat(ev("2024-01-10T14:01:00Z", 0.0, "c"));
    });
    // An event that starts the day before and reaches into it.
    f.check_write("insert across the period's start", |f| {
        f.insert(&[ev("2024-01-09T23:00:00Z", 7200.0, "d")]);
    });
    let id = f.insert(&[ev("2024-01-10T15:00:00Z", 5.0, "e")])[0]["id"].clone();
    f.check_write("replace by id", |f| {
        let mut e = ev("2024-01-10T15:00:00Z", 50.0, "e2");
        e["id"] = id.clone();
        f.insert(&[e]);
    });
    // Replacing moves the event out of the day: its old place must be refreshed too.
    f.check_write("replace by id, moved away", |f| {
        let mut e = ev(ELSEWHERE, 50.0, "e3");
        e["id"] = id.clone();
        f.insert(&[e]);
    });
    let id = f.insert(&[ev("2024-01-10T16:00:00Z", 5.0, "f")])[0]["id"].clone();
    f.check_write("delete event", |f| {
        let r = f.c.delete(&format!("/api/0/buckets/w/events/{id}"));
        assert_eq!(r.status, 200, "{}", r.body);
    });
    f.check_write("import", |f| {
        let doc = json!({"buckets": {"w": {
            "id": "w", "type": "currentwindow", "client": "c", "hostname": "h",
            "events": [ev("2024-01-10T17:00:00Z", 30.0, "g")]
        }}});
        let r = f.c.post_json("/api/0/import", &doc.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
    });
    f.check_write("bucket created", |f| f.create_bucket("other"));
    f.check_write("bucket deleted and created again", |f| {
        let r = f.c.delete("/api/0/buckets/w");
        assert_eq!(r.status, 200, "{}", r.body);
        f.create_bucket("w");
    });
}

#[test]
fn writes_elsewhere_keep_the_answer_cached() {
    let mut f = Fixture::new();
    let before = f.cached();
    let invalidated = f.stats()["invalidated"].as_u64().unwrap();
    f.insert(&[ev(ELSEWHERE, 5.0, "x")]);
    f.heartbeat(ev("2024-01-20T12:00:00Z", 0.0, "x"));
    f.create_bucket("untouched-bucket-events");
    // The bucket list changed: entries that read it go (this one does), so ask again.
    let again = f.query_text(EVENTS);
    assert_ne!(again, before);
    // Now writes outside the day and to other buckets leave it alone.
    let hits = f.stats()["hits"].as_u64().unwrap();
    f.insert(&[ev(ELSEWHERE, 6.0, "y")]);
    let r = f.c.post_json(
        "/api/0/buckets/untouched-bucket-events/heartbeat?pulsetime=1",
        &ev(IN_DAY, 1.0, "z").to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(f.query_text(EVENTS), again);
    let stats = f.stats();
    assert_eq!(stats["hits"].as_u64().unwrap(), hits + 1);
    assert!(stats["invalidated"].as_u64().unwrap() > invalidated);
    assert!(stats["entries"].as_u64().unwrap() >= 1);
    assert!(stats["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn a_week_view_after_one_changed_day_recomputes_that_day() {
    let mut f = Fixture::new();
    let week: Vec<String> = (10..17)
        .map(|d| {
            format!(
                "2024-01-{d}T00:00:00+00:00/2024-01-{}T00:00:00+00:00",
                d + 1
            )
        })
        .collect();
    let body = json!({"timeperiods": week, "query": [EVENTS]}).to_string();
    let first = f.c.post_json("/api/0/query/", &body).body;
    let s0 = f.stats();
    f.heartbeat(ev("2024-01-12T09:00:00Z", 0.0, "new"));
    let second = f.c.post_json("/api/0/query/", &body).body;
    let s1 = f.stats();
    assert_eq!(
        s1["misses"].as_u64().unwrap() - s0["misses"].as_u64().unwrap(),
        1
    );
    assert_eq!(
        s1["hits"].as_u64().unwrap() - s0["hits"].as_u64().unwrap(),
        6
    );
    let (a, b): (Value, Value) = (
        serde_json::from_str(&first).unwrap(),
        serde_json::from_str(&second).unwrap(),
    );
    for d in 0..7 {
        assert_eq!(a[d] == b[d], d != 2, "day {d}");
    }
}

#[test]
fn the_cache_can_be_turned_off() {
    let server = TestServer::start_with_config("query_cache_bytes = 0\n");
    let mut c = server.client();
    let body = json!({"timeperiods": [DAY], "query": ["RETURN = 1;"]}).to_string();
    for _ in 0..2 {
        assert_eq!(c.post_json("/api/0/query/", &body).body, "[1.0]");
    }
    let stats = c.get("/api/0/query/cache").json();
    assert_eq!(stats["hits"], 0);
    assert_eq!(stats["entries"], 0);
}

#[test]
fn the_stats_route_needs_the_api_key_like_the_rest_of_the_api() {
    let server = TestServer::start_with_config("[auth]\napi_key = \"k\"\n");
    let mut c = server.client();
    assert_eq!(c.get("/api/0/query/cache").status, 401);
    assert_eq!(c.get("/api/0/query/%63ache").status, 401);
    let r = c.request(
        "GET",
        "/api/0/query/cache",
        &[("Authorization", "Bearer k")],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The default `query_cache_bytes`: 64 MiB.
    assert_eq!(r.json()["budget"], 64 << 20);
}

/// The first look after a restart is answered from the results the last run kept: a clean
/// stop writes them beside the database (with its file mode), the next start reads them
/// back.
#[test]
fn the_first_look_after_a_restart_is_answered_from_the_kept_results() {
    let mut f = Fixture::new();
    let before = f.cached();
    let db = f.server.db_path();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    f.server.restart();
    f.reconnect();
    assert!(f.restored() >= 1, "{}", f.server.output_tail());
    let hits = f.stats()["hits"].as_u64().unwrap();
    assert_eq!(f.query_text(EVENTS), before);
    assert_eq!(f.stats()["hits"].as_u64().unwrap(), hits + 1);
    let kept = aw_tests::with_suffix(&db, ".derived");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    // No bigger than its allowance: a twentieth of the database, or 16 MiB (an encrypted
    // build's is encrypted: `encryption.rs`).
    let db_len = std::fs::metadata(&db).unwrap().len();
    assert!(std::fs::metadata(&kept).unwrap().len() <= (db_len / 20).max(16 << 20));
    // A write after the start still reaches the kept result.
    f.check_write("insert after a restart", |f| {
        f.insert(&[ev("2024-01-10T18:00:00Z", 10.0, "after")]);
    });
}

/// A write acknowledged and then lost to a kill comes back from the journal at the next
/// start; the results kept at the clean stop before it must not come back with it (they
/// are dropped whole when the files are not as a stop or commit left them, else those the
/// write reaches are).
#[test]
fn results_kept_before_a_killed_run_do_not_hide_its_writes() {
    let mut f = Fixture::new();
    let before = f.cached();
    f.server.restart();
    f.reconnect();
    assert!(f.restored() >= 1);
    f.heartbeat(ev("2024-01-10T19:00:00Z", 0.0, "lost"));
    f.server.kill();
    f.server.start_again();
    f.reconnect();
    let after = f.query_text(EVENTS);
    assert_ne!(after, before);
    assert!(after.contains("lost"), "{after}");
    assert_eq!(after, f.fresh(EVENTS));
}

/// Another program (the reference server can open the same file) writes between two runs:
/// nothing kept from before is read back, also when the write keeps the file's length.
/// On a plain database, the only kind the reference server (or any SQLite tool) can write.
#[test]
fn results_kept_before_another_program_wrote_are_not_read_back() {
    let mut f = Fixture::on(TestServer::start_with_password(None));
    let before = f.cached();
    assert!(f.server.stop());
    let conn = rusqlite::Connection::open(f.server.db_path()).unwrap();
    let changed = conn
        .execute(
            r#"UPDATE events SET data = '{"app":"b"}' WHERE data = '{"app":"a"}'"#,
            [],
        )
        .unwrap();
    assert_eq!(changed, 2);
    drop(conn);
    f.server.start_again();
    f.reconnect();
    assert_eq!(f.restored(), 0);
    let after = f.query_text(EVENTS);
    assert_ne!(after, before);
    assert_eq!(after, f.fresh(EVENTS));
}

/// The same against the reference server itself, which can open our file: it writes an
/// event into the queried day between two of our runs. It needs the reference's binary,
/// which the test command does not build (`scripts/build-reference.sh` prints its path):
///
/// `AW_REFERENCE_BIN=… cargo test -p aw-tests --test api_query_cache -- --ignored`
#[test]
#[ignore = "needs the reference server's binary in AW_REFERENCE_BIN"]
fn results_kept_before_the_reference_server_wrote_are_not_read_back() {
    let Some(reference) = std::env::var_os("AW_REFERENCE_BIN") else {
        panic!("set AW_REFERENCE_BIN to the reference aw-server binary");
    };
    let mut f = Fixture::on(TestServer::start_with_password(None));
    let before = f.cached();
    assert!(f.server.stop());
    // The reference on our file: a heartbeat into the day, then a new bucket, which makes
    // it commit (it commits on bucket changes; its stop does not).
    f.server.binary = Some(reference.into());
    f.server.start_again();
    f.reconnect();
    let r = f.c.post_json(
        "/api/0/buckets/w/heartbeat?pulsetime=0",
        &ev("2024-01-10T20:00:00Z", 5.0, "written-by-the-reference").to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    f.create_bucket("made-by-the-reference");
    assert!(f.server.stop());
    f.server.binary = None;
    f.server.start_again();
    f.reconnect();
    assert_eq!(f.restored(), 0);
    let after = f.query_text(EVENTS);
    assert!(after.contains("written-by-the-reference"), "{after}");
    assert_ne!(after, before);
    assert_eq!(after, f.fresh(EVENTS));
}

/// The days 2024-01-08 … 2024-01-11 as periods.
fn four_days() -> Vec<String> {
    (8..12)
        .map(|d| format!("2024-01-{d:02}T00:00:00Z/2024-01-{:02}T00:00:00Z", d + 1))
        .collect()
}

const SUM_PROGRAM: &str = r#"events = query_bucket("w");
RETURN = {"apps": merge_events_by_keys(events, ["app"]), "total": sum_durations(events)};"#;

impl Fixture {
    fn sum(&mut self, periods: &[String], extra: Value) -> (u16, Value) {
        let mut body = json!({"timeperiods": periods, "query": [SUM_PROGRAM]});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let r = self.c.post_json("/api/0/query/sum", &body.to_string());
        let status = r.status;
        (status, serde_json::from_str(&r.body).unwrap_or(Value::Null))
    }
}

/// `POST /api/0/query/sum`: the days' results added up on the server, each day kept on its
/// own, so a write into one day evaluates that day again and no other; the same as the
/// program over the whole range; bad limits and keys are 400.
#[test]
fn a_sum_of_days_keeps_each_day_and_equals_the_whole_range() {
    let mut f = Fixture::new();
    f.insert(&[
        ev("2024-01-08T09:00:00Z", 30.0, "b"),
        ev("2024-01-11T09:00:00Z", 15.0, "a"),
    ]);
    let days = four_days();
    let keys = json!({"keys": {"apps": ["app"]}});
    let (status, sum) = f.sum(&days, keys.clone());
    assert_eq!(status, 200, "{sum}");
    let apps: Vec<(String, f64)> = sum["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["data"]["app"].as_str().unwrap().to_string(),
                e["duration"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(apps, [("a".to_string(), 75.0), ("b".to_string(), 30.0)]);
    assert_eq!(sum["total"], json!(105.0));
    // The whole range in one query says the same.
    let whole = f.c.post_json(
        "/api/0/query/",
        &json!({"timeperiods": ["2024-01-08T00:00:00Z/2024-01-12T00:00:00Z"], "query": [SUM_PROGRAM]}).to_string(),
    );
    assert_eq!(whole.json()[0]["total"], json!(105.0));
    // Asked again: every day from the cache.
    let misses = f.stats()["misses"].as_u64().unwrap();
    assert_eq!(f.sum(&days, keys.clone()).1, sum);
    assert_eq!(f.stats()["misses"].as_u64().unwrap(), misses);
    // A write into one day: that day alone is evaluated again.
    f.insert(&[ev("2024-01-09T10:00:00Z", 5.0, "c")]);
    let (_, after) = f.sum(&days, keys.clone());
    assert_eq!(f.stats()["misses"].as_u64().unwrap(), misses + 1);
    assert_eq!(after["total"], json!(110.0));
    // A limit cuts every list, longest first; without keys, lists are merged by all of
    // their data.
    let (_, top) = f.sum(&days, json!({"keys": {"apps": ["app"]}, "limit": 1}));
    assert_eq!(top["apps"].as_array().unwrap().len(), 1);
    assert_eq!(top["apps"][0]["data"], json!({"app": "a"}));
    // No periods: null.
    assert_eq!(f.sum(&[], json!({})), (200, Value::Null));
    for bad in [
        json!({"limit": 0}),
        json!({"limit": 1_000_001}),
        json!({"keys": {"apps": "app"}}),
        json!({"keys": {"apps": [1]}}),
    ] {
        let (status, body) = f.sum(&days, bad.clone());
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["message"].is_string(), "{bad}: {body}");
    }
    let (status, _) = f.sum(&days, json!({"limit": -1}));
    assert_eq!(status, 422);
}

/// The period sums asked for are kept ready: after a SIGKILL (nothing kept at a stop) the
/// server evaluates their past days again in the background, and after a write into a past
/// day it evaluates that day again, so the next sum is answered from the cache alone.
#[test]
fn the_days_of_a_sum_are_ready_again_after_a_kill_and_a_write() {
    let mut f = Fixture::new();
    let days = four_days();
    let keys = json!({"keys": {"apps": ["app"]}});
    let (_, first) = f.sum(&days, keys.clone());
    let ready = |f: &mut Fixture, filled: u64| {
        aw_tests::wait_until("the days are ready", || {
            let ready = &f.stats()["ready"];
            ready["filled"].as_u64() >= Some(filled) && ready["filling"] == false
        });
    };
    // Kept in the database at once: the kill loses nothing of it.
    aw_tests::wait_until("the sum is remembered", || {
        f.stats()["ready"]["periods"] == json!(4)
    });
    f.server.kill();
    f.server.start_again();
    f.reconnect();
    ready(&mut f, 4);
    let misses = f.stats()["misses"].as_u64().unwrap();
    assert_eq!(f.sum(&days, keys.clone()).1, first);
    assert_eq!(
        f.stats()["misses"].as_u64().unwrap(),
        misses,
        "every day came from the cache"
    );
    // A write into a past day: evaluated again in the background.
    f.insert(&[ev("2024-01-09T10:00:00Z", 5.0, "c")]);
    ready(&mut f, 5);
    let misses = f.stats()["misses"].as_u64().unwrap();
    let (_, after) = f.sum(&days, keys);
    assert_eq!(
        after["total"],
        json!(first["total"].as_f64().unwrap() + 5.0)
    );
    assert_eq!(f.stats()["misses"].as_u64().unwrap(), misses);
}

/// The days of a sum are kept beside the database while the server runs, so a start after
/// a kill reads them back but for the day written after they were kept (a write the kill
/// left in the journal alone), which is evaluated again.
#[test]
fn after_a_kill_the_kept_days_come_back_but_for_the_day_written_since() {
    let mut f = Fixture::new();
    let days = four_days();
    let keys = json!({"keys": {"apps": ["app"]}});
    let (_, first) = f.sum(&days, keys.clone());
    aw_tests::wait_until("the days are kept beside the database", || {
        f.stats()["ready"]["kept"].as_u64() >= Some(1)
    });
    // Asked again (so the background keeps still for a while), then a write into one
    // day, and the kill before anything is kept again.
    f.sum(&days, keys.clone());
    f.insert(&[ev("2024-01-09T10:00:00Z", 5.0, "c")]);
    f.server.kill();
    f.server.start_again();
    f.reconnect();
    assert_eq!(f.restored(), 3, "{}", f.server.output_tail());
    let (_, after) = f.sum(&days, keys);
    assert_eq!(
        after["total"],
        json!(first["total"].as_f64().unwrap() + 5.0)
    );
}
