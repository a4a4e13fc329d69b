//! A watcher day, end to end through `aw-client-rust` against the real server.
//!
//! An 8-hour working day (2024-03-04 08:00–16:00 UTC) is compressed by sending heartbeats
//! with synthetic timestamps as fast as the server takes them. Three watchers run in
//! parallel threads, each with its own blocking client, like the separate processes they are
//! in real life:
//!
//! * window watcher: polls every 5 s (with up to 0.4 s jitter), pulsetime 6 s, reports the
//!   focused `{app, title}`, which changes every 2–7 minutes; it keeps reporting while the
//!   user is away;
//! * AFK watcher: polls every 10 s, pulsetime 11 s, `{status: afk|not-afk}`, with a coffee
//!   break, lunch and a short break;
//! * browser watcher: polls every 10 s while the browser is focused, pulsetime 11 s, reports
//!   the active tab `{url, title, audible, incognito, tabCount}`, tabs changing every 30–90 s.
//!
//! The laptop is suspended for 20 minutes (no watcher sends anything).
//!
//! The ground truth (what the user did, second by second) is kept in the test, and the
//! stored events are checked three ways: exactly against an independent simulation of the
//! heartbeat merge rule over the heartbeats actually sent; against the ground-truth totals
//! (not-afk time, time per app, active time per app, browser time per domain) within the
//! one-poll-per-event loss that heartbeats imply; and through range reads, counts and export.
//!
//! Adding the dashboard's desktop query later: [`DayTotals`] already holds what its result
//! must show (`window.app_events` ≈ `active_per_app`, `window.duration` ≈ sum of it,
//! `browser.domains` ≈ `browser_per_domain` restricted to focused time), and
//! `watcher_day_desktop_query` (ignored until the query engine lands) runs it.

use std::collections::BTreeMap;
use std::thread;

use aw_client_rust::aw_models::Event;
use aw_client_rust::blocking::AwClient;
use aw_client_rust::classes::{Category, CategoryRule};
use aw_client_rust::queries::{full_desktop_query, DesktopQueryParams};
use aw_tests::dataset::Rng;
use aw_tests::TestServer;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{json, Map, Value};

const DAY_SECONDS: i64 = 8 * 3600;
const NS: i64 = 1_000_000_000;

const WINDOW_POLL_MS: i64 = 5_000;
const AFK_POLL_MS: i64 = 10_000;
const WEB_POLL_MS: i64 = 10_000;
/// Heartbeats are sent up to this late relative to the poll tick.
const MAX_JITTER_MS: i64 = 400;

const HOST: &str = "workstation";
const WINDOW_BUCKET: &str = "aw-watcher-window_workstation";
const AFK_BUCKET: &str = "aw-watcher-afk_workstation";
const WEB_BUCKET: &str = "aw-watcher-web-firefox_workstation";

/// Away from the keyboard (seconds since day start, half-open).
const AFK_PERIODS: [(i64, i64); 3] = [(7_200, 7_920), (14_400, 17_100), (23_400, 23_880)];
/// Laptop suspended: no watcher runs.
const SLEEP_PERIODS: [(i64, i64); 1] = [(25_200, 26_400)];

fn day_start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 3, 4, 8, 0, 0).unwrap()
}

/// A browser tab.
#[derive(Clone, Debug)]
struct Tab {
    url: &'static str,
    title: &'static str,
}

const TABS: [Tab; 6] = [
    Tab {
        url: "https://github.com/ActivityWatch/aw-server-rust/pulls",
        title: "Pull requests",
    },
    Tab {
        url: "https://docs.rs/reqwest/latest/reqwest/",
        title: "reqwest - Rust",
    },
    Tab {
        url: "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        title: "Music video",
    },
    Tab {
        url: "https://news.ycombinator.com/",
        title: "Hacker News",
    },
    Tab {
        url: "https://github.com/ActivityWatch/activitywatch/issues/1",
        title: "Issue #1",
    },
    Tab {
        url: "https://www.rust-lang.org/learn",
        title: "Learn Rust",
    },
];

/// What was focused during `[start, end)` seconds of the day.
#[derive(Clone, Debug)]
struct Segment {
    start: i64,
    end: i64,
    app: &'static str,
    title: String,
    /// For the browser: (start second, tab) changes within the segment.
    tabs: Vec<(i64, Tab)>,
}

/// The ground truth of the day, second by second.
struct Day {
    segments: Vec<Segment>,
}

impl Day {
    fn generate(seed: u64) -> Day {
        let apps: [(&str, &[&str]); 5] = [
            (
                "Code",
                &[
                    "main.rs - aw-server",
                    "lib.rs - aw-client-rust",
                    "Cargo.toml",
                ],
            ),
            ("Terminal", &["cargo test", "htop", "git log"]),
            ("Firefox", &[""]),
            ("Slack", &["#general", "#dev"]),
            ("Thunderbird", &["Inbox"]),
        ];
        let mut rng = Rng::new(seed);
        let mut segments: Vec<Segment> = Vec::new();
        let mut t = 0;
        while t < DAY_SECONDS {
            let end = (t + rng.int_in(120, 420)).min(DAY_SECONDS);
            let (app, titles) = *rng.pick(&apps);
            let mut tabs = Vec::new();
            let title = if app == "Firefox" {
                let mut s = t;
                while s < end {
                    tabs.push((s, rng.pick(&TABS).clone()));
                    s += rng.int_in(30, 90);
                }
                format!("{} - Mozilla Firefox", tabs[0].1.title)
            } else {
                rng.pick(titles).to_string()
            };
            // Same window twice in a row would just be one longer segment.
            match segments.last_mut() {
                Some(last) if last.app == app && last.title == title && app != "Firefox" => {
                    last.end = end
                }
                _ => segments.push(Segment {
                    start: t,
                    end,
                    app,
                    title,
                    tabs,
                }),
            }
            t = end;
        }
        Day { segments }
    }

    fn segment_at(&self, second: i64) -> &Segment {
        let i = self.segments.partition_point(|s| s.end <= second);
        &self.segments[i.min(self.segments.len() - 1)]
    }

    /// Window data at `ms` since day start (the browser's title follows its active tab).
    fn window_at(&self, ms: i64) -> Map<String, Value> {
        let seg = self.segment_at(ms / 1000);
        let title = match self.tab_at(ms) {
            Some(tab) => format!("{} - Mozilla Firefox", tab.title),
            None => seg.title.clone(),
        };
        obj(json!({"app": seg.app, "title": title}))
    }

    /// The active browser tab when the browser is focused.
    fn tab_at(&self, ms: i64) -> Option<Tab> {
        let seg = self.segment_at(ms / 1000);
        let i = seg.tabs.partition_point(|(s, _)| *s * 1000 <= ms);
        (i > 0).then(|| seg.tabs[i - 1].1.clone())
    }
}

fn in_periods(periods: &[(i64, i64)], ms: i64) -> bool {
    periods
        .iter()
        .any(|&(a, b)| a * 1000 <= ms && ms < b * 1000)
}

fn asleep(ms: i64) -> bool {
    in_periods(&SLEEP_PERIODS, ms)
}

fn afk(ms: i64) -> bool {
    in_periods(&AFK_PERIODS, ms)
}

fn obj(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn domain(url: &str) -> String {
    let host = url.split("://").nth(1).unwrap().split('/').next().unwrap();
    host.trim_start_matches("www.").to_string()
}

/// One heartbeat as sent: nanoseconds since the day start and its data.
#[derive(Clone, Debug)]
struct Beat {
    ns: i64,
    data: Map<String, Value>,
}

/// Runs one watcher: every `poll_ms` (plus jitter) asks `observe` what to report and sends
/// it as a heartbeat, skipping suspended time. Returns what it sent.
fn run_watcher(
    port: u16,
    client_name: &'static str,
    bucket: &'static str,
    kind: &'static str,
    poll_ms: i64,
    seed: u64,
    observe: impl Fn(i64) -> Option<Map<String, Value>>,
) -> Vec<Beat> {
    let client = AwClient::builder("127.0.0.1", port, client_name)
        .hostname(HOST)
        .build_blocking()
        .unwrap();
    client.create_bucket_simple(bucket, kind).unwrap();
    let pulsetime = (poll_ms + 1000) as f64 / 1000.0;
    let mut rng = Rng::new(seed);
    let mut sent = Vec::new();
    let mut tick = 0;
    while tick < DAY_SECONDS * 1000 {
        let ms = tick + rng.int_in(0, MAX_JITTER_MS);
        tick += poll_ms;
        if ms >= DAY_SECONDS * 1000 || asleep(ms) {
            continue;
        }
        let Some(data) = observe(ms) else { continue };
        let event = Event::new(
            day_start() + Duration::milliseconds(ms),
            Duration::zero(),
            data.clone(),
        );
        client.heartbeat(bucket, &event, pulsetime).unwrap();
        sent.push(Beat {
            ns: ms * 1_000_000,
            data,
        });
    }
    sent
}

/// An event as an interval in ns since the day start.
#[derive(Clone, Debug, PartialEq)]
struct Span {
    start: i64,
    end: i64,
    data: Map<String, Value>,
}

/// The server's heartbeat merge rule, re-implemented: a heartbeat with the same data as the
/// last event, starting within `[last.start, last.end + pulsetime]`, extends it; otherwise it
/// starts a new event.
fn simulate_merge(beats: &[Beat], pulsetime_ns: i64) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for beat in beats {
        match out.last_mut() {
            Some(last)
                if last.data == beat.data
                    && last.start <= beat.ns
                    && beat.ns <= last.end + pulsetime_ns =>
            {
                last.end = last.end.max(beat.ns)
            }
            _ => out.push(Span {
                start: beat.ns,
                end: beat.ns,
                data: beat.data.clone(),
            }),
        }
    }
    out
}

/// Stored events, oldest first, as spans.
fn spans(events: &[Event]) -> Vec<Span> {
    let mut v: Vec<Span> = events
        .iter()
        .map(|e| {
            let start = (e.timestamp - day_start()).num_nanoseconds().unwrap();
            Span {
                start,
                end: start + e.duration.num_nanoseconds().unwrap(),
                data: e.data.clone(),
            }
        })
        .collect();
    v.sort_by_key(|s| s.start);
    v
}

/// Total length of the intersection of two sorted, internally non-overlapping span lists.
fn intersect_len(a: &[Span], b: &[Span]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].start.max(b[j].start);
        let hi = a[i].end.min(b[j].end);
        total += (hi - lo).max(0);
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

fn add(map: &mut BTreeMap<String, i64>, key: &str, ns: i64) {
    *map.entry(key.to_string()).or_default() += ns;
}

/// Totals in nanoseconds, computed either from the ground truth or from stored events.
#[derive(Debug, Default, PartialEq)]
struct DayTotals {
    /// Time the user was at the computer (awake and not afk).
    not_afk: i64,
    /// Time each app was focused (whether or not the user was there).
    per_app: BTreeMap<String, i64>,
    /// Focused and not afk: what the dashboard's "top applications" shows.
    active_per_app: BTreeMap<String, i64>,
    /// Time each domain was the active tab of the focused browser.
    browser_per_domain: BTreeMap<String, i64>,
}

impl DayTotals {
    /// Second by second from the ground truth.
    fn from_truth(day: &Day) -> DayTotals {
        let mut t = DayTotals::default();
        for second in 0..DAY_SECONDS {
            let ms = second * 1000;
            if asleep(ms) {
                continue;
            }
            let app = day.segment_at(second).app;
            add(&mut t.per_app, app, NS);
            if !afk(ms) {
                t.not_afk += NS;
                add(&mut t.active_per_app, app, NS);
            }
            if let Some(tab) = day.tab_at(ms) {
                add(&mut t.browser_per_domain, &domain(tab.url), NS);
            }
        }
        t
    }

    /// From the stored events of the three buckets.
    fn from_events(window: &[Span], afk: &[Span], web: &[Span]) -> DayTotals {
        let mut t = DayTotals::default();
        let not_afk: Vec<Span> = afk
            .iter()
            .filter(|s| s.data["status"] == "not-afk")
            .cloned()
            .collect();
        t.not_afk = not_afk.iter().map(|s| s.end - s.start).sum();
        for w in window {
            let app = w.data["app"].as_str().unwrap();
            add(&mut t.per_app, app, w.end - w.start);
            add(
                &mut t.active_per_app,
                app,
                intersect_len(std::slice::from_ref(w), &not_afk),
            );
        }
        for s in web {
            add(
                &mut t.browser_per_domain,
                &domain(s.data["url"].as_str().unwrap()),
                s.end - s.start,
            );
        }
        t
    }
}

/// Everything recorded: what each watcher sent and what the server stored.
struct RecordedDay {
    day: Day,
    window_sent: Vec<Beat>,
    afk_sent: Vec<Beat>,
    web_sent: Vec<Beat>,
    window: Vec<Event>,
    afk: Vec<Event>,
    web: Vec<Event>,
}

/// Sends the whole day through three concurrent watchers and reads the buckets back.
fn record_day(server: &TestServer) -> RecordedDay {
    let day = Day::generate(0x5EED_1234_ABCD_0001);
    let port = server.port;
    let (window_sent, afk_sent, web_sent) = thread::scope(|s| {
        let day = &day;
        let window = s.spawn(move || {
            run_watcher(
                port,
                "aw-watcher-window",
                WINDOW_BUCKET,
                "currentwindow",
                WINDOW_POLL_MS,
                11,
                |ms| Some(day.window_at(ms)),
            )
        });
        let afk_watcher = s.spawn(move || {
            run_watcher(
                port,
                "aw-watcher-afk",
                AFK_BUCKET,
                "afkstatus",
                AFK_POLL_MS,
                22,
                |ms| {
                    Some(obj(
                        json!({"status": if afk(ms) { "afk" } else { "not-afk" }}),
                    ))
                },
            )
        });
        let web = s.spawn(move || {
            run_watcher(
                port,
                "aw-watcher-web-firefox",
                WEB_BUCKET,
                "web.tab.current",
                WEB_POLL_MS,
                33,
                |ms| {
                    day.tab_at(ms).map(|tab| {
                        obj(json!({"url": tab.url, "title": tab.title, "audible": false,
                               "incognito": false, "tabCount": 4}))
                    })
                },
            )
        });
        (
            window.join().unwrap(),
            afk_watcher.join().unwrap(),
            web.join().unwrap(),
        )
    });
    let client = AwClient::new("127.0.0.1", port, "checker").unwrap();
    let read = |bucket| client.get_events(bucket, None, None, None).unwrap();
    RecordedDay {
        window: read(WINDOW_BUCKET),
        afk: read(AFK_BUCKET),
        web: read(WEB_BUCKET),
        day,
        window_sent,
        afk_sent,
        web_sent,
    }
}

/// Stored spans equal the simulated merge, allowing 1 ns per event: durations travel as
/// float seconds and are read back with `trunc(seconds × 1e9)`, which can lose 1 ns.
fn assert_same_spans(bucket: &str, stored: &[Span], expected: &[Span]) {
    assert_eq!(stored.len(), expected.len(), "{bucket}: event count");
    for (s, e) in stored.iter().zip(expected) {
        assert_eq!((s.start, &s.data), (e.start, &e.data), "{bucket}");
        assert!((s.end - e.end).abs() <= 1, "{bucket}: {s:?} vs {e:?}");
    }
}

fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

#[test]
fn watcher_day_stored_events_match_independent_totals() {
    let server = TestServer::start();
    let rec = record_day(&server);
    let (window, afk_spans, web) = (spans(&rec.window), spans(&rec.afk), spans(&rec.web));
    let segments = &rec.day.segments;
    assert!(segments.windows(2).all(|w| w[0].end == w[1].start));
    assert_eq!(
        (segments[0].start, segments[segments.len() - 1].end),
        (0, DAY_SECONDS)
    );

    // 1. Exactly what the merge rule says the heartbeats become.
    assert_same_spans(
        "window",
        &window,
        &simulate_merge(&rec.window_sent, (WINDOW_POLL_MS + 1000) * 1_000_000),
    );
    assert_same_spans(
        "afk",
        &afk_spans,
        &simulate_merge(&rec.afk_sent, (AFK_POLL_MS + 1000) * 1_000_000),
    );
    assert_same_spans(
        "web",
        &web,
        &simulate_merge(&rec.web_sent, (WEB_POLL_MS + 1000) * 1_000_000),
    );
    // Heartbeats really merged: far fewer events than heartbeats, and no overlaps.
    assert!(rec.window_sent.len() > 5_000 && window.len() < rec.window_sent.len() / 10);
    for list in [&window, &afk_spans, &web] {
        assert!(
            list.windows(2).all(|w| w[0].end <= w[1].start),
            "overlapping events"
        );
    }
    // Every event has an id, unique across buckets.
    let mut ids: Vec<i64> = rec
        .window
        .iter()
        .chain(&rec.afk)
        .chain(&rec.web)
        .map(|e| e.id.unwrap())
        .collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n);

    // 2. Against the ground truth. At each change of state the time between the last
    // heartbeat before it and the first after it (at most one poll interval plus jitter) is
    // lost to one or both neighbouring events, so an event can be short by up to two such
    // gaps; it is never long (a window's heartbeats only happen while it is focused).
    let truth = DayTotals::from_truth(&rec.day);
    let stored = DayTotals::from_events(&window, &afk_spans, &web);
    let runs = |spans: &[Span], pred: &dyn Fn(&Span) -> bool| {
        spans.iter().filter(|s| pred(s)).count() as i64
    };
    let check = |what: &str, got: i64, want: i64, slack: i64| {
        assert!(
            got <= want + 1_000 && want - got <= slack,
            "{what}: stored {:.1} s, truth {:.1} s, allowed shortfall {:.1} s",
            secs(got),
            secs(want),
            secs(slack)
        );
    };
    let afk_runs = runs(&afk_spans, &|s| s.data["status"] == "not-afk");
    let afk_gap = (AFK_POLL_MS + MAX_JITTER_MS) * 1_000_000;
    let afk_slack = 2 * afk_spans.len() as i64 * afk_gap;
    check(
        "not-afk",
        stored.not_afk,
        truth.not_afk,
        2 * afk_runs * afk_gap,
    );
    assert_eq!(
        stored.per_app.keys().collect::<Vec<_>>(),
        truth.per_app.keys().collect::<Vec<_>>()
    );
    for (app, &want) in &truth.per_app {
        let n = runs(&window, &|s| s.data["app"] == app.as_str());
        let window_slack = 2 * n * (WINDOW_POLL_MS + MAX_JITTER_MS) * 1_000_000;
        check(app, stored.per_app[app], want, window_slack);
        // Active time: shortfalls of the window events and of the afk events may add up.
        check(
            &format!("{app} active"),
            stored.active_per_app[app],
            truth.active_per_app[app],
            window_slack + afk_slack,
        );
    }
    for (domain_name, &want) in &truth.browser_per_domain {
        let n = runs(&web, &|s| {
            domain(s.data["url"].as_str().unwrap()) == *domain_name
        });
        let slack = 2 * n * (WEB_POLL_MS + MAX_JITTER_MS) * 1_000_000;
        check(
            domain_name,
            stored.browser_per_domain[domain_name],
            want,
            slack,
        );
    }
    // The afk periods really are excluded: being at the desk is well under the awake time.
    let awake: i64 = truth.per_app.values().sum();
    let away: i64 = AFK_PERIODS.iter().map(|(a, b)| (b - a) * NS).sum();
    assert_eq!(truth.not_afk, awake - away);
    assert!(stored.not_afk < awake - away / 2);

    // 3. Reads: a range read clips to the hour and sums to the clipped stored events; the
    // count and the export agree with the full read.
    let client = AwClient::new("127.0.0.1", server.port, "checker").unwrap();
    let (from, to) = (
        day_start() + Duration::hours(1),
        day_start() + Duration::hours(2),
    );
    let hour = client
        .get_events(WINDOW_BUCKET, Some(from), Some(to), None)
        .unwrap();
    let (lo, hi) = (3600 * NS, 7200 * NS);
    let want: i64 = window
        .iter()
        .map(|s| (s.end.min(hi) - s.start.max(lo)).max(0))
        .sum();
    let got: i64 = hour
        .iter()
        .map(|e| e.duration.num_nanoseconds().unwrap())
        .sum();
    assert!(
        (got - want).abs() <= hour.len() as i64,
        "hour: {got} vs {want}"
    );
    assert!(hour
        .iter()
        .all(|e| e.timestamp >= from && e.timestamp + e.duration <= to));
    let newest = client
        .get_events(WINDOW_BUCKET, None, None, Some(3))
        .unwrap();
    assert_eq!(newest, rec.window[..3].to_vec());
    assert_eq!(
        client.get_event_count(WINDOW_BUCKET).unwrap(),
        rec.window.len() as i64
    );
    let export = client.export_bucket(AFK_BUCKET).unwrap();
    assert_eq!(
        *export.buckets[AFK_BUCKET].events.as_ref().unwrap(),
        rec.afk
    );
    let buckets = client.get_buckets().unwrap();
    assert_eq!(buckets.len(), 3);
    assert_eq!(buckets[WINDOW_BUCKET].hostname, HOST);
    assert_eq!(buckets[WEB_BUCKET].client, "aw-watcher-web-firefox");
    assert_eq!(buckets[WEB_BUCKET]._type, "web.tab.current");
    assert_eq!(
        buckets[AFK_BUCKET].metadata.start,
        Some(day_start() + Duration::milliseconds(rec.afk_sent[0].ns / 1_000_000))
    );
}

/// The dashboard's full desktop query (`aw_models::queries`, what the dashboard sends) over
/// the recorded day. Its app totals
/// must match the active time per app within the same heartbeat slack (flood only fills
/// gaps shorter than 5 s, less than one poll interval).
#[test]
fn watcher_day_desktop_query() {
    let server = TestServer::start();
    let rec = record_day(&server);
    let (window, afk_spans) = (spans(&rec.window), spans(&rec.afk));
    let truth = DayTotals::from_truth(&rec.day);
    let query = full_desktop_query(&DesktopQueryParams {
        bid_window: WINDOW_BUCKET.into(),
        bid_afk: AFK_BUCKET.into(),
        bid_browsers: vec![WEB_BUCKET.into()],
        classes: vec![Category {
            name: vec!["Work".into()],
            rule: CategoryRule::regex("Code|Terminal"),
        }],
        filter_afk: true,
        include_audible: true,
        ..Default::default()
    });
    let client = AwClient::new("127.0.0.1", server.port, "dashboard").unwrap();
    let period = (day_start(), day_start() + Duration::seconds(DAY_SECONDS));
    let result = client.query(&query, vec![period]).unwrap();
    let w = &result[0]["window"];
    let afk_slack = 2 * afk_spans.len() as i64 * (AFK_POLL_MS + MAX_JITTER_MS) * 1_000_000;
    let mut total = 0.0;
    for app_event in w["app_events"].as_array().unwrap() {
        let app = app_event["data"]["app"].as_str().unwrap();
        let got = app_event["duration"].as_f64().unwrap();
        let want = secs(truth.active_per_app[app]);
        let n = window.iter().filter(|s| s.data["app"] == app).count() as i64;
        let slack = secs(2 * n * (WINDOW_POLL_MS + MAX_JITTER_MS) * 1_000_000 + afk_slack);
        assert!(
            got <= want + 5.0 * n as f64 && want - got <= slack,
            "{app}: {got} vs {want}"
        );
        total += got;
    }
    assert!((w["duration"].as_f64().unwrap() - total).abs() < 0.01 * total.max(1.0));
    let domains: BTreeMap<String, f64> = result[0]["browser"]["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["data"]["$domain"].as_str().unwrap().to_string(),
                e["duration"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        domains.keys().collect::<Vec<_>>(),
        truth.browser_per_domain.keys().collect::<Vec<_>>()
    );
}
