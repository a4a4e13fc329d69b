//! Benchmarks and the soak of the real `aw-server` binary, beside the reference build
//! (`scripts/build-reference.sh`): the `aw-bench` table and its `--compare` rows, the
//! `aw-soak` run, and the probes in `examples/` that BENCHMARKS.md cites. They start servers
//! through the test harness (`aw-tests`); the numbers are printed, never asserted, except
//! the soak's exactly-once checks, which `tests/soak.rs` runs briefly in the test command.

pub mod bench_rows;
pub mod compare;
pub mod soak;
