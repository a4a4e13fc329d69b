//! Queries are bounded, through the real binary: deep nesting within the reference's limits
//! evaluates, deeper is a query error, a value that doubles itself hits the memory limit,
//! and no `query_timeout` can overflow. The server stays up and answers after each.

use aw_tests::TestServer;
use serde_json::json;

fn query(c: &mut aw_tests::Client, code: &str) -> aw_tests::Response {
    let body = json!({
        "timeperiods": ["2024-01-01T00:00:00+00:00/2024-01-02T00:00:00+00:00"],
        "query": [code],
    });
    c.post_json("/api/0/query/", &body.to_string())
}

#[test]
fn nesting_memory_and_timeout_limits() {
    // A budget too large to add to the clock: no limit, and no overflow.
    let s = TestServer::start_with_config("query_timeout = 1.5e19\n");
    let mut c = s.client();

    // 5,000 redundant parentheses evaluate, as on the reference.
    let r = query(
        &mut c,
        &format!("return {}1{};", "(".repeat(5_000), ")".repeat(5_000)),
    );
    assert_eq!((r.status, r.body.as_str()), (200, "[1.0]"));
    // Lists 2,000 deep (where the reference overflowed its stack) evaluate too.
    let r = query(
        &mut c,
        &format!("return {}1{};", "[".repeat(2_000), "]".repeat(2_000)),
    );
    assert_eq!(r.status, 200, "{}", &r.body[..200.min(r.body.len())]);
    // Deeper than the limit: a query error in the usual shape.
    let r = query(
        &mut c,
        &format!("return {}1{};", "(".repeat(50_000), ")".repeat(50_000)),
    );
    assert_eq!(r.status, 500);
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(message.starts_with("ParsingError(") && message.contains("nested too deeply"));

    // A string that doubles itself 70 times stops at the memory limit.
    let code = format!("a = \"x\";{} return 1;", " a = a + a;".repeat(70));
    let r = query(&mut c, &code);
    assert_eq!(r.status, 500);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("MemoryLimit("),
        "{}",
        r.body
    );

    // The server is healthy and the query threads still work.
    assert_eq!(query(&mut c, "return 1 + 1;").body, "[2.0]");
    assert_eq!(c.get("/api/0/info").status, 200);
}
