//! Each load loop's tally of its requests (sent once, never retried) and the summary of a
//! request type's tallies as a [`KindReport`].

use std::time::Instant;

use super::report::KindReport;
use aw_tests::Client;

/// Latencies and outcomes of one loop.
#[derive(Default)]
pub(super) struct Tally {
    latencies_us: Vec<u64>,
    errors: usize,
    first_error: Option<String>,
}

impl Tally {
    /// Sends one request once and records its outcome; returns the response when it was 2xx.
    pub(super) fn send(
        &mut self,
        client: &mut Client,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Option<aw_tests::Response> {
        let headers: &[(&str, &str)] = if body.is_some() {
            &[("Content-Type", "application/json")]
        } else {
            &[]
        };
        let started = Instant::now();
        let response = client.send_once(method, path, headers, body.map(str::as_bytes));
        let took = started.elapsed();
        match response {
            Some(r) if (200..300).contains(&r.status) => {
                self.latencies_us.push(took.as_micros() as u64);
                Some(r)
            }
            other => {
                self.errors += 1;
                if self.first_error.is_none() {
                    self.first_error = Some(match other {
                        Some(r) => format!("{method} {path}: {} {}", r.status, r.body),
                        None => format!("{method} {path}: no response"),
                    });
                }
                None
            }
        }
    }
}

/// Merges the tallies of the loops of request type `name` over `seconds` of load.
pub(super) fn summarize(name: &str, tallies: Vec<Tally>, seconds: f64) -> KindReport {
    let mut latencies: Vec<u64> = Vec::new();
    let mut errors = 0;
    let mut first_error = None;
    for t in tallies {
        latencies.extend(t.latencies_us);
        errors += t.errors;
        first_error = first_error.or(t.first_error);
    }
    latencies.sort_unstable();
    let pct = |p: f64| -> f64 {
        if latencies.is_empty() {
            return 0.0;
        }
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies[i.min(latencies.len() - 1)] as f64 / 1000.0
    };
    KindReport {
        name: name.to_string(),
        ok: latencies.len(),
        errors,
        per_second: latencies.len() as f64 / seconds.max(1e-9),
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        first_error,
    }
}
