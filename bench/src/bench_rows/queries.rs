//! `aw-bench`'s rows of dashboard queries: cold evaluations over growing periods, the result
//! cache's hits, the cache filled to its budget, and eight clients querying at once.

use super::requests::{cold, concurrent, post_ok};
use super::BenchReport;
use aw_tests::year::{proc_status_mb, query_body, ts, DAY, NS, START_DAY};
use aw_tests::Client;

/// The canonical dashboard queries (`desktop` and `browser` code) over `c`: cold, then
/// repeated (answered by the result cache), then after a heartbeat into one of their days.
pub fn dashboard_queries(
    b: &mut BenchReport,
    c: &mut Client,
    desktop: &str,
    browser: &str,
    window: &str,
    end: i64,
) {
    // These rows measure evaluation (cold): each request asks for a period one second
    // earlier than the last, so the result cache never answers them. Cached rows follow.
    for (name, span, reps) in [
        ("desktop query, 1 day", DAY, 20),
        ("desktop query, 1 week", 7 * DAY, 10),
        ("desktop query, 30 days", 30 * DAY, 5),
        ("desktop query, 365 days", 365 * DAY, 3),
    ] {
        let lo = end - span.min(end - START_DAY);
        b.latency(name, reps, cold(c, desktop, &[(lo, end)]));
    }
    b.latency(
        "browser query, 1 week",
        10,
        cold(c, browser, &[(end - 7 * DAY, end)]),
    );
    let week: Vec<(i64, i64)> = (1..=7)
        .map(|d| (end - d * DAY, end - (d - 1) * DAY))
        .collect();
    b.latency(
        "desktop query, 7 x 1-day periods",
        10,
        cold(c, desktop, &week),
    );

    // The result cache (issue 14): the same request again; a week view after a heartbeat
    // into one of its days (that day is evaluated again, the other six come from the cache).
    let year_body = query_body(desktop, &[(end - (365 * DAY).min(end - START_DAY), end)]);
    b.latency("desktop query, 365 days, repeated (cached)", 50, || {
        post_ok(c, "/api/0/query/", &year_body);
    });
    let week_body = query_body(desktop, &week);
    b.latency(
        "desktop query, 7 x 1-day periods, repeated (cached)",
        50,
        || {
            post_ok(c, "/api/0/query/", &week_body);
        },
    );
    let mut k = 0;
    b.latency(
        "desktop query, 7 x 1-day periods, after a heartbeat into one day",
        20,
        || {
            k += 1;
            let hb = format!(
                r#"{{"timestamp":"{}","duration":1,"data":{{"app":"bench","title":"{k}"}}}}"#,
                ts(end - 3 * DAY + k * NS)
            );
            post_ok(
                c,
                &format!("/api/0/buckets/{window}/heartbeat?pulsetime=0"),
                &hb,
            );
            post_ok(c, "/api/0/query/", &week_body);
        },
    );
}

/// The query cache filled with 1-day `desktop` results, then its size and the server's
/// resident memory (`server_pid`'s).
pub fn query_cache_fill(
    b: &mut BenchReport,
    c: &mut Client,
    desktop: &str,
    days: i64,
    quick: bool,
    server_pid: u32,
) {
    // The cache full: 1-day desktop results of distinct days until it holds 90% of its
    // budget (or a request limit), then its size and the server's resident memory. Its
    // periods are half a second off every other row's, so the cold rows that follow (the
    // 8 clients') never meet an entry it left.
    let cache_stats = |c: &mut Client| c.get("/api/0/query/cache").json();
    let budget = cache_stats(c)["budget"].as_f64().unwrap_or(0.0);
    let limit = if quick { 400 } else { 4000 };
    let mut sent = 0;
    while sent < limit && cache_stats(c)["bytes"].as_f64().unwrap_or(0.0) < 0.9 * budget {
        for _ in 0..50 {
            let day = sent % (days - 1).max(1);
            let lo = START_DAY + day * DAY + (sent / days) * NS + NS / 2;
            post_ok(c, "/api/0/query/", &query_body(desktop, &[(lo, lo + DAY)]));
            sent += 1;
        }
    }
    let stats = cache_stats(c);
    let name = "query cache after filling it with 1-day results";
    let text = format!(
        "{} entries, {:.1} of {:.1} MB, after {sent} requests",
        stats["entries"],
        stats["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        budget / 1e6
    );
    println!("{name:<55} {text}");
    b.json.insert(name.into(), stats);
    b.rows.push((name.into(), text));
    b.value(
        "server RSS (VmRSS) with that cache",
        proc_status_mb(server_pid, "VmRSS:"),
        "MB",
    );
}

/// Eight clients at once, each request a cold 1-day `desktop` query of another day:
/// throughput and p50.
pub fn concurrent_queries(b: &mut BenchReport, port: u16, desktop: &str, days: i64, quick: bool) {
    let secs_q = if quick { 3.0 } else { 10.0 };
    let (rps, p50) = concurrent(port, 8, secs_q, |c, i| {
        let day = (i as i64 * 7919) % days;
        // A second later on each pass over the days: cold, like the rows above.
        let lo = START_DAY + day * DAY + (i as i64 / days) * NS;
        post_ok(c, "/api/0/query/", &query_body(desktop, &[(lo, lo + DAY)]));
    });
    b.value("8 clients, 1-day desktop queries: throughput", rps, "req/s");
    b.value("8 clients, 1-day desktop queries: p50", p50, "ms");
}
