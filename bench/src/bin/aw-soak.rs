//! `aw-soak`: a mixed load on the real binary for a while, then an exactly-once check of
//! every acknowledged insert, before and after a restart (see `aw_bench::soak`).
//!
//! ```sh
//! cargo build --release -p aw-server && cargo run --release -p aw-bench --bin aw-soak -- [--seconds 180] [--days 90] [--compare BIN]
//! ```
//!
//! Prints per request type the throughput, p50/p99 latency and errors; the server's RSS at
//! the start, peak and end and its CPU time; and the exactly-once check. Exits non-zero when
//! any request failed or any acknowledged insert is missing or doubled.
//!
//! `--compare BIN` runs the same soak on our build and on `BIN` (the reference
//! aw-server-rust) in alternating blocks A, B, B, A, each on a fresh server with its own copy
//! of the history, and prints the means and ratios of throughput, p99 and server CPU per
//! answered request (exports and the import run at a fixed rate and are not compared).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use aw_bench::soak::{run, SoakOptions, SoakReport};

fn main() -> ExitCode {
    let mut options = SoakOptions::default();
    let mut compare: Option<PathBuf> = None;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let text = args.get(i + 1).cloned();
        let value = text.as_deref().and_then(|v| v.parse::<u64>().ok());
        match (args[i].as_str(), value, text) {
            ("--seconds", Some(s), _) => options.duration = Duration::from_secs(s),
            ("--days", Some(d), _) => options.history_days = d as i64,
            ("--export-every", Some(s), _) => options.export_every = Duration::from_secs(s),
            ("--compare", _, Some(bin)) => compare = Some(bin.into()),
            (flag, _, _) => {
                eprintln!(
                    "usage: aw-soak [--seconds N] [--days N] [--export-every S] [--compare BIN] (at {flag})"
                );
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
    let Some(other) = compare else {
        let report = run(&options);
        println!("{}", report.to_markdown());
        return verdict(&[&report]);
    };
    // A, B, B, A: a drift over the run weighs on both alike.
    let mut reports: [Vec<SoakReport>; 2] = [Vec::new(), Vec::new()];
    for who in [0, 1, 1, 0] {
        let name = if who == 0 { "ours" } else { "other" };
        let options = SoakOptions {
            binary: (who == 1).then(|| other.clone()),
            ..options.clone()
        };
        let report = run(&options);
        println!("== {name} ({})\n{}", label(&options), report.to_markdown());
        reports[who].push(report);
    }
    println!("{}", ratios(&reports, &other));
    let all: Vec<&SoakReport> = reports.iter().flatten().collect();
    verdict(&all)
}

fn label(options: &SoakOptions) -> String {
    options
        .binary
        .as_ref()
        .map_or("our build".to_string(), |b| b.display().to_string())
}

/// The means of both servers' blocks and their ratios, as a Markdown table.
fn ratios(reports: &[Vec<SoakReport>; 2], other: &std::path::Path) -> String {
    let mean = |who: usize, f: &dyn Fn(&SoakReport) -> f64| {
        let r = &reports[who];
        r.iter().map(f).sum::<f64>() / r.len().max(1) as f64
    };
    let mut out = format!(
        "| value | ours | other ({}) | ours / other |\n|---|---|---|---|\n",
        other.display()
    );
    let mut row = |name: String, f: &dyn Fn(&SoakReport) -> f64| {
        let (a, b) = (mean(0, f), mean(1, f));
        out.push_str(&format!("| {name} | {a:.2} | {b:.2} | {:.2} |\n", a / b));
    };
    for kind in ["heartbeat", "insert", "week query"] {
        let pick = |r: &SoakReport, f: fn(&aw_bench::soak::KindReport) -> f64| {
            r.kinds.iter().find(|k| k.name == kind).map_or(0.0, f)
        };
        row(format!("{kind}: per s"), &|r| pick(r, |k| k.per_second));
        row(format!("{kind}: p99 ms"), &|r| pick(r, |k| k.p99_ms));
    }
    row("server CPU per answered request, µs".into(), &|r| {
        r.cpu_per_request_us
    });
    row("server CPU, s".into(), &|r| r.server_cpu_s);
    row("RSS end, MB".into(), &|r| r.rss_end_mb);
    out
}

/// Success when every report is clean.
fn verdict(reports: &[&SoakReport]) -> ExitCode {
    if reports.iter().all(|r| r.clean()) {
        ExitCode::SUCCESS
    } else {
        println!("aw-soak: FAILED (errors, lost or duplicated inserts above)");
        ExitCode::FAILURE
    }
}
