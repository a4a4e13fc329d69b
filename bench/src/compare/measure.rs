//! The measuring tools of the comparison: a server's CPU time and wake-ups from `/proc`,
//! percentiles of latency samples, and a closed-loop load of many clients. Kept apart from
//! the rows so the bench binary can use them on their own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aw_tests::Client;

/// One measured value: its name, the value, and whether higher is better.
pub(super) type Value = (&'static str, f64, bool);

/// The server's CPU time so far in ns and its threads' context switches (see the module docs
/// of [`crate::compare`]).
pub fn cpu_and_wakeups(pid: u32) -> (u64, u64) {
    let mut cpu = 0;
    let mut switches = 0;
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    for task in tasks.flatten() {
        let dir = task.path();
        if let Ok(s) = std::fs::read_to_string(dir.join("schedstat")) {
            cpu += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
        if let Ok(status) = std::fs::read_to_string(dir.join("status")) {
            for line in status.lines() {
                if let Some(v) = line
                    .strip_prefix("voluntary_ctxt_switches:")
                    .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
                {
                    switches += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    (cpu, switches)
}

/// Server CPU and wake-ups over a stretch of load.
pub(super) struct Meter {
    pid: u32,
    start: (u64, u64),
    at: Instant,
}

impl Meter {
    pub(super) fn start(pid: u32) -> Meter {
        Meter {
            pid,
            start: cpu_and_wakeups(pid),
            at: Instant::now(),
        }
    }

    /// (CPU µs per request, wake-ups per second) for `requests` answered since the start.
    pub(super) fn per_request(&self, requests: f64) -> (f64, f64) {
        let (cpu, switches) = cpu_and_wakeups(self.pid);
        let secs = self.at.elapsed().as_secs_f64();
        (
            (cpu.saturating_sub(self.start.0)) as f64 / 1e3 / requests.max(1.0),
            (switches.saturating_sub(self.start.1)) as f64 / secs.max(1e-9),
        )
    }
}

/// The `p` quantile (0..=1) of sorted samples (NaN for none).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `clients` threads each sending requests made by `send(client, thread, i)` (`i` counts
/// the thread's requests) for `secs`; returns (requests answered, their latencies in ms,
/// sorted).
pub fn load(
    port: u16,
    clients: usize,
    secs: f64,
    send: impl Fn(&mut Client, usize, i64) + Sync,
) -> (f64, Vec<f64>) {
    let stop = AtomicBool::new(false);
    let mut all: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|k| {
                let (stop, send) = (&stop, &send);
                s.spawn(move || {
                    let mut c = Client::new(port);
                    let mut lat = Vec::new();
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        send(&mut c, k, i);
                        lat.push(t.elapsed().as_secs_f64() * 1e3);
                        i += 1;
                    }
                    lat
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    all.sort_by(f64::total_cmp);
    (all.len() as f64, all)
}
