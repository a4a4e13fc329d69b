//! No input may crash the process (COMPATIBILITY.md, server #2 and #11): deep nesting, deep values, random text.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod common;

use aw_query::{EVAL_STACK, MAX_NESTING};
use common::*;

/// Runs `f` on a thread with the stack the server gives query threads ([`EVAL_STACK`]), so
/// these tests prove that its threads suffice for the deepest input allowed.
fn on_eval_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(EVAL_STACK)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn hundred_thousand_nested_brackets_is_a_parsing_error() {
    for open in ["[", "(", "concat(", "{\"a\": "] {
        let code = format!("return {};", open.repeat(100_000));
        let e = on_eval_stack(move || run0(&code).unwrap_err());
        assert!(
            e.starts_with("ParsingError(") && e.contains("nested too deeply"),
            "{e}"
        );
    }
    let code = "if true {".repeat(100_000);
    let e = on_eval_stack(move || run0(&code).unwrap_err());
    assert!(e.contains("nested too deeply"), "{e}");
}

#[test]
fn deepest_allowed_nesting_evaluates() {
    let d = MAX_NESTING - 1;
    for (open, close) in [("[", "]"), ("(", ")"), ("{\"a\": ", "}"), ("concat(", ")")] {
        let inner = if open == "concat(" { "[]" } else { "1" };
        let code = format!("return {}{inner}{};", open.repeat(d), close.repeat(d));
        let r = on_eval_stack(move || run0(&code));
        assert!(r.is_ok(), "{open}: {r:?}");
    }
    let code = format!("{}return 1;{}", "if true {".repeat(d), "}".repeat(d));
    assert_eq!(on_eval_stack(move || run0(&code)).unwrap(), "[1.0]");
}

/// The reference evaluates 5,000 redundant parentheses; so do we (we used to refuse 256).
#[test]
fn five_thousand_redundant_parentheses_evaluate() {
    let code = format!("return {}1{};", "(".repeat(5_000), ")".repeat(5_000));
    assert_eq!(on_eval_stack(move || run0(&code)).unwrap(), "[1.0]");
    let code = format!(
        "return {}[1]{} + [2];",
        "(".repeat(5_000),
        ")".repeat(5_000)
    );
    assert_eq!(on_eval_stack(move || run0(&code)).unwrap(), "[[1.0,2.0]]");
}

#[test]
fn values_nested_by_repeated_wrapping_are_refused() {
    let code = format!(
        "a = 1;{} return a;",
        " a = [a];".repeat(aw_query::MAX_VALUE_DEPTH + 1)
    );
    let e = on_eval_stack(move || run0(&code).unwrap_err());
    assert!(
        e.starts_with("InvalidType(\"Value is nested too deeply"),
        "{e}"
    );
    let code = format!(
        "a = 1;{} return a;",
        " a = {\"k\": [a]};".repeat(aw_query::MAX_VALUE_DEPTH / 2 + 1)
    );
    let e = on_eval_stack(move || run0(&code).unwrap_err());
    assert!(
        e.starts_with("InvalidType(\"Value is nested too deeply"),
        "{e}"
    );
    // Up to the limit is fine, including comparing and printing such values.
    let code = format!(
        "a = 1;{} b = a == a; print(a); return a;",
        " a = [a];".repeat(aw_query::MAX_VALUE_DEPTH)
    );
    assert!(on_eval_stack(move || run0(&code)).is_ok());
}

#[test]
fn long_flat_programs() {
    let code = format!("return 0{};", " + 1".repeat(100_000));
    assert_eq!(on_eval_stack(move || run0(&code)).unwrap(), "[100000.0]");
    let code = format!("x = 0;{} return x;", " x = x + 1;".repeat(50_000));
    assert_eq!(on_eval_stack(move || run0(&code)).unwrap(), "[50000.0]");
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }
}

/// Random programs over the real built-ins and the A/B/C/D bucket: any outcome but a panic.
#[test]
fn random_programs_never_panic() {
    let ds = abcd();
    let exprs = [
        "e",
        "x",
        "1",
        "0",
        "\"app\"",
        "[\"app\"]",
        "[]",
        "query_bucket(\"b\")",
        "TIMEINTERVAL",
        "[1, \"a\"]",
        "{\"type\": \"regex\", \"regex\": \"a\"}",
        "print",
        "flood",
        "1%0",
        "true",
        "[[\"X\"], {\"type\": \"regex\", \"regex\": \"(\"}]",
    ];
    let funcs = [
        "flood",
        "merge_events_by_keys",
        "chunk_events_by_key",
        "sort_by_duration",
        "sort_by_timestamp",
        "sum_durations",
        "limit_events",
        "filter_keyvals",
        "exclude_keyvals",
        "filter_keyvals_regex",
        "filter_period_intersect",
        "period_union",
        "union_no_overlap",
        "split_url_events",
        "concat",
        "categorize",
        "tag",
        "contains",
        "print",
        "find_bucket",
        "query_bucket",
        "query_bucket_names",
        "nope",
    ];
    let ops = [" + ", " - ", " * ", " / ", " % ", " == "];
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..3_000 {
        let mut code = String::from("e = query_bucket(\"b\"); x = [];");
        for _ in 0..(rng.next() % 6) {
            let f = rng.pick(&funcs);
            let nargs = rng.next() % 4;
            let args: Vec<&str> = (0..nargs).map(|_| rng.pick(&exprs)).collect();
            let mut expr = format!("{f}({})", args.join(", "));
            if rng.next() % 4 == 1 {
                expr = format!("{expr}{}{}", rng.pick(&ops), rng.pick(&exprs));
            }
            let target = rng.pick(&["e", "x", "RETURN", "TIMEINTERVAL"]);
            if rng.next() % 5 == 1 {
                code.push_str(&format!("if {expr} == true {{ {target} = e; }}"));
            } else {
                code.push_str(&format!("{target} = {expr};"));
            }
        }
        code.push_str(rng.pick(&["return e;", "return x;", "", "return [e, x];"]));
        let _ = run(&ds, &code);
    }
}

#[test]
fn a_query_past_its_deadline_stops_with_a_timeout() {
    use aw_query::{query_until, MemoryDataSource, QueryError};
    let period: aw_models::TimeInterval =
        "2020-01-01T00:00:00Z/2020-01-02T00:00:00Z".parse().unwrap();
    let ds = MemoryDataSource::default();
    let past = Some(std::time::Instant::now());
    let err =
        query_until("x = 1; return x;", std::slice::from_ref(&period), &ds, past).unwrap_err();
    assert!(matches!(err, QueryError::Timeout(_)), "{err:?}");
    assert!(err.to_string().starts_with("Timeout(\""));
    let later = Some(std::time::Instant::now() + std::time::Duration::from_secs(60));
    assert_eq!(
        query_until("return 1;", &[period], &ds, later).unwrap(),
        vec![serde_json::json!(1.0)]
    );
}

/// Values that double themselves (strings, lists, event lists, nested lists) or a huge
/// `concat` stop with a clear `MemoryLimit` error before they use the memory: every copy is
/// charged against the query's budget before it is made.
#[test]
fn values_that_double_themselves_hit_the_memory_limit() {
    let doubling = |init: &str, step: &str| {
        format!(
            "a = {init};{} return 1;",
            format!(" a = {step};").repeat(70)
        )
    };
    let mut ds = abcd();
    let many: Vec<_> = (0..20_000)
        .map(|i| {
            event(
                Some(10 + i),
                "2024-01-01T00:00:00Z",
                1.0,
                serde_json::json!({"i": i % 7}),
            )
        })
        .collect();
    ds.add_bucket("big", "t", "host", many);
    let fat: Vec<_> = (0..2_000)
        .map(|i| {
            event(
                Some(10 + i),
                "2024-01-01T00:00:00Z",
                1.0,
                serde_json::json!({"i": i, "text": "x".repeat(2_000)}),
            )
        })
        .collect();
    ds.add_bucket("fat", "t", "host", fat);
    for code in [
        doubling("\"x\"", "a + a"),
        doubling("[1]", "a + a"),
        doubling("query_bucket(\"big\")", "a + a"),
        doubling("query_bucket(\"big\")", "concat(a, a)"),
        doubling("[1, 2, 3]", "[a, a]"),
        doubling("{\"k\": \"v\"}", "{\"x\": a, \"y\": a}"),
        format!(
            "a = query_bucket(\"big\"); return concat({});",
            vec!["a"; 2_000].join(", ")
        ),
        // Many bucket reads alive in one statement: each call's result is charged.
        format!(
            "return concat({});",
            vec!["query_bucket(\"big\")"; 2_000].join(", ")
        ),
        // Small values, a huge answer: the JSON form copies each event's data per
        // occurrence, and is charged before it is built.
        format!(
            "a = query_bucket(\"fat\"); return [{}];",
            vec!["a"; 400].join(", ")
        ),
    ] {
        let ds = ds.clone();
        let started = std::time::Instant::now();
        let e = on_eval_stack(move || run(&ds, &code).unwrap_err());
        assert!(e.starts_with("MemoryLimit("), "{e}");
        assert!(
            // Only a hang reaches this: the limit is on memory, not time.
            started.elapsed() < std::time::Duration::from_secs(120),
            "took {:?}",
            started.elapsed()
        );
    }
    // Legitimate copies are fine.
    let ds2 = ds.clone();
    let ok = on_eval_stack(move || {
        run(
            &ds2,
            "a = query_bucket(\"big\"); b = a; c = concat(a, b); return [sum_durations(c), a == b];",
        )
    });
    assert_eq!(ok.unwrap(), "[[40000.0,true]]");
}
