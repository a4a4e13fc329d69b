//! Compaction changes nothing the queries make of the events: for random histories of the
//! three flooded bucket types (with duplicates, shared starts, overlaps, zero lengths and
//! starts on whole minutes), the compacted buckets flood to the same events as the
//! original ones, and the dashboard's desktop program gives the same durations by app,
//! title, category and domain, and the same totals, over random periods that begin and
//! end on whole minutes. The store does the compaction (a real SQLite file), the query
//! engine (`aw-query`) the flooding.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_models::classes::default_classes;
use aw_models::queries::{try_canonical_events, DesktopQueryParams};
use aw_models::{Bucket, Event, TimeInterval};
use aw_query::{query, MemoryDataSource};
use chrono::{DateTime, Duration};
use common::TempStore;
use proptest::prelude::*;
use serde_json::{json, Value};

const WINDOW: &str = "aw-watcher-window_h";
const AFK: &str = "aw-watcher-afk_h";
const WEB: &str = "aw-watcher-web-chrome_h";
const MS: i64 = 1_000_000;
const MINUTE: i64 = 60_000 * MS;
/// 2025-03-01T04:00:00Z, a whole minute.
const ORIGIN: i64 = 1_740_801_600_000 * MS;

/// One generated event: how it follows the one before, its length, its data, and whether
/// it is repeated with the same start.
#[derive(Debug, Clone)]
struct Gen {
    gap_ms: i64,
    len_ms: i64,
    pick: usize,
    twin: Option<(i64, usize)>,
}

fn gens() -> impl Strategy<Value = Vec<Gen>> {
    prop::collection::vec(
        (
            // Touching, overlapping, under 5 s, exactly 5 s, longer, or up to the next minute.
            prop_oneof![
                Just(0i64),
                -3_000i64..0,
                1i64..5_000,
                Just(5_000i64),
                5_001i64..90_000,
                Just(i64::MAX),
            ],
            prop_oneof![Just(0i64), 1i64..3_000, 3_000i64..70_000],
            0usize..3,
            prop::option::weighted(0.15, (0i64..5_000, 0usize..3)),
        )
            .prop_map(|(gap_ms, len_ms, pick, twin)| Gen {
                gap_ms,
                len_ms,
                pick,
                twin,
            }),
        0..80,
    )
}

fn window_data(pick: usize) -> Value {
    let apps = ["code", "firefox", "Slack"];
    json!({"app": apps[pick], "title": format!("{} {}", apps[pick], pick % 2)})
}

fn afk_data(pick: usize) -> Value {
    json!({"status": if pick == 0 { "afk" } else { "not-afk" }})
}

fn web_data(pick: usize) -> Value {
    let urls = [
        "https://github.com/a",
        "https://docs.rs/x",
        "https://github.com/b",
    ];
    json!({"url": urls[pick], "title": format!("tab {pick}"), "audible": pick == 2})
}

fn event(start: i64, len: i64, data: &Value) -> Event {
    Event::new(
        aw_models::timestamp::from_ns(start),
        Duration::nanoseconds(len),
        data.as_object().cloned().unwrap_or_default(),
    )
}

/// The generated events of one bucket, in order from `ORIGIN`.
fn lay_out(gens: &[Gen], data: fn(usize) -> Value) -> Vec<Event> {
    let mut t = ORIGIN + 20_000 * MS;
    let mut events = Vec::new();
    for g in gens {
        t = match g.gap_ms {
            i64::MAX => (t.div_euclid(MINUTE) + 1) * MINUTE,
            gap => t + gap * MS,
        };
        let len = g.len_ms * MS;
        events.push(event(t, len, &data(g.pick)));
        if let Some((twin_len, twin_pick)) = g.twin {
            events.push(event(t, twin_len * MS, &data(twin_pick)));
        }
        t += len;
    }
    events
}

fn bucket(id: &str, kind: &str) -> Bucket {
    serde_json::from_value(json!({"id": id, "type": kind, "client": "test", "hostname": "h"}))
        .unwrap()
}

/// Every stored event of `id`.
fn stored(store: &TempStore, id: &str) -> Vec<Event> {
    let rows = store.ds.get_events(id, None, None, None).wait().unwrap();
    rows.0.iter().map(|r| r.to_event().unwrap()).collect()
}

fn source(buckets: &[(&str, &str, Vec<Event>)]) -> MemoryDataSource {
    let mut ds = MemoryDataSource::new();
    for (id, kind, events) in buckets {
        ds.add_bucket(id, kind, "h", events.clone());
    }
    ds
}

/// The dashboard's desktop program with its lists and totals, with or without the AFK
/// filter (without it, more of the window events count).
fn program(filter_afk: bool) -> String {
    let params = DesktopQueryParams {
        bid_window: WINDOW.into(),
        bid_afk: AFK.into(),
        bid_browsers: vec![WEB.into()],
        classes: default_classes(),
        filter_afk,
        include_audible: true,
        ..Default::default()
    };
    let mut q = try_canonical_events(&params).unwrap();
    q.push(
        "RETURN = {\"apps\": merge_events_by_keys(events, [\"app\"]), \
         \"titles\": merge_events_by_keys(events, [\"app\", \"title\"]), \
         \"cats\": merge_events_by_keys(events, [\"$category\"]), \"total\": sum_durations(events), \
         \"domains\": merge_events_by_keys(browser_events, [\"$domain\"]), \
         \"browser\": sum_durations(browser_events)};"
            .into(),
    );
    q.join("\n")
}

/// A result's events as (start, duration, data), for comparing without ids.
fn spans(result: &Value) -> Vec<(Value, Value, Value)> {
    result
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["timestamp"].clone(),
                e["duration"].clone(),
                e["data"].clone(),
            )
        })
        .collect()
}

/// The program's lists as durations by data, and its totals.
fn durations(result: &Value) -> Vec<(String, Vec<(String, String)>)> {
    ["apps", "titles", "cats", "domains", "total", "browser"]
        .iter()
        .map(|list| {
            let mut lines: Vec<(String, String)> = match &result[*list] {
                Value::Array(events) => events
                    .iter()
                    .map(|e| (e["data"].to_string(), e["duration"].to_string()))
                    .collect(),
                total => vec![(String::new(), total.to_string())],
            };
            lines.sort();
            (list.to_string(), lines)
        })
        .collect()
}

fn at(ns: i64) -> DateTime<chrono::Utc> {
    aw_models::timestamp::from_ns(ns)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn compacted_events_flood_and_sum_as_the_original_ones(
        window in gens(),
        afk in gens(),
        web in gens(),
        periods in prop::collection::vec((0i64..40, 1i64..20), 1..6),
    ) {
        let kinds = [(WINDOW, "currentwindow"), (AFK, "afkstatus"), (WEB, "web.tab.current")];
        let laid = [lay_out(&window, window_data), lay_out(&afk, afk_data), lay_out(&web, web_data)];
        let store = TempStore::new();
        for ((id, kind), events) in kinds.iter().zip(&laid) {
            store.ds.create_bucket(&bucket(id, kind)).wait().unwrap();
            store.ds.insert_events(id, events).wait().unwrap();
        }
        let names: Vec<String> = kinds.iter().map(|(id, _)| id.to_string()).collect();
        let read = |store: &TempStore| -> Vec<(&str, &str, Vec<Event>)> {
            kinds.iter().map(|&(id, kind)| (id, kind, stored(store, id))).collect()
        };
        let before = read(&store);
        let preview = store.ds.compact(&names, true, None).wait().unwrap();
        let done = store.ds.compact(&names, false, Some(preview.removed)).wait().unwrap();
        prop_assert_eq!(&preview, &done);
        let after = read(&store);
        let count = |b: &[(&str, &str, Vec<Event>)]| b.iter().map(|x| x.2.len() as u64).sum::<u64>();
        prop_assert_eq!(count(&before), done.events_before);
        prop_assert_eq!(count(&after), done.events_after);
        prop_assert_eq!(done.events_after + done.removed, done.events_before);
        // Nothing is left to compact.
        prop_assert_eq!(store.ds.compact(&names, true, None).wait().unwrap().removed, 0);

        let (old, new) = (source(&before), source(&after));
        let all = [TimeInterval::new(at(ORIGIN - MINUTE), at(ORIGIN + 400 * MINUTE))];
        for (id, _) in kinds {
            let flood = format!("RETURN = flood(query_bucket(\"{id}\"));");
            let (a, b) = (query(&flood, &all, &old).unwrap(), query(&flood, &all, &new).unwrap());
            prop_assert_eq!(spans(&a[0]), spans(&b[0]), "flood of {}", id);
        }
        let periods: Vec<TimeInterval> = periods
            .into_iter()
            .map(|(from, len)| {
                TimeInterval::new(at(ORIGIN + from * MINUTE), at(ORIGIN + (from + len) * MINUTE))
            })
            .collect();
        for program in [program(true), program(false)] {
            let (a, b) = (query(&program, &periods, &old).unwrap(), query(&program, &periods, &new).unwrap());
            for (i, (a, b)) in a.iter().zip(&b).enumerate() {
                prop_assert_eq!(durations(a), durations(b), "period {}", i);
            }
        }
    }
}
