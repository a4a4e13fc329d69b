//! The rows of `aw-bench`, the single-server benchmark: [`BenchReport`] records each row as
//! it is measured (printed at once, kept for the closing table and the `--json` file), and
//! the submodules measure the rows by kind, so the binary only sets up and sequences them.

pub mod queries;
pub mod reads;
pub mod requests;
pub mod writes;

use serde_json::{json, Map, Value};
use std::time::Instant;

use crate::compare::percentile;

/// The benchmark's results so far: the table's rows, the numbers for `--json`, and whether
/// this is a `--quick` run.
pub struct BenchReport {
    /// (row name, formatted value), in the order measured.
    pub rows: Vec<(String, String)>,
    /// The numbers for `--json`, by row name.
    pub json: Map<String, Value>,
    /// Fewer repetitions per latency row (a fifth, at least 3).
    pub quick: bool,
}

impl BenchReport {
    fn reps(&self, n: usize) -> usize {
        if self.quick {
            n.div_ceil(5).max(3)
        } else {
            n
        }
    }

    /// Times `f` `n` times (after one warm-up) and records median/p95 in ms.
    pub fn latency(&mut self, name: &str, n: usize, mut f: impl FnMut()) {
        f();
        let mut samples: Vec<f64> = (0..self.reps(n))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        let (p50, p95) = (percentile(&samples, 0.5), percentile(&samples, 0.95));
        self.rows
            .push((name.into(), format!("{p50:.3} ms (p95 {p95:.3})")));
        self.json.insert(
            name.into(),
            json!({"p50_ms": p50, "p95_ms": p95, "n": samples.len()}),
        );
        println!("{name:<55} {p50:>10.3} ms  p95 {p95:>10.3}");
    }

    /// Records one value with its unit (and prints it).
    pub fn value(&mut self, name: &str, value: f64, unit: &str) {
        self.rows.push((name.into(), format!("{value:.1} {unit}")));
        self.json
            .insert(name.into(), json!({"value": value, "unit": unit}));
        println!("{name:<55} {value:>10.1} {unit}");
    }
}
