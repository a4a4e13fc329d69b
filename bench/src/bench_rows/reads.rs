//! `aw-bench`'s rows of event reads: the bucket list, `?limit=` and time-range reads of the
//! window bucket, its event count, eight clients fetching days at once, and the same reads
//! after one event lasting 300 days.

use serde_json::json;

use super::requests::{cold, concurrent, get_ok};
use super::BenchReport;
use aw_tests::year::{ts, DAY, START_DAY};
use aw_tests::Client;

/// Bucket listing, `?limit=` reads, time-range reads of the window bucket (recent and
/// mid-history) and its event count, all over `c`.
pub fn event_reads(b: &mut BenchReport, c: &mut Client, window: &str, end: i64, days: i64) {
    b.latency("GET /api/0/buckets/", 300, || {
        get_ok(c, "/api/0/buckets/");
    });
    for limit in [100, 1000, 10000] {
        let reps = if limit == 10000 { 30 } else { 100 };
        b.latency(&format!("window events ?limit={limit}"), reps, || {
            get_ok(c, &format!("/api/0/buckets/{window}/events?limit={limit}"));
        });
    }
    let mid = START_DAY + days / 2 * DAY;
    for (name, lo, hi, reps) in [
        ("window events, last day", end - DAY, end, 50),
        ("window events, last week", end - 7 * DAY, end, 30),
        ("window events, last 30 days", end - 30 * DAY, end, 30),
        ("window events, mid-history week", mid, mid + 7 * DAY, 30),
    ] {
        let path = format!(
            "/api/0/buckets/{window}/events?start={}&end={}",
            ts(lo),
            ts(hi)
        );
        b.latency(name, reps, || {
            get_ok(c, &path);
        });
    }
    b.latency("window events/count", 200, || {
        get_ok(c, &format!("/api/0/buckets/{window}/events/count"));
    });
}

/// Eight clients at once, each request fetching one day of the window bucket (a different
/// day per request): throughput and p50.
pub fn concurrent_event_fetches(
    b: &mut BenchReport,
    port: u16,
    window: &str,
    days: i64,
    quick: bool,
) {
    // Concurrency: 8 clients fetching one day each (a different day per request).
    let secs = if quick { 3.0 } else { 10.0 };
    let (rps, p50) = concurrent(port, 8, secs, |c, i| {
        let day = (i as i64 * 7919) % days;
        let lo = START_DAY + day * DAY;
        get_ok(
            c,
            &format!(
                "/api/0/buckets/{window}/events?start={}&end={}",
                ts(lo),
                ts(lo + DAY)
            ),
        );
    });
    b.value("8 clients, 1-day event fetches: throughput", rps, "req/s");
    b.value("8 clients, 1-day event fetches: p50", p50, "ms");
}

/// COMPATIBILITY.md, server #16: one event lasting 300 days (a window left open) must not make reads of
/// the last day walk back 300 days. Inserts it into the window bucket, then times the last
/// day's events, their count and a cold 1-day `desktop` query.
pub fn long_event_reads(
    b: &mut BenchReport,
    c: &mut Client,
    window: &str,
    end: i64,
    desktop: &str,
) {
    let long = json!([{"timestamp": ts(end - 300 * DAY), "duration": 300.0 * 86_400.0,
        "data": {"app": "left open", "title": "300 days"}}]);
    let r = c.post_json(
        &format!("/api/0/buckets/{window}/events"),
        &long.to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let day_path = format!(
        "/api/0/buckets/{window}/events?start={}&end={}",
        ts(end - DAY),
        ts(end)
    );
    b.latency("window events, last day, with a 300-day event", 50, || {
        get_ok(c, &day_path);
    });
    let count_path = day_path.replace("/events?", "/events/count?");
    b.latency(
        "window events/count, last day, with a 300-day event",
        50,
        || {
            get_ok(c, &count_path);
        },
    );
    b.latency(
        "desktop query, 1 day, with a 300-day event",
        10,
        cold(c, desktop, &[(end - DAY, end)]),
    );
}
