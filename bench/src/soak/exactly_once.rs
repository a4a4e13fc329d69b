//! The exactly-once check: which markers of the acknowledged inserts the server stored, and
//! how many of them are missing or stored more than once.

use std::collections::HashMap;

use aw_tests::Client;

/// Counts each marker stored in the insert buckets.
pub(super) fn stored_markers(client: &mut Client, buckets: &[String]) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    for b in buckets {
        let r = client.get(&format!("/api/0/buckets/{b}/events"));
        assert_eq!(r.status, 200, "{}", r.body);
        for e in r.json().as_array().into_iter().flatten() {
            if let Some(m) = e["data"]["marker"].as_str() {
                *seen.entry(m.to_string()).or_insert(0) += 1;
            }
        }
    }
    seen
}

/// (lost, duplicated) among the acknowledged markers.
pub(super) fn check(acknowledged: &[String], stored: &HashMap<String, usize>) -> (usize, usize) {
    let lost = acknowledged
        .iter()
        .filter(|m| !stored.contains_key(*m))
        .count();
    let duplicated = acknowledged
        .iter()
        .filter(|m| stored.get(*m).is_some_and(|&n| n > 1))
        .count();
    (lost, duplicated)
}
