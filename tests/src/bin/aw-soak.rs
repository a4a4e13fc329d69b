//! `aw-soak`: a mixed load on the real binary for a while, then an exactly-once check of
//! every acknowledged insert, before and after a restart (see `aw_tests::soak`).
//!
//! ```sh
//! cargo build --release -p aw-server && cargo run --release -p aw-tests --bin aw-soak -- [--seconds 180] [--days 90]
//! ```
//!
//! Prints per request type the throughput, p50/p99 latency and errors; the server's RSS at
//! the start, peak and end and its CPU time; and the exactly-once check. Exits non-zero when
//! any request failed or any acknowledged insert is missing or doubled.

use std::process::ExitCode;
use std::time::Duration;

use aw_tests::soak::{run, SoakOptions};

fn main() -> ExitCode {
    let mut options = SoakOptions::default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).and_then(|v| v.parse::<u64>().ok());
        match (args[i].as_str(), value) {
            ("--seconds", Some(s)) => options.duration = Duration::from_secs(s),
            ("--days", Some(d)) => options.history_days = d as i64,
            ("--export-every", Some(s)) => options.export_every = Duration::from_secs(s),
            (flag, _) => {
                eprintln!("usage: aw-soak [--seconds N] [--days N] [--export-every S] (at {flag})");
                return ExitCode::from(2);
            }
        }
        i += 2;
    }
    println!(
        "aw-soak: {} s of mixed load on {} days of history…",
        options.duration.as_secs(),
        options.history_days
    );
    let report = run(&options);
    println!("{}", report.to_markdown());
    if report.clean() {
        ExitCode::SUCCESS
    } else {
        println!("aw-soak: FAILED (errors, lost or duplicated inserts above)");
        ExitCode::FAILURE
    }
}
