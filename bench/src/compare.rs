//! Same-run comparison of two servers: ours and another binary (the reference aw-server-rust,
//! or an older build of ours), measured row by row on the same machine at the same time.
//!
//! Absolute numbers drift on a shared machine; a ratio measured in one run does not. Every
//! row runs in alternating blocks A, B, B, A (so a trend over the run, such as a warming page
//! cache or a busy neighbour, weighs on both alike) and reports each server's mean of its two
//! blocks and the ratio ours / other. Each server has its own copy of the data (imported
//! through `POST /api/0/import`, which both implement), and a cold query never repeats a
//! period on the same server: each server counts its own requests.
//!
//! CPU is the server process's on-CPU time: the sum of `/proc/PID/task/*/schedstat` (ns,
//! exact, every live thread; the servers' threads live as long as they do). Wake-ups are the
//! threads' context switches, voluntary and involuntary.
//!
//! The measuring tools are in `measure`, the servers in `contender`, the requests rows send
//! in `requests`, what each row does in `workloads` and the list of rows in `rows`.

mod contender;
mod measure;
mod requests;
mod rows;
mod workloads;

use std::path::{Path, PathBuf};
use std::time::Instant;

use aw_tests::year;
use aw_tests::TestServer;
use contender::Contender;
pub use measure::{cpu_and_wakeups, load, percentile};
use rows::rows;
use workloads::warm_up;

/// What to compare.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// The other server's binary.
    pub other: PathBuf,
    /// Days of generated history each server imports.
    pub days: i64,
    /// Shorter rows (a few seconds each) for a quick look.
    pub quick: bool,
    /// Rows whose name contains none of these are skipped (all rows when empty).
    pub only: Vec<String>,
}

/// One row's result: per value, ours and the other's means.
pub struct RowResult {
    /// The row's name.
    pub row: String,
    /// (value name, ours, other, higher is better).
    pub values: Vec<(&'static str, f64, f64, bool)>,
}

/// Starts both servers, imports the history into each, runs every row in A, B, B, A blocks
/// and prints each result as it comes; returns them all.
pub fn run(options: &CompareOptions) -> Vec<RowResult> {
    let data = year::generate(options.days);
    let doc = data.export_json();
    let params = year::desktop_params(&data);
    let mut contenders: Vec<Contender> = [("ours", None), ("other", Some(options.other.clone()))]
        .into_iter()
        .map(|(label, binary): (&'static str, Option<PathBuf>)| {
            let server =
                TestServer::start_binary(binary.as_deref().unwrap_or(&aw_tests::server_binary()));
            let t = Instant::now();
            let r = server.client().post_json("/api/0/import", &doc);
            assert_eq!(r.status, 200, "{label}: import failed: {}", r.body);
            println!(
                "{label}: imported {} events in {:.1} s",
                data.event_count(),
                t.elapsed().as_secs_f64()
            );
            Contender {
                label,
                binary,
                server,
                seq: 0,
                params: params.clone(),
                end: data.end,
            }
        })
        .collect();
    drop(doc);
    // Untimed: the first block of a run measured slow whichever server it ran on (the same
    // build against itself: 0.65-0.69x in the first row's first block, 1.03x otherwise), so
    // each server gets a short burst of every kind of request first.
    for c in &mut contenders {
        warm_up(c);
    }
    let mut results = Vec::new();
    for mut row in rows(options) {
        if !options.only.is_empty() && !options.only.iter().any(|o| row.name.contains(o)) {
            continue;
        }
        let mut sums: Vec<Vec<f64>> = vec![Vec::new(), Vec::new()];
        let mut names = Vec::new();
        for who in [0, 1, 1, 0] {
            let values = (row.measure)(&mut contenders[who]);
            names = values.iter().map(|v| (v.0, v.2)).collect();
            let sum = &mut sums[who];
            sum.resize(values.len(), 0.0);
            for (s, v) in sum.iter_mut().zip(&values) {
                *s += v.1 / 2.0;
            }
        }
        let result = RowResult {
            row: row.name.clone(),
            values: names
                .iter()
                .enumerate()
                .map(|(i, &(name, higher))| (name, sums[0][i], sums[1][i], higher))
                .collect(),
        };
        for (name, ours, other, _) in &result.values {
            println!(
                "{:<70} {name:<24} ours {ours:>10.2}  other {other:>10.2}  ratio {:>6.2}",
                result.row,
                ours / other
            );
        }
        results.push(result);
    }
    results
}

/// The results as a Markdown table.
pub fn to_markdown(results: &[RowResult], other: &Path) -> String {
    let mut out = format!(
        "| row | value | ours | other ({}) | ours / other |\n|---|---|---|---|---|\n",
        other.display()
    );
    for r in results {
        for (name, ours, other, _) in &r.values {
            out.push_str(&format!(
                "| {} | {name} | {ours:.2} | {other:.2} | {:.2} |\n",
                r.row,
                ours / other
            ));
        }
    }
    out
}
