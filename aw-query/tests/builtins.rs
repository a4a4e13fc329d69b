//! Edge cases of every built-in function, through `query`.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_query::MemoryDataSource;
use common::*;
use serde_json::{json, Value};

/// A data source with one bucket `e` holding the given (start seconds after 2024-01-01,
/// duration seconds, data) events, ids 1.. in the given order.
fn bucket(events: &[(f64, f64, Value)]) -> MemoryDataSource {
    let mut ds = MemoryDataSource::new();
    let evs = events
        .iter()
        .enumerate()
        .map(|(i, (s, d, data))| {
            let mut e = event(Some(i as i64 + 1), "2024-01-01T00:00:00Z", *d, data.clone());
            e.timestamp += chrono::Duration::nanoseconds((s * 1e9).round() as i64);
            e
        })
        .collect();
    ds.add_bucket("e", "t", "h", evs);
    ds
}

/// (seconds after 2024-01-01, duration) of each event of a result list.
fn spans(v: &Value) -> Vec<(f64, f64)> {
    let base = ts("2024-01-01T00:00:00Z");
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let t = ts(e["timestamp"].as_str().unwrap());
            (
                (t - base).num_nanoseconds().unwrap() as f64 / 1e9,
                e["duration"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn field(v: &Value, key: &str) -> Vec<Value> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"][key].clone())
        .collect()
}

// ---- query_bucket / query_bucket_names / find_bucket ----

#[test]
fn query_bucket_argument_checks() {
    let ds = abcd();
    assert_eq!(
        run(&ds, "return query_bucket();").unwrap_err(),
        r#"InvalidFunctionParameters("Expected 1 parameters in function, got 0")"#
    );
    assert_eq!(
        run(&ds, "return query_bucket(1);").unwrap_err(),
        r#"InvalidFunctionParameters("Expected function parameter of type String, got Number(1)")"#
    );
}

#[test]
fn query_bucket_names_lists_ids() {
    let mut ds = abcd();
    ds.add_bucket("a", "t", "h", vec![]);
    assert_eq!(
        run(&ds, "return query_bucket_names();").unwrap(),
        r#"[["a","b"]]"#
    );
    assert!(run(&ds, "return query_bucket_names(1);")
        .unwrap_err()
        .contains("Expected 0 parameters"));
}

#[test]
fn find_bucket_rules() {
    let mut ds = MemoryDataSource::new();
    ds.add_bucket("aw-watcher-window", "t", "h1", vec![]);
    ds.add_bucket("aw-watcher-window_h2", "t", "h2", vec![]);
    ds.add_bucket("aw-watcher-window_h1", "t", "h1", vec![]);
    ds.add_bucket("aw-watcher-afk_h1", "t", "h1", vec![]);
    // Exact match wins over prefix matches.
    assert_eq!(
        run(&ds, r#"return find_bucket("aw-watcher-window");"#).unwrap(),
        r#"["aw-watcher-window"]"#
    );
    assert_eq!(
        run(&ds, r#"return find_bucket("aw-watcher-afk");"#).unwrap(),
        r#"["aw-watcher-afk_h1"]"#
    );
    assert_eq!(
        run(&ds, r#"return find_bucket("aw-watcher-window_", "h2");"#).unwrap(),
        r#"["aw-watcher-window_h2"]"#
    );
    // Exact match of another host does not count.
    assert_eq!(
        run(&ds, r#"return find_bucket("aw-watcher-window", "h2");"#).unwrap(),
        r#"["aw-watcher-window_h2"]"#
    );
    assert_eq!(
        run(&ds, r#"return find_bucket("nope");"#).unwrap_err(),
        r#"BucketQueryError("Failed to find bucket matching filter 'nope'")"#
    );
    assert_eq!(
        run(&ds, r#"return find_bucket("aw-watcher-afk", "h2");"#).unwrap_err(),
        r#"BucketQueryError("Failed to find bucket matching filter 'aw-watcher-afk' and hostname 'h2'")"#
    );
    // Prefix, not substring.
    assert!(run(&ds, r#"return find_bucket("watcher");"#).is_err());
    assert!(run(&ds, "return find_bucket();")
        .unwrap_err()
        .contains("Expected 1 parameters"));
    assert!(run(&ds, r#"return find_bucket("a", "b", "c");"#)
        .unwrap_err()
        .contains("Expected 2 parameters"));
}

// ---- flood ----

#[test]
fn flood_examples() {
    let a = json!({"k": "a"});
    let b = json!({"k": "b"});
    let q = r#"return flood(query_bucket("e"));"#;
    assert_eq!(
        spans(&value(
            &bucket(&[(0.0, 1.0, a.clone()), (3.0, 1.0, a.clone())]),
            q
        )),
        vec![(0.0, 4.0)]
    );
    assert_eq!(
        spans(&value(
            &bucket(&[(0.0, 1.0, a.clone()), (3.0, 1.0, b.clone())]),
            q
        )),
        vec![(0.0, 2.0), (2.0, 2.0)]
    );
    assert_eq!(
        spans(&value(
            &bucket(&[(0.0, 10.0, a.clone()), (5.0, 10.0, a.clone())]),
            q
        )),
        vec![(0.0, 15.0)]
    );
    assert_eq!(
        spans(&value(
            &bucket(&[(0.0, 10.0, a.clone()), (1.0, 5.0, b.clone())]),
            q
        )),
        vec![(0.0, 10.0), (1.0, 5.0)]
    );
    // Exactly 5 s apart: not filled. Zero-duration events survive.
    assert_eq!(
        spans(&value(
            &bucket(&[(0.0, 1.0, a.clone()), (6.0, 0.0, b.clone())]),
            q
        )),
        vec![(0.0, 1.0), (6.0, 0.0)]
    );
    assert!(run0("return flood([], 5);")
        .unwrap_err()
        .contains("Expected 1 parameters"));
}

// ---- merge_events_by_keys ----

#[test]
fn merge_events_by_keys_edge_cases() {
    let ds = bucket(&[
        (0.0, 1.0, json!({"n": 1, "c": ["Work", "Prog"]})),
        (1.0, 2.0, json!({"n": 1.0, "c": ["Work", "Prog"]})),
        (3.0, 4.0, json!({"n": 1, "c": ["Work"]})),
    ]);
    assert_eq!(
        run(
            &ds,
            r#"return merge_events_by_keys(query_bucket("e"), []);"#
        )
        .unwrap(),
        "[[]]"
    );
    // Grouped by JSON text: 1 and 1.0 are different groups. A group's timestamp is that of
    // its first event in input order (query_bucket is newest first).
    let v = value(
        &ds,
        r#"return sort_by_duration(merge_events_by_keys(query_bucket("e"), ["n"]));"#,
    );
    assert_eq!(spans(&v), vec![(3.0, 5.0), (1.0, 2.0)]);
    // Lists as keys.
    let v = value(
        &ds,
        r#"return sort_by_duration(merge_events_by_keys(query_bucket("e"), ["c"]));"#,
    );
    assert_eq!(spans(&v), vec![(3.0, 4.0), (1.0, 3.0)]);
    assert!(v.as_array().unwrap().iter().all(|e| e["id"].is_null()));
    assert_eq!(
        run(
            &ds,
            r#"return merge_events_by_keys(query_bucket("e"), [1]);"#
        )
        .unwrap_err(),
        r#"InvalidFunctionParameters("Expected function parameter of type List of Strings, list contains Number(1)")"#
    );
}

// ---- chunk_events_by_key ----

#[test]
fn chunk_events_by_key_runs() {
    let ds = bucket(&[
        (0.0, 1.0, json!({"app": "a"})),
        (1.0, 1.0, json!({"other": 1})),
        (2.0, 1.0, json!({"app": "a"})),
        (3.0, 1.0, json!({"app": "b"})),
        (4.0, 1.0, json!({"app": "a"})),
    ]);
    let v = value(
        &ds,
        r#"return chunk_events_by_key(sort_by_timestamp(query_bucket("e")), "app");"#,
    );
    assert_eq!(spans(&v), vec![(0.0, 2.0), (3.0, 1.0), (4.0, 1.0)]);
    assert_eq!(v[0]["id"], json!(1));
}

// ---- sorting, sums, limits ----

#[test]
fn sorts_are_stable() {
    let ds = bucket(&[
        (0.0, 2.0, json!({"i": 0})),
        (2.0, 1.0, json!({"i": 1})),
        (3.0, 2.0, json!({"i": 2})),
    ]);
    let v = value(
        &ds,
        r#"return sort_by_duration(sort_by_timestamp(query_bucket("e")));"#,
    );
    assert_eq!(field(&v, "i"), vec![json!(0), json!(2), json!(1)]);
    let v = value(&ds, r#"return sort_by_timestamp(query_bucket("e"));"#);
    assert_eq!(field(&v, "i"), vec![json!(0), json!(1), json!(2)]);
}

#[test]
fn sum_durations_and_limit_events() {
    let ds = bucket(&[(0.0, 0.0019, json!({})), (1.0, 0.0019, json!({}))]);
    assert_eq!(
        run(&ds, r#"return sum_durations(query_bucket("e"));"#).unwrap(),
        "[0.003]"
    );
    assert_eq!(run0("return sum_durations([]);").unwrap(), "[0.0]");
    assert_eq!(
        run(&ds, r#"return limit_events(query_bucket("e"), 1%0);"#).unwrap(),
        "[[]]"
    );
    assert_eq!(
        spans(&value(
            &ds,
            r#"return limit_events(query_bucket("e"), 100);"#
        ))
        .len(),
        2
    );
    assert_eq!(
        run(&ds, r#"return limit_events(query_bucket("e"), "1");"#).unwrap_err(),
        r#"InvalidFunctionParameters("Expected function parameter of type Number, got String(\"1\")")"#
    );
}

// ---- filter_keyvals / exclude_keyvals / filter_keyvals_regex ----

#[test]
fn filter_keyvals_values() {
    let ds = bucket(&[
        (
            0.0,
            1.0,
            json!({"status": "not-afk", "n": 3, "audible": true, "c": ["Work", "Programming"]}),
        ),
        (
            1.0,
            1.0,
            json!({"status": "afk", "n": 3.5, "audible": false, "c": ["Work"]}),
        ),
        (2.0, 1.0, json!({"other": 1})),
    ]);
    let ids = |code: &str| -> Vec<i64> {
        value(&ds, code)
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(
        ids(r#"return filter_keyvals(query_bucket("e"), "status", ["not-afk"]);"#),
        vec![1]
    );
    assert_eq!(
        ids(r#"return filter_keyvals(query_bucket("e"), "audible", [true]);"#),
        vec![1]
    );
    assert_eq!(
        ids(r#"return filter_keyvals(query_bucket("e"), "n", [3]);"#),
        vec![1]
    );
    assert_eq!(
        ids(r#"return filter_keyvals(query_bucket("e"), "n", [3.5, 3]);"#),
        vec![2, 1]
    );
    assert_eq!(
        ids(r#"return filter_keyvals(query_bucket("e"), "c", [["Work", "Programming"]]);"#),
        vec![1]
    );
    assert_eq!(
        ids(r#"return filter_keyvals(query_bucket("e"), "status", []);"#),
        Vec::<i64>::new()
    );
    // Exclusion keeps events lacking the key.
    assert_eq!(
        ids(r#"return exclude_keyvals(query_bucket("e"), "status", ["afk"]);"#),
        vec![3, 1]
    );
    assert!(run(
        &ds,
        r#"return filter_keyvals(query_bucket("e"), "n", [{"a": 1}]);"#
    )
    .unwrap_err()
    .starts_with("InvalidFunctionParameters(\"Expected function parameter of type List of"));
    assert!(
        run(&ds, r#"return filter_keyvals(query_bucket("e"), "n", 3);"#)
            .unwrap_err()
            .contains("type List, got Number(3)")
    );
}

#[test]
fn filter_keyvals_regex_rules() {
    let ds = bucket(&[
        (0.0, 1.0, json!({"app": "Firefox"})),
        (1.0, 1.0, json!({"app": "firefox-esr"})),
        (2.0, 1.0, json!({"app": 5})),
        (3.0, 1.0, json!({})),
    ]);
    let ids = |code: &str| -> Vec<i64> {
        value(&ds, code)
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(
        ids(r#"return filter_keyvals_regex(query_bucket("e"), "app", "fox");"#),
        vec![2, 1]
    );
    assert_eq!(
        ids(r#"return filter_keyvals_regex(query_bucket("e"), "app", "^F");"#),
        vec![1]
    );
    assert_eq!(
        ids(r#"return filter_keyvals_regex(query_bucket("e"), "app", "(?i)^f");"#),
        vec![2, 1]
    );
    assert_eq!(
        ids(r#"return filter_keyvals_regex(query_bucket("e"), "app", "");"#),
        vec![2, 1]
    );
    // Look-around (fancy-regex).
    assert_eq!(
        ids(r#"return filter_keyvals_regex(query_bucket("e"), "app", "fox(?!-)");"#),
        vec![1]
    );
    assert!(run(
        &ds,
        r#"return filter_keyvals_regex(query_bucket("e"), "app", "(");"#
    )
    .unwrap_err()
    .starts_with("RegexCompileError(\"Failed to compile regex string '(': "));
}

// ---- period functions ----

#[test]
fn filter_period_intersect_example() {
    let ds = bucket(&[(1.0, 1.0, json!({"x": 1}))]);
    let v = value(
        &ds,
        r#"TIMEINTERVAL = "2024-01-01T00:00:00Z/2024-01-01T00:00:01.5Z"; f = query_bucket("e");
           TIMEINTERVAL = "2000-01-01T00:00:00Z/2030-01-01T00:00:00Z";
           f = [];
           return filter_period_intersect(query_bucket("e"), f);"#,
    );
    assert_eq!(v, json!([]));
    let mut ds = bucket(&[(1.0, 1.0, json!({"x": 1}))]);
    ds.add_bucket(
        "f",
        "t",
        "h",
        vec![event(Some(9), "2024-01-01T00:00:00Z", 1.5, json!({"y": 2}))],
    );
    let v = value(
        &ds,
        r#"return filter_period_intersect(query_bucket("e"), query_bucket("f"));"#,
    );
    assert_eq!(spans(&v), vec![(1.0, 0.5)]);
    assert_eq!(v[0]["data"], json!({"x": 1}));
    assert_eq!(v[0]["id"], json!(1));
}

#[test]
fn period_union_touching_and_data() {
    let mut ds = bucket(&[(0.0, 1.0, json!({"x": 1})), (5.0, 1.0, json!({"x": 2}))]);
    ds.add_bucket(
        "f",
        "t",
        "h",
        vec![
            event(Some(9), "2024-01-01T00:00:01Z", 1.0, json!({"y": 2})),
            event(Some(10), "2024-01-01T00:00:07Z", 1.0, json!({"y": 2})),
        ],
    );
    let v = value(
        &ds,
        r#"return period_union(query_bucket("e"), query_bucket("f"));"#,
    );
    assert_eq!(spans(&v), vec![(0.0, 2.0), (5.0, 1.0), (7.0, 1.0)]);
    assert_eq!(v[0]["data"], json!({}));
    assert_eq!(v[0]["id"], json!(1));
}

#[test]
fn union_no_overlap_precedence() {
    let mut ds = bucket(&[(2.0, 2.0, json!({"s": 1})), (6.0, 1.0, json!({"s": 1}))]);
    ds.add_bucket(
        "f",
        "t",
        "h",
        vec![event(
            Some(9),
            "2024-01-01T00:00:00Z",
            10.0,
            json!({"s": 2}),
        )],
    );
    let v = value(
        &ds,
        r#"return union_no_overlap(sort_by_timestamp(query_bucket("e")), query_bucket("f"));"#,
    );
    assert_eq!(
        spans(&v),
        vec![(0.0, 2.0), (2.0, 2.0), (4.0, 2.0), (6.0, 1.0), (7.0, 3.0)]
    );
    assert_eq!(
        field(&v, "s"),
        vec![json!(2), json!(1), json!(2), json!(1), json!(2)]
    );
    let ids: Vec<Value> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(
        ids,
        vec![json!(null), json!(1), json!(null), json!(2), json!(null)]
    );
}

// ---- split_url_events ----

#[test]
fn split_url_variants() {
    let ds = bucket(&[
        (
            0.0,
            1.0,
            json!({"url": "http://www.google.com/path?query=1"}),
        ),
        (1.0, 1.0, json!({"url": "file:///x"})),
        (2.0, 1.0, json!({"url": "about:blank"})),
        (3.0, 1.0, json!({"url": "no url at all"})),
        (4.0, 1.0, json!({"url": 42})),
    ]);
    let v = value(
        &ds,
        r#"return sort_by_timestamp(split_url_events(query_bucket("e")));"#,
    );
    assert_eq!(
        v[0]["data"],
        json!({"url": "http://www.google.com/path?query=1", "$protocol": "http", "$domain": "google.com", "$path": "/path", "$params": "query=1"})
    );
    assert_eq!(v[1]["data"]["$domain"], "file");
    assert_eq!(v[2]["data"]["$domain"], "about");
    assert_eq!(v[3]["data"].as_object().unwrap().len(), 1);
    assert_eq!(v[4]["data"].as_object().unwrap().len(), 1);
}

// ---- concat ----

#[test]
fn concat_any_number_of_lists() {
    let ds = abcd();
    assert_eq!(run(&ds, "return concat();").unwrap(), "[[]]");
    let v = value(
        &ds,
        r#"e = query_bucket("b"); return concat(e, [], limit_events(e, 1), e);"#,
    );
    assert_eq!(v.as_array().unwrap().len(), 9);
    assert!(run(&ds, r#"return concat(query_bucket("b"), 1);"#)
        .unwrap_err()
        .contains("type List, got Number(1)"));
}

// ---- categorize / tag ----

const RULES: &str = r#"[
    [["Work"], {"type": "regex", "regex": "GitHub"}],
    [["Work", "Programming"], {"type": "regex", "regex": "GitHub"}],
    [["Media"], {"type": "regex", "regex": "youtube", "ignore_case": true}],
    [["Empty"], {"type": "none"}],
    [[], {"type": "regex", "regex": "t1"}],
    [["Apps"], {"type": "regex", "regex": "^a$", "select_keys": ["app"]}]
]"#;

#[test]
fn categorize_rules() {
    let ds = bucket(&[
        (0.0, 1.0, json!({"app": "b", "title": "GitHub - x"})),
        (1.0, 1.0, json!({"app": "a", "title": "t1"})),
        (
            2.0,
            1.0,
            json!({"app": "x", "title": "YouTube", "$category": ["Old"]}),
        ),
        (3.0, 1.0, json!({"app": "x", "title": "a", "n": 1})),
    ]);
    let v = value(
        &ds,
        &format!(r#"return sort_by_timestamp(categorize(query_bucket("e"), {RULES}));"#),
    );
    assert_eq!(
        field(&v, "$category"),
        vec![
            json!(["Work", "Programming"]),
            json!(["Apps"]),
            json!(["Media"]),
            json!(["Uncategorized"])
        ]
    );
}

#[test]
fn categorize_rule_errors() {
    let ds = abcd();
    let e = |rule: &str| {
        run(
            &ds,
            &format!(r#"return categorize(query_bucket("b"), [[["X"], {rule}]]);"#),
        )
        .unwrap_err()
    };
    assert_eq!(
        e(r#"{"type": "glob"}"#),
        r#"InvalidFunctionParameters("Unknown rule type 'glob'")"#
    );
    assert!(e(r#"{"regex": "x"}"#).starts_with("InvalidFunctionParameters("));
    assert!(e(r#"{"type": 1}"#).starts_with("InvalidFunctionParameters("));
    assert!(e(r#"{"type": "regex"}"#).starts_with("InvalidFunctionParameters("));
    assert!(e(r#"{"type": "regex", "regex": 1}"#).starts_with("InvalidFunctionParameters("));
    assert!(
        e(r#"{"type": "regex", "regex": "x", "ignore_case": "yes"}"#)
            .starts_with("InvalidFunctionParameters(")
    );
    assert!(
        e(r#"{"type": "regex", "regex": "x", "select_keys": "app"}"#)
            .starts_with("InvalidFunctionParameters(")
    );
    assert!(e(r#"{"type": "regex", "regex": "x", "select_keys": [1]}"#)
        .starts_with("InvalidFunctionParameters("));
    assert!(e(r#"{"type": "regex", "regex": "x", "select_keys": []}"#)
        .starts_with("RegexCompileError("));
    assert!(e(r#"{"type": "regex", "regex": "[", "priority": 3}"#)
        .starts_with("RegexCompileError(\"Failed to compile regex string '[': "));
    assert!(e(r#""not a dict""#).starts_with("InvalidFunctionParameters("));
    assert!(
        run(&ds, r#"return categorize(query_bucket("b"), [["X"]]);"#)
            .unwrap_err()
            .starts_with("InvalidFunctionParameters(")
    );
    assert!(run(
        &ds,
        r#"return categorize(query_bucket("b"), [[[1], {"type": "none"}]]);"#
    )
    .unwrap_err()
    .starts_with("InvalidFunctionParameters("));
}

#[test]
fn tag_rules() {
    let ds = abcd();
    let v = value(
        &ds,
        r#"return tag(query_bucket("b"), [
            ["z", {"type": "regex", "regex": "a"}],
            ["git", {"type": "regex", "regex": "github", "ignore_case": true}],
            ["z", {"type": "regex", "regex": "t"}],
            ["never", {"type": "none"}]
        ]);"#,
    );
    assert_eq!(
        field(&v, "$tags"),
        vec![
            json!(["z"]),
            json!(["git", "z"]),
            json!(["z"]),
            json!(["z"])
        ]
    );
    let v = value(&ds, r#"return tag(query_bucket("b"), []);"#);
    assert_eq!(field(&v, "$tags")[0], json!([]));
}

// ---- contains / print ----

#[test]
fn contains_rules() {
    assert_eq!(
        run0(r#"return contains([[1], "a"], [1]);"#).unwrap(),
        "[true]"
    );
    assert_eq!(
        run0(r#"return contains({"a": 1}, "a");"#).unwrap(),
        "[true]"
    );
    assert_eq!(
        run0(r#"return contains({"a": 1}, "b");"#).unwrap(),
        "[false]"
    );
    assert!(run0(r#"return contains({"a": 1}, 1);"#)
        .unwrap_err()
        .starts_with("InvalidFunctionParameters("));
    assert!(run0(r#"return contains("abc", "a");"#)
        .unwrap_err()
        .starts_with("InvalidFunctionParameters("));
    assert!(run0("return contains([1]);")
        .unwrap_err()
        .contains("Expected 2 parameters"));
}

#[test]
fn print_any_arguments() {
    assert_eq!(
        run0("print(); print(1, [2], {\"a\": flood}); return print(\"x\");").unwrap(),
        "[[]]"
    );
}
