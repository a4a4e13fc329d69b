//! Benchmark: sync the generated year (aw-bench's dataset) from one device to another
//! through a folder, with the `aw-sync` binary (push, pull, and a pass with nothing new)
//! and with the sync built into a server. Prints wall time, CPU time and peak RSS of each.
//!
//! `cargo build --release -p aw-server -p aw-sync && cargo run --release -p aw-sync --example bench_sync [days]`
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use aw_tests::{year, TestServer};

/// Wall time, CPU time (user + system) and peak RSS of one finished process.
struct Usage {
    wall: Duration,
    cpu: Duration,
    peak_rss_mb: f64,
}

/// Runs `aw-sync` for a device to the end and measures it (wait4 gives the child's own
/// resource usage, and reaps it: clippy cannot see that).
#[allow(clippy::zombie_processes)]
fn run_aw_sync(home: &Path, port: u16, folder: &Path, args: &[&str]) -> Usage {
    let bin = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("aw-sync")))
        .unwrap_or_else(|| PathBuf::from("target/release/aw-sync"));
    let started = Instant::now();
    let child = Command::new(&bin)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("LOG_LEVEL", "warn")
        .args(["--port", &port.to_string(), "--sync-dir"])
        .arg(folder)
        .args(args)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {} (build it first): {e}", bin.display()));
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // The child's own peak RSS is its VmHWM, read until it exits (wait4's ru_maxrss would
    // include this process's memory, which the child was spawned from).
    let mut peak = 0.0f64;
    loop {
        peak = peak.max(peak_rss_mb(child.id()));
        // SAFETY: polls our own child; both pointers are to live locals.
        let pid = unsafe {
            libc::wait4(
                child.id() as libc::pid_t,
                &mut status,
                libc::WNOHANG,
                &mut usage,
            )
        };
        if pid == child.id() as libc::pid_t {
            break;
        }
        assert_eq!(pid, 0, "wait4 failed");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "aw-sync {args:?} failed"
    );
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Usage {
        wall: started.elapsed(),
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        peak_rss_mb: peak,
    }
}

fn total_events(server: &TestServer) -> u64 {
    let mut http = server.client();
    let buckets = http.get("/api/0/buckets/").json();
    let mut n = 0;
    for id in buckets
        .as_object()
        .map(|m| m.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default()
    {
        let path = format!("/api/0/buckets/{id}/events/count");
        n += http.get(&path).json().as_u64().unwrap_or(0);
    }
    n
}

/// Peak RSS of a running process (VmHWM), in MB.
fn peak_rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn row(what: &str, u: &Usage) {
    println!(
        "| {what} | {:.2} s | {:.2} s | {:.0} MB |",
        u.wall.as_secs_f64(),
        u.cpu.as_secs_f64(),
        u.peak_rss_mb
    );
}

fn main() {
    let days = year::arg(1, 365i64);
    let data = year::generate(days);
    let a = year::server_with(&data);
    let events = total_events(&a);
    let buckets = a
        .client()
        .get("/api/0/buckets/")
        .json()
        .as_object()
        .map_or(0, |m| m.len());
    let b = TestServer::start();
    let folder = tempfile::tempdir().unwrap();
    let (home_a, home_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    println!("{days} days, {events} events in {buckets} buckets\n");
    println!("| step | wall | CPU | peak RSS |\n|---|---|---|---|");

    let push = run_aw_sync(
        home_a.path(),
        a.port,
        folder.path(),
        &["sync", "--mode", "push"],
    );
    row("aw-sync push: server A → folder", &push);
    let pull = run_aw_sync(
        home_b.path(),
        b.port,
        folder.path(),
        &["sync", "--mode", "pull"],
    );
    row("aw-sync pull: folder → server B", &pull);
    assert_eq!(total_events(&b), events, "B got every event");
    let again_a = run_aw_sync(home_a.path(), a.port, folder.path(), &["sync"]);
    row("aw-sync on A again (nothing new)", &again_a);
    let again_b = run_aw_sync(home_b.path(), b.port, folder.path(), &["sync"]);
    row("aw-sync on B again (nothing new)", &again_b);

    // The sync built into a server: C pulls the folder by itself.
    let config = format!(
        "[sync]\nfolder = \"{}\"\ninterval = 1\nmode = \"pull\"\n",
        folder.path().display()
    );
    let started = Instant::now();
    let c = TestServer::start_with_config(&config);
    let pid = c.pid().unwrap_or(0);
    let cpu_before = year::process_usage(pid);
    // B's own file is in the folder too, with B's (empty) first-hand buckets: C pulls A's.
    while total_events(&c) < events {
        assert!(
            started.elapsed() < Duration::from_secs(1800),
            "the built-in sync did not finish"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let cpu_after = year::process_usage(pid);
    let builtin = Usage {
        wall: started.elapsed(),
        cpu: Duration::from_millis(
            (cpu_after[0] + cpu_after[1] - cpu_before[0] - cpu_before[1]) as u64,
        ),
        peak_rss_mb: peak_rss_mb(pid),
    };
    row("built into server C: folder → C (from start)", &builtin);
    let file = folder.path().join(
        std::fs::read_dir(folder.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .find(|n| {
                std::fs::metadata(folder.path().join(n).join("test.db"))
                    .is_ok_and(|m| m.len() > 1 << 20)
            })
            .unwrap_or_default(),
    );
    let size = std::fs::metadata(file.join("test.db")).map_or(0, |m| m.len());
    println!("\nA's file in the folder: {:.0} MB", size as f64 / 1e6);
}
