//! Language semantics through the public `query` entry point.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use common::*;

fn ok(code: &str) -> String {
    run0(code).unwrap_or_else(|e| panic!("{code}: {e}"))
}

fn err(code: &str) -> String {
    run0(code).expect_err(code)
}

#[test]
fn return_continues_execution_and_last_wins() {
    assert_eq!(ok("return 1; return 2;"), "[2.0]");
    assert_eq!(ok("return 1; RETURN = 3;"), "[3.0]");
    assert_eq!(ok("RETURN = 1; x = RETURN + 1; return x;"), "[2.0]");
}

#[test]
fn return_assignment_returns_none() {
    assert_eq!(ok("return x = 5;"), "[[]]");
    assert_eq!(ok("return x = 5; return x;"), "[5.0]");
}

#[test]
fn if_elif_else() {
    let prog = |c: &str| {
        format!("x = {c}; if x == 1 {{ return \"one\"; }} elif x == 2 {{ return \"two\"; }} else {{ return \"other\"; }}")
    };
    assert_eq!(ok(&prog("1")), r#"["one"]"#);
    assert_eq!(ok(&prog("2")), r#"["two"]"#);
    assert_eq!(ok(&prog("3")), r#"["other"]"#);
    // Only the first true branch runs; blocks share the environment; `;` after `}` optional.
    assert_eq!(
        ok("y = 0; if true { y = 1; } elif true { y = 2; }; return y;"),
        "[1.0]"
    );
    assert_eq!(ok("if false { } return 1;"), "[1.0]");
    assert_eq!(ok("if true { if true { return 7; } }"), "[7.0]");
    // Later conditions are not evaluated once a branch ran.
    assert_eq!(ok("if true { return 1; } elif undefined_var { }"), "[1.0]");
    assert!(err("if print() { }")
        .starts_with("InvalidType(\"Cannot compare values of different types None"));
    assert!(err("if true { } else if true { }").starts_with("ParsingError("));
}

#[test]
fn bare_expression_statements() {
    assert_eq!(ok("1; \"x\"; print(1, 2); ;; return 1;"), "[1.0]");
    // Evaluated for effect: errors surface.
    assert_eq!(
        err("undefined_thing; return 1;"),
        r#"VariableNotDefined("undefined_thing")"#
    );
}

#[test]
fn operators() {
    assert_eq!(ok("return 7 - 2 - 1;"), "[4.0]");
    assert_eq!(ok("return 2 * (3 + 4);"), "[14.0]");
    assert_eq!(ok("return 7 % 4;"), "[3.0]");
    assert_eq!(ok("return 1 / 4;"), "[0.25]");
    assert_eq!(ok(r#"return "a" + "b";"#), r#"["ab"]"#);
    assert_eq!(ok("return [1] + [2, 3];"), "[[1.0,2.0,3.0]]");
    assert_eq!(
        err(r#"return 1 - "a";"#),
        r#"InvalidType("Cannot sub something that is not a number!")"#
    );
    assert!(err(r#"return 1 + "a";"#).starts_with("InvalidType("));
    assert!(err("return 1 == 1 + 1;").starts_with("InvalidType("));
    assert_eq!(
        err("return 0/0;"),
        r#"MathError("Tried to divide by zero!")"#
    );
}

#[test]
fn equality() {
    assert_eq!(ok("return 1 == 1;"), "[true]");
    assert_eq!(ok(r#"return "a" == "b";"#), "[false]");
    assert_eq!(
        ok(r#"return [1, "a", [true]] == [1, "a", [true]];"#),
        "[true]"
    );
    assert_eq!(ok(r#"return {"a": [1]} == {"a": [1]};"#), "[true]");
    assert_eq!(ok(r#"return [1] == ["a"];"#), "[false]");
    assert_eq!(ok("return print() == print();"), "[false]");
    assert_eq!(ok("return flood == flood;"), "[true]");
    assert_eq!(
        err(r#"return 1 == "1";"#),
        r#"InvalidType("Cannot compare values of different types Number(1) and String(\"1\")")"#
    );
    // Events compare without their id.
    let ds = abcd();
    assert_eq!(
        run(
            &ds,
            r#"e = query_bucket("b"); return e == sort_by_timestamp(sort_by_duration(e));"#
        )
        .unwrap(),
        "[false]"
    );
    assert_eq!(
        run(&ds, r#"e = query_bucket("b"); return e == e;"#).unwrap(),
        "[true]"
    );
    assert_eq!(
        run(&ds, r#"e = query_bucket("b"); return limit_events(merge_events_by_keys(e, ["title"]), 1) == limit_events(e, 1);"#).unwrap(),
        "[true]"
    );
}

#[test]
fn functions_are_values() {
    assert_eq!(ok("f = sum_durations; return f([]);"), "[0.0]");
    assert_eq!(ok("flood = 1; return flood;"), "[1.0]");
    assert_eq!(
        err("flood = 1; return flood([]);"),
        r#"InvalidType("flood")"#
    );
    assert_eq!(err("return nope(1);"), r#"VariableNotDefined("nope")"#);
    for py_only in [
        "query_bucket_eventcount",
        "simplify_window_titles",
        "merge_subwatcher_fields",
        "nop",
    ] {
        assert_eq!(
            err(&format!("return {py_only}([]);")),
            format!("VariableNotDefined(\"{py_only}\")")
        );
    }
}

#[test]
fn returning_a_function_is_a_query_error() {
    for code in [
        "return print;",
        "return [flood];",
        r#"return {"f": concat};"#,
    ] {
        assert!(
            err(code).starts_with("InvalidType(\"Cannot return the function"),
            "{code}"
        );
    }
}

#[test]
fn dicts() {
    assert_eq!(ok(r#"return {"a": 1, "a": 2};"#), r#"[{"a":2.0}]"#);
    assert_eq!(ok("return {};"), "[{}]");
    assert!(err("return {a: 1};").starts_with("ParsingError("));
    assert!(err(r#"return {1: 1};"#).starts_with("ParsingError("));
}

#[test]
fn lexical_details() {
    assert_eq!(ok("# comment\nreturn 1; # trailing"), "[1.0]");
    assert_eq!(ok("return\t1.;"), "[1.0]");
    assert_eq!(ok("return True == true;"), "[true]");
    assert_eq!(
        ok("iffy = 2; returned = 3; return iffy + returned;"),
        "[5.0]"
    );
    assert_eq!(ok("return \"multi\nline\";"), r#"["multi\nline"]"#);
    assert_eq!(ok("return split_url_events ([]);"), "[[]]");
    assert!(err("return e[0];").starts_with("ParsingError("));
    assert!(err("return 1 != 2;").starts_with("ParsingError("));
    assert!(err("return .5;").starts_with("ParsingError("));
}

#[test]
fn variables_are_copied_not_shared() {
    let ds = abcd();
    // Reading `e` for a transform does not change `e`.
    let out = run(&ds, r#"e = query_bucket("b"); s = sort_by_duration(e); x = categorize(e, [[["X"], {"type": "regex", "regex": ""}]]); return e;"#).unwrap();
    let direct = run(&ds, r#"return query_bucket("b");"#).unwrap();
    assert_eq!(out, direct);
    // Lists are shared between variables until a function changes one: whether a function
    // only reads its list (merging, filtering, summing) or changes it (in place when nobody
    // else holds it), the other holders see the list unchanged.
    let code = r#"
        e = query_bucket("b");
        f = e;
        m = merge_events_by_keys(e, ["app"]);
        k = filter_keyvals(e, "app", ["a"]);
        r = filter_keyvals_regex(e, "app", "a");
        x = exclude_keyvals(e, "app", ["a"]);
        n = sum_durations(e);
        l = limit_events(e, 1);
        s = sort_by_duration(f);
        c = categorize(f, [[["X"], {"type": "regex", "regex": ""}]]);
        u = split_url_events(f);
        p = e + f;
        return [e, f];
    "#;
    let direct = run(&ds, r#"e = query_bucket("b"); return [e, e];"#).unwrap();
    assert_eq!(run(&ds, code).unwrap(), direct);
    // And a shared list filtered gives what the unshared one gives.
    let shared = run(
        &ds,
        r#"e = query_bucket("b"); k = filter_keyvals(e, "app", ["a"]); return [k, e];"#,
    )
    .unwrap();
    let alone = run(&ds, r#"e = query_bucket("b"); k = filter_keyvals(e, "app", ["a"]); return [k, query_bucket("b")];"#).unwrap();
    assert_eq!(shared, alone);
    // And a list built from a variable is independent of later reassignment.
    assert_eq!(
        ok("a = [1]; b = [a, a]; a = 2; return b;"),
        "[[[1.0],[1.0]]]"
    );
}

#[test]
fn moved_variables_are_still_correct_across_branches() {
    let code = r#"
        x = [1, 2];
        if 1 == 2 { y = x; } else { y = x + [3]; }
        z = x;
        return [y, z];
    "#;
    assert_eq!(ok(code), "[[[1.0,2.0,3.0],[1.0,2.0]]]");
    assert_eq!(ok("x = 1; x = x + x; x = x * x; return x;"), "[4.0]");
}

#[test]
fn timeinterval_can_be_reassigned() {
    let ds = abcd();
    let out = run(
        &ds,
        r#"TIMEINTERVAL = "2024-01-01T00:00:19Z/2024-01-01T00:00:20.5Z"; return sum_durations(query_bucket("b"));"#,
    )
    .unwrap();
    assert_eq!(out, "[0.5]");
    assert!(run(&ds, r#"TIMEINTERVAL = "x"; return query_bucket("b");"#)
        .unwrap_err()
        .starts_with("TimeIntervalError(\"Failed to parse TIMEINTERVAL: "));
    assert!(run(&ds, r#"TIMEINTERVAL = 1; return query_bucket("b");"#)
        .unwrap_err()
        .starts_with("TimeIntervalError("));
}

#[test]
fn many_periods_in_order_and_first_error_wins() {
    let ds = abcd();
    let periods: Vec<String> = (0..30)
        .map(|s| format!("2024-01-01T00:00:{s:02}Z/2024-01-01T00:00:{:02}Z", s + 1))
        .collect();
    let p: Vec<&str> = periods.iter().map(|s| s.as_str()).collect();
    let out = run_periods(&ds, r#"return sum_durations(query_bucket("b"));"#, &p).unwrap();
    let v: Vec<f64> = serde_json::from_str(&out).unwrap();
    let mut expected = vec![0.0; 30];
    for s in [0, 3, 6, 7, 20] {
        expected[s] = 1.0;
    }
    expected[21] = 0.001; // D ends at 00:00:21.0015
    assert_eq!(v, expected);
    // An error in any period fails the call.
    let code = r#"if TIMEINTERVAL == "2024-01-01T00:00:05+00:00/2024-01-01T00:00:06+00:00" { return 1/0; } return 1;"#;
    assert_eq!(
        run_periods(&ds, code, &p).unwrap_err(),
        r#"MathError("Tried to divide by zero!")"#
    );
}
