//! The requests the comparison's rows send (the kinds of writes and their heartbeat bodies)
//! and the check that an answer succeeded.

use aw_tests::year::ts;
use aw_tests::Client;

/// Asserts a 2xx answer.
pub(super) fn ok(r: aw_tests::Response, what: &str) {
    assert!(
        (200..300).contains(&r.status),
        "{what}: {} {}",
        r.status,
        r.body
    );
}

/// A heartbeat body at `at` (ns); `data` is the event's data as JSON text.
pub(super) fn heartbeat(at: i64, data: &str) -> String {
    format!(r#"{{"timestamp":"{}","duration":0,"data":{data}}}"#, ts(at))
}

/// The kinds of writes rows send.
#[derive(Clone, Copy)]
pub(super) enum Write {
    /// Heartbeats that merge into the last event (a watcher whose window did not change).
    Merging,
    /// Heartbeats with new data each time (a new event per request).
    Distinct,
    /// Single-event inserts.
    Insert,
}

impl Write {
    /// Sends write number `i` into `bucket` at time `at`.
    pub(super) fn send(self, c: &mut Client, bucket: &str, at: i64, i: i64) {
        let r = match self {
            Write::Merging => c.post_json(
                &format!("/api/0/buckets/{bucket}/heartbeat?pulsetime=2"),
                &heartbeat(at, r#"{"app":"same"}"#),
            ),
            Write::Distinct => c.post_json(
                &format!("/api/0/buckets/{bucket}/heartbeat?pulsetime=0.5"),
                &heartbeat(at, &format!(r#"{{"i":{i}}}"#)),
            ),
            Write::Insert => c.post_json(
                &format!("/api/0/buckets/{bucket}/events"),
                &format!(
                    r#"[{{"timestamp":"{}","duration":1,"data":{{"i":{i}}}}}]"#,
                    ts(at)
                ),
            ),
        };
        ok(r, bucket);
    }
}
