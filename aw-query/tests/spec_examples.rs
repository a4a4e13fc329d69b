//! Results observed from the reference server for documented example queries, one test each.
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
use serde_json::json;

fn ok(code: &str) -> String {
    run0(code).unwrap_or_else(|e| panic!("{code}: {e}"))
}

fn err(code: &str) -> String {
    run0(code).expect_err(code)
}

#[test]
fn number_literal_is_float() {
    assert_eq!(ok("return 1;"), "[1.0]");
}

#[test]
fn flat_precedence() {
    assert_eq!(ok("return 1+2*3;"), "[9.0]");
}

#[test]
fn no_unary_minus() {
    assert_eq!(ok("return 0-1;"), "[-1.0]");
    let e = err("return -1;");
    assert!(
        e.starts_with("ParsingError(\"(Some((Minus, Span { lo: 7, hi: 8, line: 1 }))"),
        "{e}"
    );
}

#[test]
fn missing_semicolon() {
    let e = err("x = 1");
    assert!(e.starts_with("ParsingError(\"(None, "), "{e}");
}

#[test]
fn empty_query() {
    assert_eq!(err(""), "EmptyQuery");
    assert_eq!(err("x = 1;"), "EmptyQuery");
}

#[test]
fn print_returns_none() {
    assert_eq!(ok("return print(1);"), "[[]]");
}

#[test]
fn modulo_and_division_by_zero() {
    assert_eq!(ok("return 1%0;"), "[null]");
    assert_eq!(
        err("return 1/0;"),
        r#"MathError("Tried to divide by zero!")"#
    );
}

#[test]
fn none_is_not_a_literal() {
    assert_eq!(err("return None;"), r#"VariableNotDefined("None")"#);
}

#[test]
fn calling_a_non_function() {
    assert_eq!(err("a = 1; return a(1);"), r#"InvalidType("a")"#);
}

#[test]
fn non_bool_condition() {
    assert_eq!(
        err("if 1 { return 1; }"),
        r#"InvalidType("Cannot compare values of different types Number(1) and Bool(true)")"#
    );
}

#[test]
fn dict_keys_sorted_numbers_floats() {
    assert_eq!(
        ok(r#"return {"b": 1, "a": [true, "x", {"z": 1, "y": 2}]};"#),
        r#"[{"a":[true,"x",{"y":2.0,"z":1.0}],"b":1.0}]"#
    );
}

#[test]
fn timeinterval_is_utc_plus_00_00() {
    let ds = MemoryDataSource::new();
    assert_eq!(
        run_periods(
            &ds,
            "return TIMEINTERVAL;",
            &["2024-05-01T00:00:00+02:00/2024-05-02T00:00:00.5+02:00"]
        )
        .unwrap(),
        r#"["2024-04-30T22:00:00+00:00/2024-05-01T22:00:00.500+00:00"]"#
    );
}

#[test]
fn string_escape_rule() {
    // Query text `return "a\\"b";` → the 4-char string a\"b.
    assert_eq!(ok(r#"return "a\\"b";"#), r#"["a\\\"b"]"#);
    assert_eq!(ok(r#"return "\d+";"#), r#"["\\d+"]"#);
}

#[test]
fn unknown_bucket() {
    assert_eq!(
        err(r#"return query_bucket("nob");"#),
        r#"BucketQueryError("Failed to query bucket: NoSuchBucket(\"nob\")")"#
    );
}

#[test]
fn arity_error() {
    assert_eq!(
        err(r#"return query_bucket("b", 1);"#),
        r#"InvalidFunctionParameters("Expected 1 parameters in function, got 2")"#
    );
}

#[test]
fn type_errors() {
    assert_eq!(
        err("return limit_events(1, 2);"),
        r#"InvalidFunctionParameters("Expected function parameter of type List, got Number(1)")"#
    );
    assert_eq!(
        err("return concat([1], []);"),
        r#"InvalidFunctionParameters("Expected function parameter of type List of Events, list contains Number(1)")"#
    );
}

#[test]
fn contains_list() {
    assert_eq!(ok(r#"return contains([1, "a"], "a");"#), "[true]");
    assert_eq!(ok(r#"return contains([1, "a"], true);"#), "[false]");
}

#[test]
fn garbage_after_unrecognized_character_is_ignored() {
    assert_eq!(ok("return 1; ' garbage"), "[1.0]");
    assert!(err("return 'a';").starts_with("ParsingError("));
}

#[test]
fn two_periods_one_empty() {
    let ds = abcd();
    let out = run_periods(
        &ds,
        r#"return query_bucket("b");"#,
        &[
            "2024-01-01T00:00:19Z/2024-01-01T00:00:22Z",
            "2023-01-01T00:00:00Z/2023-01-02T00:00:00Z",
        ],
    )
    .unwrap();
    assert_eq!(
        out,
        r#"[[{"data":{"app":"a","title":"t2","url":"https://www.www.Example.com:8080/p/a%20b?x=1&y=2#frag"},"duration":1.0015,"id":4,"timestamp":"2024-01-01T00:00:20Z"}],[]]"#
    );
}

#[test]
fn empty_period_list() {
    let ds = MemoryDataSource::new();
    assert_eq!(
        run_periods(&ds, "this is not even parsed", &[]).unwrap(),
        "[]"
    );
}

// ---- The A/B/C/D bucket ----

#[test]
fn abcd_query_bucket_clips_newest_first() {
    let ds = abcd();
    let out = run_periods(
        &ds,
        r#"return query_bucket("b");"#,
        &["2024-01-01T00:00:00.5Z/2024-01-01T00:00:07Z"],
    )
    .unwrap();
    assert_eq!(
        out,
        concat!(
            r#"[[{"data":{"app":"b","n":2,"title":"GitHub - x"},"duration":1.0,"id":3,"timestamp":"2024-01-01T00:00:06Z"},"#,
            r#"{"data":{"app":"a","n":1,"title":"t1"},"duration":1.0,"id":2,"timestamp":"2024-01-01T00:00:03Z"},"#,
            r#"{"data":{"app":"a","n":1,"title":"t1"},"duration":0.5,"id":1,"timestamp":"2024-01-01T00:00:00.500Z"}]]"#
        )
    );
}

#[test]
fn abcd_flood() {
    let v = value(&abcd(), r#"return flood(query_bucket("b"));"#);
    let spans: Vec<(String, f64, serde_json::Value)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["timestamp"].as_str().unwrap().to_string(),
                e["duration"].as_f64().unwrap(),
                e["id"].clone(),
            )
        })
        .collect();
    assert_eq!(
        spans,
        vec![
            ("2024-01-01T00:00:00Z".to_string(), 5.0, json!(1)),
            ("2024-01-01T00:00:05Z".to_string(), 3.0, json!(3)),
            ("2024-01-01T00:00:20Z".to_string(), 1.0015, json!(4)),
        ]
    );
}

#[test]
fn abcd_merge_by_app() {
    let v = value(
        &abcd(),
        r#"e = query_bucket("b"); return sort_by_duration(merge_events_by_keys(e, ["app"]));"#,
    );
    assert_eq!(
        v,
        json!([
            {"data": {"app": "a", "title": "t2", "url": "https://www.www.Example.com:8080/p/a%20b?x=1&y=2#frag"},
             "duration": 3.0015, "id": null, "timestamp": "2024-01-01T00:00:20Z"},
            {"data": {"app": "b", "n": 2, "title": "GitHub - x"}, "duration": 2.0, "id": null,
             "timestamp": "2024-01-01T00:00:06Z"}
        ])
    );
}

#[test]
fn abcd_merge_drops_events_lacking_a_key() {
    let v = value(
        &abcd(),
        r#"e = query_bucket("b"); return sort_by_duration(merge_events_by_keys(e, ["app", "n"]));"#,
    );
    let got: Vec<(String, f64)> = v
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
    // Equal durations keep first-appearance order (C comes before B, newest first).
    assert_eq!(got, vec![("b".to_string(), 2.0), ("a".to_string(), 2.0)]);
}

#[test]
fn abcd_sum_durations_truncates_to_ms() {
    assert_eq!(
        run(&abcd(), r#"return sum_durations(query_bucket("b"));"#).unwrap(),
        "[5.001]"
    );
}

#[test]
fn abcd_limit_events() {
    assert_eq!(
        run(&abcd(), r#"return limit_events(query_bucket("b"), 0-1);"#).unwrap(),
        "[[]]"
    );
    let v = value(&abcd(), r#"return limit_events(query_bucket("b"), 1.9);"#);
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["id"], json!(4));
}

#[test]
fn abcd_filter_keyvals_compares_numbers_by_value() {
    // COMPATIBILITY.md, server #10 overrides the reference's float-vs-integer mismatch.
    let v = value(
        &abcd(),
        r#"return filter_keyvals(query_bucket("b"), "n", [1]);"#,
    );
    let ids: Vec<i64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![2, 1]);
    // Stored integers are emitted unchanged.
    assert_eq!(v[0]["data"]["n"].to_string(), "1");
}

#[test]
fn abcd_split_url() {
    let v = value(
        &abcd(),
        r#"return filter_keyvals(split_url_events(query_bucket("b")), "app", ["a"]);"#,
    );
    let d = &v[0]["data"];
    assert_eq!(d["$domain"], "example.com");
    assert_eq!(d["$path"], "/p/a%20b");
    assert_eq!(d["$params"], "x=1&y=2");
    assert_eq!(d["$protocol"], "https");
    // Events without url are unchanged.
    assert!(v[1]["data"].get("$domain").is_none());
}
