//! The measurements behind the comparison's rows: what one block of a row does on one
//! server (writes, reads, a watcher's day, memory after heavy input) and the untimed warm-up
//! each server gets first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aw_client_rust::queries::{full_desktop_query, DesktopQueryParams};
use serde_json::json;

use super::contender::Contender;
use super::measure::{load, percentile, Meter, Value};
use super::requests::{heartbeat, ok, Write};
use aw_tests::year::{self, query_body, ts, DAY, NS};
use aw_tests::Client;

/// `n` writes back to back over one connection: rate and server CPU per request.
pub(super) fn sequential(c: &mut Contender, kind: Write, n: usize) -> Vec<Value> {
    let bucket = format!("cmp-seq-{}", c.next());
    c.bucket(&bucket, "test");
    let mut client = c.client();
    let base = c.end + DAY;
    let meter = Meter::start(c.pid());
    let t = Instant::now();
    for i in 0..n as i64 {
        kind.send(&mut client, &bucket, base + i * NS, i);
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    let (cpu, _) = meter.per_request(n as f64);
    vec![("req/s", rate, true), ("CPU µs/req", cpu, false)]
}

/// 16 keep-alive connections for `secs`, each writing into a bucket of its own (`None`:
/// `?limit=100` reads of the history's window bucket).
pub(super) fn connections(c: &mut Contender, kind: Option<Write>, secs: f64) -> Vec<Value> {
    let block = c.next();
    let buckets: Vec<String> = (0..16).map(|k| format!("cmp-c{block}-{k}")).collect();
    for b in &buckets {
        c.bucket(b, "test");
    }
    let base = c.end + DAY;
    let read = format!("/api/0/buckets/{}/events?limit=100", c.params.bid_window);
    let meter = Meter::start(c.pid());
    let (n, lat) = load(c.server.port, 16, secs, |cl, k, i| match kind {
        Some(kind) => kind.send(cl, &buckets[k], base + i * NS, i),
        None => ok(cl.get(&read), "limit=100"),
    });
    let (cpu, _) = meter.per_request(n);
    vec![
        ("req/s", n / secs, true),
        ("p50 ms", percentile(&lat, 0.5), false),
        ("CPU µs/req", cpu, false),
    ]
}

/// Three watchers (window, AFK, browser) each sending a heartbeat a second for `secs`, and a
/// dashboard that queries today from their buckets every 30 s (at the start too): what
/// every user's server does all day. CPU per heartbeat includes the queries.
pub(super) fn watchers_day(c: &mut Contender, secs: f64) -> Vec<Value> {
    let block = c.next();
    let ids = [
        format!("cmp-window-{block}"),
        format!("cmp-afk-{block}"),
        format!("cmp-web-{block}"),
    ];
    for (id, kind) in ids
        .iter()
        .zip(["currentwindow", "afkstatus", "web.tab.current"])
    {
        c.bucket(id, kind);
    }
    let params = DesktopQueryParams {
        bid_window: ids[0].clone(),
        bid_afk: ids[1].clone(),
        bid_browsers: vec![ids[2].clone()],
        ..c.params.clone()
    };
    let desktop = full_desktop_query(&params);
    let port = c.server.port;
    let now_ns = || chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0);
    let meter = Meter::start(c.pid());
    let started = Instant::now();
    let beats: usize = std::thread::scope(|s| {
        let watchers: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(w, id)| {
                s.spawn(move || {
                    let mut client = Client::new(port);
                    let mut sent = 0;
                    let mut next = started + Duration::from_millis(w as u64 * 333);
                    while next < started + Duration::from_secs_f64(secs) {
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                        let k = sent / 30;
                        let data = match w {
                            0 => format!(r#"{{"app":"app{}","title":"title {k}"}}"#, k % 5),
                            1 => r#"{"status":"not-afk"}"#.to_string(),
                            _ => format!(
                                r#"{{"url":"https://example.com/{k}","title":"page {k}","audible":false,"incognito":false,"tabCount":3}}"#
                            ),
                        };
                        ok(
                            client.post_json(
                                &format!("/api/0/buckets/{id}/heartbeat?pulsetime=2"),
                                &heartbeat(now_ns(), &data),
                            ),
                            id,
                        );
                        sent += 1;
                        next += Duration::from_secs(1);
                    }
                    sent
                })
            })
            .collect();
        let mut client = Client::new(port);
        let mut next = started;
        while next < started + Duration::from_secs_f64(secs) {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            let now = now_ns();
            ok(
                client.post_json("/api/0/query/", &query_body(&desktop, &[(now - DAY, now)])),
                "query",
            );
            next += Duration::from_secs(30);
        }
        watchers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
    });
    let (cpu, wakeups) = meter.per_request(beats as f64);
    vec![
        ("CPU µs/heartbeat", cpu, false),
        ("wake-ups/s", wakeups, false),
    ]
}

/// What a request that does nothing costs at a watcher's rate: three connections each
/// asking `GET /api/0/info` once a second, CPU per request. Below this no heartbeat at that
/// rate can go: each request wakes an idle thread on a cold cache.
pub(super) fn floor_at_one_per_second(c: &mut Contender, secs: f64) -> Vec<Value> {
    let port = c.server.port;
    let meter = Meter::start(c.pid());
    let started = Instant::now();
    let answered: usize = std::thread::scope(|s| {
        let clients: Vec<_> = (0..3u64)
            .map(|w| {
                s.spawn(move || {
                    let mut client = Client::new(port);
                    let mut sent = 0;
                    let mut next = started + Duration::from_millis(w * 333);
                    while next < started + Duration::from_secs_f64(secs) {
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                        ok(client.get("/api/0/info"), "info");
                        sent += 1;
                        next += Duration::from_secs(1);
                    }
                    sent
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap_or(0)).sum()
    });
    let (cpu, wakeups) = meter.per_request(answered as f64);
    vec![("CPU µs/req", cpu, false), ("wake-ups/s", wakeups, false)]
}

/// The server's resident memory in MB.
fn rss_mb(pid: u32) -> f64 {
    year::proc_status_mb(pid, "VmRSS:")
}

/// Resident memory before and 5 s after a run of bad or heavy input that leaves nothing to
/// hold on to: ten events with a 10 MB string each (into a bucket of their own, far from
/// the history), three full exports, five queries of 100,000 characters. What a server
/// keeps afterwards is what it never gave back.
pub(super) fn memory_after_heavy_input(c: &mut Contender) -> Vec<Value> {
    let bucket = format!("cmp-big-{}", c.next());
    c.bucket(&bucket, "test");
    let mut client = c.client();
    let before = rss_mb(c.pid());
    let big = "x".repeat(10 << 20);
    for i in 0..10 {
        let event = json!([{"timestamp": ts(c.end + 30 * DAY + i * NS), "duration": 1,
            "data": {"title": big}}]);
        ok(
            client.post_json(
                &format!("/api/0/buckets/{bucket}/events"),
                &event.to_string(),
            ),
            "10 MB event",
        );
    }
    drop(big);
    for _ in 0..3 {
        ok(client.get("/api/0/export"), "export");
    }
    let long = format!("x = \"{}\";\nRETURN = 1;", "y".repeat(100_000));
    for _ in 0..5 {
        let body = json!({"timeperiods": ["2020-01-01T00:00:00Z/2020-01-02T00:00:00Z"],
            "query": long.split('\n').collect::<Vec<_>>()});
        ok(
            client.post_json("/api/0/query/", &body.to_string()),
            "long query",
        );
    }
    std::thread::sleep(Duration::from_secs(5));
    let after = rss_mb(c.pid());
    vec![
        ("RSS before, MB", before, false),
        ("RSS 5 s after, MB", after, false),
    ]
}

/// Latencies of reads by one client: `?limit=100`, the last day of events, a cold 1-day
/// desktop query (a period of its own each time).
pub(super) fn reads(c: &mut Contender, quick: bool) -> Vec<Value> {
    let mut client = c.client();
    let window = c.params.bid_window.clone();
    let end = c.end;
    let times = |n: usize, f: &mut dyn FnMut(&mut Client)| {
        let mut client = Client::new(c.server.port);
        f(&mut client);
        let mut lat: Vec<f64> = (0..n)
            .map(|_| {
                let t = Instant::now();
                f(&mut client);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        lat.sort_by(f64::total_cmp);
        percentile(&lat, 0.5)
    };
    let reps = if quick { 20 } else { 100 };
    let limit = times(reps, &mut |cl| {
        ok(
            cl.get(&format!("/api/0/buckets/{window}/events?limit=100")),
            "limit",
        )
    });
    let day = format!(
        "/api/0/buckets/{window}/events?start={}&end={}",
        ts(end - DAY),
        ts(end)
    );
    let last_day = times(reps, &mut |cl| ok(cl.get(&day), "last day"));
    let desktop = full_desktop_query(&c.params);
    let mut lat: Vec<f64> = (0..reps / 4)
        .map(|_| {
            let k = c.next();
            let body = query_body(&desktop, &[(end - DAY - k * NS, end - k * NS)]);
            let t = Instant::now();
            ok(client.post_json("/api/0/query/", &body), "cold query");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    lat.sort_by(f64::total_cmp);
    vec![
        ("?limit=100 p50 ms", limit, false),
        ("last day p50 ms", last_day, false),
        ("cold 1-day query p50 ms", percentile(&lat, 0.5), false),
    ]
}

/// `n` sequential heartbeats while `loops` clients loop cold 1-year desktop queries:
/// heartbeat p50 and p95.
pub(super) fn heartbeats_under_queries(c: &mut Contender, loops: usize, n: usize) -> Vec<Value> {
    let bucket = format!("cmp-busy-{}", c.next());
    c.bucket(&bucket, "test");
    let desktop = full_desktop_query(&c.params);
    let (end, port) = (c.end, c.server.port);
    let first = c.seq;
    c.seq += 1_000_000;
    let stop = AtomicBool::new(false);
    let lat = std::thread::scope(|s| {
        for w in 0..loops {
            let (stop, desktop) = (&stop, &desktop);
            s.spawn(move || {
                let mut cl = Client::new(port);
                let mut k = 0;
                while !stop.load(Ordering::Relaxed) {
                    k += 1;
                    let shift = (first + k * loops as i64 + w as i64) * NS;
                    let body = query_body(desktop, &[(end - 365 * DAY - shift, end - shift)]);
                    // The server may refuse a query over its budget; the load is what counts.
                    let _ = cl.send_once(
                        "POST",
                        "/api/0/query/",
                        &[("Content-Type", "application/json")],
                        Some(body.as_bytes()),
                    );
                }
            });
        }
        std::thread::sleep(Duration::from_millis(300));
        let mut cl = Client::new(port);
        let mut lat: Vec<f64> = (0..n as i64)
            .map(|i| {
                let t = Instant::now();
                Write::Merging.send(&mut cl, &bucket, end + DAY + i * NS, i);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        lat.sort_by(f64::total_cmp);
        lat
    });
    vec![
        ("p50 ms", percentile(&lat, 0.5), false),
        ("p95 ms", percentile(&lat, 0.95), false),
    ]
}

/// A second of back-to-back heartbeats, inserts and reads on one server, measured nowhere.
pub(super) fn warm_up(c: &mut Contender) {
    for kind in [Write::Merging, Write::Distinct, Write::Insert] {
        sequential(c, kind, 1_000);
    }
    let mut client = c.client();
    for _ in 0..1_000 {
        ok(client.get("/api/0/info"), "info");
    }
}
