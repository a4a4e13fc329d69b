//! A period answered as the sum of its days (`query_sum`, what the dashboard's week, month
//! and year views and `/api/0/summary` ask for) is the whole-range desktop query's answer,
//! for random histories, random periods and random writes in between, with every day's
//! result kept in the cache and invalidated by the writes. Days here are also 10 minutes
//! or an hour long, so that events cross their boundaries often.
//!
//! The one known difference is kept out of the generated histories: `flood` fills a gap
//! of under 5 s between two events, and a gap that straddles a day's boundary is seen by
//! no single day (`summed.rs`); such a gap is closed up to the boundary here (without that,
//! this test fails). Totals from `sum_durations` are cut to milliseconds per period, so
//! they may differ by 1 ms a day.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use aw_models::classes::default_classes;
use aw_models::queries::{try_canonical_events, DesktopQueryParams};
use aw_models::{Event, TimeInterval};
use aw_query::{query, query_sum, MemoryDataSource, MergeKeys, ResultCache, SumOptions};
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use serde_json::{json, Value};

const WINDOW: &str = "aw-watcher-window_h";
const AFK: &str = "aw-watcher-afk_h";
const WEB: &str = "aw-watcher-web-chrome_h";
const S: i64 = 1_000_000_000;
/// The first day's start: 2025-03-01T04:00:00Z.
const ORIGIN: i64 = 1_740_801_600 * S;

/// One generated event: start and length in whole seconds from `ORIGIN`, and a choice of data.
#[derive(Debug, Clone)]
struct Gen {
    gap: i64,
    len: i64,
    pick: usize,
}

fn gen_events() -> impl Strategy<Value = Vec<Gen>> {
    prop::collection::vec(
        (
            prop_oneof![Just(0i64), 1i64..5, 5i64..120, 600i64..7_200],
            prop_oneof![1i64..60, 60i64..3_600, Just(0i64)],
            0usize..12,
        )
            .prop_map(|(gap, len, pick)| Gen { gap, len, pick }),
        0..120,
    )
}

fn window_data(pick: usize) -> Value {
    let apps = ["code", "Google-chrome", "Slack", "firefox"];
    let app = apps[pick % apps.len()];
    json!({"app": app, "title": format!("{app} {}", pick / 4)})
}

fn afk_data(pick: usize) -> Value {
    json!({"status": if pick.is_multiple_of(3) { "afk" } else { "not-afk" }})
}

fn web_data(pick: usize) -> Value {
    let sites = [
        "https://github.com/a",
        "https://docs.rs/x",
        "https://news.ycombinator.com/",
    ];
    json!({"url": sites[pick % sites.len()], "title": format!("tab {}", pick % 5), "audible": pick.is_multiple_of(7)})
}

fn at(ns: i64) -> DateTime<Utc> {
    aw_models::timestamp::from_ns(ns)
}

/// The events of one bucket laid end to end from before `ORIGIN`, every gap of under 5 s
/// that straddles a boundary of the days (`day` ns long) closed up to it (see the module
/// docs).
fn lay_out(gens: &[Gen], data: fn(usize) -> Value, day: i64) -> Vec<Event> {
    let mut t = ORIGIN - day / 4;
    let mut spans: Vec<(i64, i64, Value)> = Vec::new();
    for g in gens {
        t += g.gap * S;
        spans.push((t, t + g.len * S, data(g.pick)));
        t += g.len * S;
    }
    for i in 1..spans.len() {
        let (end, next) = (spans[i - 1].1, spans[i].0);
        let boundary = (next - ORIGIN).div_euclid(day) * day + ORIGIN;
        if end < boundary && boundary < next && next - end < 5 * S {
            spans[i - 1].1 = boundary;
        }
    }
    spans
        .into_iter()
        .map(|(start, end, data)| Event {
            id: None,
            timestamp: at(start),
            duration: Duration::nanoseconds(end - start),
            data: data.as_object().cloned().unwrap_or_default(),
        })
        .collect()
}

fn source(window: &[Event], afk: &[Event], web: &[Event]) -> MemoryDataSource {
    let mut ds = MemoryDataSource::new();
    ds.add_bucket(WINDOW, "currentwindow", "h", window.to_vec());
    ds.add_bucket(AFK, "afkstatus", "h", afk.to_vec());
    ds.add_bucket(WEB, "web.tab.current", "h", web.to_vec());
    ds
}

/// The dashboard's per-day program (as `periodQuery` in `webui/queries.js` builds it).
fn program() -> String {
    let params = DesktopQueryParams {
        bid_window: WINDOW.into(),
        bid_afk: AFK.into(),
        bid_browsers: vec![WEB.into()],
        classes: default_classes(),
        filter_afk: true,
        include_audible: true,
        ..Default::default()
    };
    let mut q = try_canonical_events(&params).unwrap();
    q.push("title_events = merge_events_by_keys(events, [\"app\", \"title\"]);".into());
    q.push(
        "RETURN = {\"apps\": merge_events_by_keys(title_events, [\"app\"]), \"titles\": title_events, \
         \"cats\": merge_events_by_keys(events, [\"$category\"]), \"total\": sum_durations(events), \
         \"domains\": merge_events_by_keys(browser_events, [\"$domain\"]), \"browser\": sum_durations(browser_events)};"
            .into(),
    );
    q.join("\n")
}

fn keys() -> MergeKeys {
    MergeKeys::from_json(&json!({
        "apps": ["app"], "titles": ["app", "title"], "cats": ["$category"], "domains": ["$domain"]
    }))
    .unwrap()
}

const LISTS: [(&str, &[&str]); 4] = [
    ("apps", &["app"]),
    ("titles", &["app", "title"]),
    ("cats", &["$category"]),
    ("domains", &["$domain"]),
];

/// A list's durations by the values of its keys.
fn by_keys(list: &Value, names: &[&str]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for e in list.as_array().into_iter().flatten() {
        let key: Vec<&Value> = names.iter().map(|n| &e["data"][*n]).collect();
        *out.entry(serde_json::to_string(&key).unwrap())
            .or_insert(0.0) += e["duration"].as_f64().unwrap();
    }
    out
}

/// `n` days of `day` ns from the `first` after `ORIGIN`.
fn days(first: i64, n: i64, day: i64) -> Vec<TimeInterval> {
    (first..first + n)
        .map(|d| TimeInterval::new(at(ORIGIN + d * day), at(ORIGIN + (d + 1) * day)))
        .collect()
}

/// The sum of `periods` equals the program over their whole span (see the module docs).
fn assert_sum_is_whole(sum: &Value, ds: &MemoryDataSource, periods: &[TimeInterval]) {
    let whole_range = TimeInterval::new(*periods[0].start(), *periods[periods.len() - 1].end());
    let whole = query(&program(), &[whole_range], ds).unwrap().remove(0);
    for (list, names) in LISTS {
        let (a, b) = (by_keys(&sum[list], names), by_keys(&whole[list], names));
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            "{list}"
        );
        for (k, v) in &a {
            assert!((v - b[k]).abs() < 1e-6, "{list} {k}: {v} vs {}", b[k]);
        }
        // Longest first.
        let durations: Vec<f64> = sum[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["duration"].as_f64().unwrap())
            .collect();
        assert!(durations.windows(2).all(|w| w[0] >= w[1]), "{list} sorted");
    }
    let ms = periods.len() as f64 * 1e-3 + 1e-6;
    for total in ["total", "browser"] {
        let (a, b) = (sum[total].as_f64().unwrap(), whole[total].as_f64().unwrap());
        assert!((a - b).abs() <= ms, "{total}: {a} vs {b}");
    }
}

fn sum(ds: &MemoryDataSource, periods: &[TimeInterval], cache: Option<&ResultCache>) -> Value {
    let options = SumOptions {
        keys: Some(keys()),
        ..SumOptions::default()
    };
    let text = query_sum(&program(), periods, ds, None, cache, &options).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The extent of `events` touched by replacing `old` with `new`, as the datastore tells it.
fn extent(old: &Event, new: &Event) -> (i64, i64) {
    (
        old.start_ns().min(new.start_ns()),
        old.end_ns().max(new.end_ns()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_sum_of_the_days_is_the_whole_period(
        window in gen_events(),
        afk in gen_events(),
        web in gen_events(),
        first in 0i64..3,
        n in 1i64..8,
        day in prop_oneof![Just(600 * S), Just(3_600 * S), Just(86_400 * S)],
        writes in prop::collection::vec((0usize..3, 0usize..200, 0i64..3_600, 0usize..12), 0..6),
    ) {
        let mut buckets = [
            lay_out(&window, window_data, day),
            lay_out(&afk, afk_data, day),
            lay_out(&web, web_data, day),
        ];
        let periods = days(first, n, day);
        let cache = Arc::new(ResultCache::new(64 << 20));
        let ds = source(&buckets[0], &buckets[1], &buckets[2]);
        let cold = sum(&ds, &periods, Some(&cache));
        assert_sum_is_whole(&cold, &ds, &periods);
        // From the kept days: the same answer.
        prop_assert_eq!(&sum(&ds, &periods, Some(&cache)), &cold);
        prop_assert_eq!(cache.stats().entries as i64, n);
        // Random writes, each told to the cache as the datastore tells it: the next sum
        // evaluates the days they reached and is again the whole period's answer.
        for (bucket, index, shift, pick) in writes {
            let (id, data): (&str, fn(usize) -> Value) = match bucket {
                0 => (WINDOW, window_data),
                1 => (AFK, afk_data),
                _ => (WEB, web_data),
            };
            let events = &mut buckets[bucket];
            if events.is_empty() {
                continue;
            }
            let i = index % events.len();
            let old = events[i].clone();
            let mut new = old.clone();
            new.timestamp = old.timestamp + Duration::seconds(shift - 1_800);
            new.data = data(pick).as_object().cloned().unwrap_or_default();
            events[i] = new.clone();
            let (lo, hi) = extent(&old, &new);
            cache.events_changed(id, lo, hi);
            let ds = source(&buckets[0], &buckets[1], &buckets[2]);
            let kept = sum(&ds, &periods, Some(&cache));
            prop_assert_eq!(&kept, &sum(&ds, &periods, None));
        }
    }
}
