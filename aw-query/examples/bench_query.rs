//! Benchmark: the web UI's full desktop query over a synthetic year of data.
//!
//! Run with `cargo run --release -p aw-query --example bench_query`.
//!
//! Generates ~375k window events (50 apps with a skewed distribution, many titles), ~12.7k
//! AFK events and ~155k browser events (Firefox and Chrome buckets) in a
//! [`MemoryDataSource`], then times the full desktop query (categorize with 13 regex rules,
//! both browsers) over 1 day, 1 week, 30 days and 365 days, plus two multi-period queries.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration as StdDuration, Instant};

use aw_models::{Bucket, Event, TimeInterval};
use aw_query::{
    query, query_json, DataSource, DataSourceError, MemoryDataSource, ResultCache, RowChunks,
    DEFAULT_CACHE_BYTES,
};
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{json, Map, Value};

/// splitmix64: deterministic, dependency-free randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1e6 < p
    }
    /// Zipf-like index in [0, n): small indices much more likely.
    fn skewed(&mut self, n: usize) -> usize {
        let u = (self.next() % 1_000_000) as f64 / 1e6;
        ((n as f64).powf(u) - 1.0) as usize % n
    }
}

const APPS: [&str; 50] = [
    "Firefox",
    "Code",
    "Google-chrome",
    "Slack",
    "Terminal",
    "Thunderbird",
    "Spotify",
    "Discord",
    "Minecraft",
    "libreoffice-writer",
    "Gimp",
    "Inkscape",
    "vlc",
    "Telegram",
    "Signal",
    "zoom",
    "obs",
    "Blender",
    "kate",
    "Spyder",
    "Ghidra",
    "Steam",
    "RimWorld",
    "Audacity",
    "Kdenlive",
    "Element",
    "Mattermost",
    "nautilus",
    "evince",
    "okular",
    "gnome-calculator",
    "htop",
    "KeePassXC",
    "Postman",
    "DBeaver",
    "pgAdmin",
    "Anki",
    "Obsidian",
    "Zotero",
    "Calibre",
    "qBittorrent",
    "Transmission",
    "Shotwell",
    "Rhythmbox",
    "Lutris",
    "Wine",
    "VirtualBox",
    "Remmina",
    "Wireshark",
    "gedit",
];

const SITES: [&str; 20] = [
    "https://github.com/ActivityWatch/aw-server/pull/",
    "https://www.youtube.com/watch?v=",
    "https://stackoverflow.com/questions/",
    "https://www.reddit.com/r/rust/comments/",
    "https://docs.rs/chrono/latest/chrono/struct.",
    "https://mail.google.com/mail/u/0/#inbox/",
    "https://docs.google.com/document/d/",
    "https://en.wikipedia.org/wiki/Item_",
    "https://news.ycombinator.com/item?id=",
    "https://twitter.com/someone/status/",
    "https://www.amazon.com/dp/B0",
    "https://calendar.google.com/calendar/r/week/2023/",
    "https://meet.google.com/abc-",
    "https://gitlab.com/group/project/-/issues/",
    "https://crates.io/crates/serde_",
    "https://www.netflix.com/watch/",
    "https://open.spotify.com/track/",
    "https://translate.google.com/?text=",
    "https://www.bbc.com/news/world-",
    "http://localhost:5600/#/activity/host/",
];

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn ev(t: DateTime<Utc>, ms: i64, data: Value) -> Event {
    Event::new(t, Duration::milliseconds(ms), obj(data))
}

struct Year {
    window: Vec<Event>,
    afk: Vec<Event>,
    firefox: Vec<Event>,
    chrome: Vec<Event>,
}

fn generate(start: DateTime<Utc>, days: i64) -> Year {
    let mut rng = Rng(42);
    let mut y = Year {
        window: Vec::new(),
        afk: Vec::new(),
        firefox: Vec::new(),
        chrome: Vec::new(),
    };
    let mut day_start = start;
    for _ in 0..days {
        let mut t = day_start + Duration::minutes(rng.range(7 * 60, 9 * 60));
        // Night: AFK from the previous day's end until the morning.
        if let Some(last) = y.afk.last() {
            let end = last.calculate_endtime();
            y.afk.push(ev(
                end,
                (t - end).num_milliseconds(),
                json!({"status": "afk"}),
            ));
        }
        for seg in 0..17 {
            let active_ms = rng.range(15 * 60_000, 32 * 60_000);
            let seg_end = t + Duration::milliseconds(active_ms);
            y.afk.push(ev(t, active_ms, json!({"status": "not-afk"})));
            // Window events over the active segment (slightly past it, like real watchers).
            let mut w = t;
            while w < seg_end {
                // ~42% of the time in a browser, otherwise a skewed choice of the others.
                let app_i = if rng.chance(0.42) {
                    if rng.chance(0.7) {
                        0
                    } else {
                        2
                    }
                } else {
                    match rng.skewed(APPS.len()) {
                        0 | 2 => 1,
                        i => i,
                    }
                };
                let app = APPS[app_i];
                let dur = rng.range(2_000, 45_000);
                let n_titles = if app_i < 3 { 3000 } else { 60 };
                let title_n = rng.skewed(n_titles);
                let (title, url) = if app == "Firefox" || app == "Google-chrome" {
                    let site = SITES[rng.skewed(SITES.len())];
                    let url = format!("{site}{title_n}");
                    (format!("Page {title_n} of {site} - {app}"), Some(url))
                } else {
                    (format!("{app} - document {title_n}.txt"), None)
                };
                y.window
                    .push(ev(w, dur, json!({"app": app, "title": title})));
                if let Some(url) = url {
                    let b = ev(
                        w,
                        dur,
                        json!({"url": url, "title": title, "audible": rng.chance(0.1),
                               "incognito": false, "tabCount": rng.range(1, 40)}),
                    );
                    if app == "Firefox" {
                        y.firefox.push(b);
                    } else {
                        y.chrome.push(b);
                    }
                }
                // Mostly small gaps (filled by flood), sometimes none.
                w += Duration::milliseconds(dur + rng.range(0, 1_500));
            }
            if seg < 16 {
                let afk_ms = rng.range(3 * 60_000, 15 * 60_000);
                y.afk.push(ev(seg_end, afk_ms, json!({"status": "afk"})));
                t = seg_end + Duration::milliseconds(afk_ms);
            } else {
                t = seg_end;
            }
        }
        day_start += Duration::days(1);
    }
    y
}

/// The web UI's default categories with two more patterns (`Code`, `netflix`) so that the
/// synthetic apps and titles above fall into categories as often as a real user's do: a
/// workload for the benchmark, not a definition of the defaults (that is the dashboard's
/// `default-classes.js`).
const CLASSES: &str = r#"[
 [["Work"], {"type": "regex", "regex": "Google Docs|libreoffice|ReText"}],
 [["Work", "Programming"], {"type": "regex", "regex": "GitHub|Stack Overflow|BitBucket|Gitlab|vim|Spyder|kate|Ghidra|Scite|Code"}],
 [["Work", "Programming", "ActivityWatch"], {"type": "regex", "regex": "ActivityWatch|aw-", "ignore_case": true}],
 [["Work", "Image"], {"type": "regex", "regex": "Gimp|Inkscape"}],
 [["Work", "Video"], {"type": "regex", "regex": "Kdenlive"}],
 [["Work", "Audio"], {"type": "regex", "regex": "Audacity"}],
 [["Work", "3D"], {"type": "regex", "regex": "Blender"}],
 [["Media", "Games"], {"type": "regex", "regex": "Minecraft|RimWorld"}],
 [["Media", "Video"], {"type": "regex", "regex": "YouTube|Plex|VLC|netflix"}],
 [["Media", "Social Media"], {"type": "regex", "regex": "reddit|Facebook|Twitter|Instagram|devRant", "ignore_case": true}],
 [["Media", "Music"], {"type": "regex", "regex": "Spotify|Deezer", "ignore_case": true}],
 [["Comms", "IM"], {"type": "regex", "regex": "Messenger|Telegram|Signal|WhatsApp|Rambox|Slack|Riot|Element|Discord|Nheko|NeoChat|Mattermost"}],
 [["Comms", "Email"], {"type": "regex", "regex": "Gmail|Thunderbird|mutt|alpine"}]
]"#;

fn canonical() -> Vec<String> {
    let mut q: Vec<String> = vec![
        r#"events = flood(query_bucket(find_bucket("aw-watcher-window_bench")));"#.into(),
        r#"not_afk = flood(query_bucket(find_bucket("aw-watcher-afk_bench")));"#.into(),
        r#"not_afk = filter_keyvals(not_afk, "status", ["not-afk"]);"#.into(),
        r#"browser_events = [];"#.into(),
    ];
    for (b, apps) in [
        (
            "firefox",
            r#"["Firefox", "Firefox.exe", "firefox", "firefox.exe", "Firefox Developer Edition", "Firefox-esr", "Nightly"]"#,
        ),
        (
            "chrome",
            r#"["Google Chrome", "Google-chrome", "chrome.exe", "google-chrome-stable", "Chromium", "Chromium-browser"]"#,
        ),
    ] {
        q.push(format!(
            r#"events_{b} = flood(query_bucket("aw-watcher-web-{b}_bench"));"#
        ));
        q.push(format!(
            r#"window_{b} = filter_keyvals(events, "app", {apps});"#
        ));
        q.push(format!(
            r#"events_{b} = filter_period_intersect(events_{b}, window_{b});"#
        ));
        q.push(format!(r#"events_{b} = split_url_events(events_{b});"#));
        q.push(format!(
            r#"browser_events = concat(browser_events, events_{b});"#
        ));
        q.push(r#"browser_events = sort_by_timestamp(browser_events);"#.into());
    }
    q.extend(
        [
            r#"audible_events = filter_keyvals(browser_events, "audible", [true]);"#,
            r#"not_afk = period_union(not_afk, audible_events);"#,
            r#"events = filter_period_intersect(events, not_afk);"#,
        ]
        .map(String::from),
    );
    q.push(format!("events = categorize(events, {CLASSES});"));
    q
}

fn full_desktop(with_events_list: bool) -> String {
    let mut q = canonical();
    q.extend(
        [
            r#"title_events = sort_by_duration(merge_events_by_keys(events, ["app", "title"]));"#,
            r#"app_events = sort_by_duration(merge_events_by_keys(title_events, ["app"]));"#,
            r#"cat_events = sort_by_duration(merge_events_by_keys(events, ["$category"]));"#,
            r#"app_events = limit_events(app_events, 100);"#,
            r#"title_events = limit_events(title_events, 100);"#,
            r#"duration = sum_durations(events);"#,
            r#"browser_events = split_url_events(browser_events);"#,
            r#"browser_urls = limit_events(sort_by_duration(merge_events_by_keys(browser_events, ["url"])), 100);"#,
            r#"browser_domains = limit_events(sort_by_duration(merge_events_by_keys(browser_events, ["$domain"])), 100);"#,
            r#"browser_titles = limit_events(sort_by_duration(merge_events_by_keys(browser_events, ["title"])), 100);"#,
            r#"browser_duration = sum_durations(browser_events);"#,
        ]
        .map(String::from),
    );
    let events = if with_events_list {
        r#""events": events, "#
    } else {
        ""
    };
    q.push(format!(
        r#"RETURN = {{{events}"window": {{"app_events": app_events, "title_events": title_events, "cat_events": cat_events, "active_events": not_afk, "duration": duration}}, "browser": {{"domains": browser_domains, "urls": browser_urls, "titles": browser_titles, "duration": browser_duration}}}};"#
    ));
    q.join("\n")
}

fn category_by_period() -> String {
    let mut q = canonical();
    q.push(r#"RETURN = {"cat_events": sort_by_duration(merge_events_by_keys(events, ["$category"]))};"#.into());
    q.join("\n")
}

/// Wraps a data source and measures the time spent inside it (summed over threads).
struct Timed<'a> {
    inner: &'a MemoryDataSource,
    nanos: AtomicU64,
}

impl DataSource for Timed<'_> {
    /// The in-memory source reads a whole bucket when called, so timing the call times
    /// the read.
    fn query_bucket_rows(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> RowChunks<'_> {
        let t0 = Instant::now();
        let r = self.inner.query_bucket_rows(bucket_id, start, end);
        self.nanos
            .fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    fn buckets(&self) -> Result<HashMap<String, Bucket>, DataSourceError> {
        self.inner.buckets()
    }
}

/// CPU time (user + system) consumed by this process so far, from `/proc/self/stat`
/// (Linux only; zero elsewhere). Wall-clock times on a shared machine are noisy; CPU time
/// shows the work actually done.
fn cpu_time() -> StdDuration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return StdDuration::ZERO;
    };
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let Some(rest) = stat.rsplit(')').next() else {
        return StdDuration::ZERO;
    };
    // `rest` starts at field 3 (state); utime and stime are fields 14 and 15.
    let f: Vec<&str> = rest.split_whitespace().collect();
    match (
        f.get(11).and_then(|x| x.parse::<u64>().ok()),
        f.get(12).and_then(|x| x.parse::<u64>().ok()),
    ) {
        (Some(u), Some(s)) => StdDuration::from_millis((u + s) * 10),
        _ => StdDuration::ZERO,
    }
}

struct Timing {
    /// CPU time of the fastest run.
    cpu: StdDuration,
    best: StdDuration,
    median: StdDuration,
    /// Time inside the data source during the best run.
    source: StdDuration,
    size: usize,
}

/// Runs the query `runs` times and reports the fastest and median times.
fn time(ds: &MemoryDataSource, code: &str, periods: &[TimeInterval], runs: usize) -> Timing {
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..runs {
        let timed = Timed {
            inner: ds,
            nanos: AtomicU64::new(0),
        };
        let c0 = cpu_time();
        let t0 = Instant::now();
        let out = query(code, periods, &timed).expect("query failed");
        times.push((
            t0.elapsed(),
            StdDuration::from_nanos(timed.nanos.load(Ordering::Relaxed)),
            cpu_time().saturating_sub(c0),
        ));
        size = serde_json::to_string(&out).map(|s| s.len()).unwrap_or(0);
    }
    times.sort();
    Timing {
        cpu: times[0].2,
        best: times[0].0,
        median: times[times.len() / 2].0,
        source: times[0].1,
        size,
    }
}

fn report(label: &str, t: &Timing) {
    println!(
        "  {label:>18}: best {:8.1} ms (data source {:6.1} ms, query engine {:7.1} ms; cpu {:6.0} ms), median {:8.1} ms, {} KiB response",
        ms(t.best),
        ms(t.source),
        ms(t.best.saturating_sub(t.source)),
        ms(t.cpu),
        ms(t.median),
        t.size / 1024
    );
}

fn ms(d: StdDuration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Requests answered from the result cache: what a dashboard reload costs once its periods
/// were computed (parsing the request's program, the look-ups, joining the texts).
fn cached(ds: &MemoryDataSource, code: &str, start: DateTime<Utc>) {
    println!("\nfull desktop query, answered from the result cache:");
    let cache = ResultCache::new(DEFAULT_CACHE_BYTES);
    let week: Vec<TimeInterval> = (0..7)
        .map(|d| {
            TimeInterval::new(
                start + Duration::days(180 + d),
                start + Duration::days(181 + d),
            )
        })
        .collect();
    let year = vec![TimeInterval::new(start, start + Duration::days(365))];
    for (label, periods) in [("week view, 7 x 1 day", week), ("365 days", year)] {
        let first = query_json(code, &periods, ds, None, Some(&cache));
        let n = 500;
        let t0 = Instant::now();
        for _ in 0..n {
            assert_eq!(query_json(code, &periods, ds, None, Some(&cache)), first);
        }
        println!(
            "  {label:<28} {:.3} ms per request ({} bytes)",
            ms(t0.elapsed()) / n as f64,
            first.map_or(0, |t| t.len())
        );
    }
}

fn main() {
    let start = Utc
        .with_ymd_and_hms(2023, 1, 1, 0, 0, 0)
        .single()
        .expect("valid date");
    let t0 = Instant::now();
    let y = generate(start, 365);
    println!(
        "generated window={} afk={} firefox={} chrome={} (browser total {}) in {:.0} ms",
        y.window.len(),
        y.afk.len(),
        y.firefox.len(),
        y.chrome.len(),
        y.firefox.len() + y.chrome.len(),
        ms(t0.elapsed())
    );
    let mut ds = MemoryDataSource::new();
    ds.add_bucket(
        "aw-watcher-window_bench",
        "currentwindow",
        "bench",
        y.window,
    );
    ds.add_bucket("aw-watcher-afk_bench", "afkstatus", "bench", y.afk);
    ds.add_bucket(
        "aw-watcher-web-firefox_bench",
        "web.tab.current",
        "bench",
        y.firefox,
    );
    ds.add_bucket(
        "aw-watcher-web-chrome_bench",
        "web.tab.current",
        "bench",
        y.chrome,
    );
    println!(
        "threads available: {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );

    let end_of = |days: i64| TimeInterval::new(start, start + Duration::days(days));
    let full = full_desktop(false);
    if std::env::args().nth(1).as_deref() == Some("year") {
        // Profiling mode: only the year-long full desktop query.
        report("365 days", &time(&ds, &full, &[end_of(365)], 5));
        return;
    }
    if std::env::args().nth(1).as_deref() == Some("cache") {
        cached(&ds, &full, start);
        return;
    }
    let full_events = full_desktop(true);
    println!("\nfull desktop query (web UI, without the raw events list):");
    for (label, days, runs) in [
        ("1 day", 1, 9),
        ("1 week", 7, 7),
        ("30 days", 30, 5),
        ("365 days", 365, 3),
    ] {
        // The single day is a mid-year weekday with data.
        let period = if days == 1 {
            TimeInterval::new(start + Duration::days(180), start + Duration::days(181))
        } else {
            end_of(days)
        };
        report(label, &time(&ds, &full, &[period], runs));
    }
    println!("\nfull desktop query including the categorized events list in RETURN:");
    for (label, days, runs) in [("30 days", 30, 3), ("365 days", 365, 3)] {
        report(label, &time(&ds, &full_events, &[end_of(days)], runs));
    }

    println!("\ncategory-by-period (many periods, evaluated in parallel):");
    let cat = category_by_period();
    let days: Vec<TimeInterval> = (0..30)
        .map(|d| TimeInterval::new(start + Duration::days(d), start + Duration::days(d + 1)))
        .collect();
    report("30 daily periods", &time(&ds, &cat, &days, 3));
    let months: Vec<TimeInterval> = (0..12)
        .map(|m| {
            let a = Utc
                .with_ymd_and_hms(2023, m + 1, 1, 0, 0, 0)
                .single()
                .expect("valid");
            let b = if m == 11 {
                Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0)
                    .single()
                    .expect("valid")
            } else {
                Utc.with_ymd_and_hms(2023, m + 2, 1, 0, 0, 0)
                    .single()
                    .expect("valid")
            };
            TimeInterval::new(a, b)
        })
        .collect();
    report("12 monthly periods", &time(&ds, &cat, &months, 3));

    // For scale: the data source alone (copying the year's rows out of memory).
    let t0 = Instant::now();
    let year = end_of(365);
    let mut n = 0;
    for b in [
        "aw-watcher-window_bench",
        "aw-watcher-afk_bench",
        "aw-watcher-web-firefox_bench",
        "aw-watcher-web-chrome_bench",
    ] {
        n += ds
            .query_bucket_rows(b, *year.start(), *year.end())
            .map(|part| part.map_or(0, |p| p.len()))
            .sum::<usize>();
    }
    println!(
        "\n(data source alone: fetching all {n} events of the year takes {:.1} ms)",
        ms(t0.elapsed())
    );
}
