//! Benchmark: sync the generated year (aw-bench's dataset) from one device to another
//! through a folder, with the `aw-sync` binary (push, pull, and a pass with nothing new)
//! and with the sync built into a server. Prints wall time, CPU time and peak RSS of each.
//! Then the passes after a change of A's history, beside a pass after none: one day
//! deleted, and 100 events edited across the year (what each pass read by days: the days
//! it compared and replaced, and the events it read for them).
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

/// Wall time, CPU time (user + system) and peak RSS of one finished process, and what its
/// pass did by days (its "By days" log line).
struct Usage {
    wall: Duration,
    cpu: Duration,
    peak_rss_mb: f64,
    by_days: String,
}

/// Runs `aw-sync` for a device to the end and measures it (wait4 gives the child's own
/// resource usage, and reaps it: clippy cannot see that).
#[allow(clippy::zombie_processes)]
fn run_aw_sync(home: &Path, port: u16, folder: &Path, args: &[&str]) -> Usage {
    let bin = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("aw-sync")))
        .unwrap_or_else(|| PathBuf::from("target/release/aw-sync"));
    let log = home.join("aw-sync.log");
    let started = Instant::now();
    let child = Command::new(&bin)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("LOG_LEVEL", "info")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::OpenOptions::new().append(true).open(&log).unwrap())
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
    let by_days = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once("By days: "))
        .map(|(_, rest)| rest.to_string())
        .next_back()
        .unwrap_or_default();
    Usage {
        wall: started.elapsed(),
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        peak_rss_mb: peak,
        by_days,
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
        "| {what} | {:.2} s | {:.2} s | {:.0} MB | {} |",
        u.wall.as_secs_f64(),
        u.cpu.as_secs_f64(),
        u.peak_rss_mb,
        u.by_days
    );
}

/// A's window bucket.
fn window_bucket(server: &TestServer) -> String {
    let buckets = server.client().get("/api/0/buckets/").json();
    buckets
        .as_object()
        .and_then(|m| m.keys().find(|k| k.contains("window")).cloned())
        .expect("a window bucket")
}

/// A pass on A (push) and one on B (pull), measured, under `what`.
fn both_passes(what: &str, devices: [(&Path, u16); 2], folder: &Path) {
    let a = run_aw_sync(
        devices[0].0,
        devices[0].1,
        folder,
        &["sync", "--mode", "push"],
    );
    row(&format!("{what}: aw-sync push on A"), &a);
    let b = run_aw_sync(
        devices[1].0,
        devices[1].1,
        folder,
        &["sync", "--mode", "pull"],
    );
    row(&format!("{what}: aw-sync pull on B"), &b);
}

/// Deletes one whole day of A's window bucket (`day` days after the history's first).
fn delete_a_day(a: &TestServer, window: &str, first: chrono::DateTime<chrono::Utc>, day: i64) {
    let start = (first + chrono::Duration::days(day))
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    let end = start + chrono::Duration::days(1);
    let fmt =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let r = a.client().delete(&format!(
        "/api/0/buckets/{window}/events?start={}&end={}",
        fmt(start),
        fmt(end)
    ));
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Edits `n` events of A's window bucket spread across its history (a new title each).
fn edit_events(a: &TestServer, window: &str, n: usize) {
    let mut http = a.client();
    let all = http
        .get(&format!("/api/0/buckets/{window}/events?limit=-1"))
        .json();
    let all = all.as_array().cloned().unwrap_or_default();
    let step = (all.len() / n).max(1);
    for (i, event) in all.iter().step_by(step).take(n).enumerate() {
        let id = event["id"].as_i64().unwrap();
        let mut changed = event.clone();
        changed["data"]["title"] = serde_json::json!(format!("edited {i}"));
        let r = http.request(
            "PUT",
            &format!("/api/0/buckets/{window}/events/{id}"),
            &[("Content-Type", "application/json")],
            Some(changed.to_string().as_bytes()),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
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
    println!("| step | wall | CPU | peak RSS | by days |\n|---|---|---|---|---|");

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

    // Changes of A's history, beside a pass after none.
    let devices = [(home_a.path(), a.port), (home_b.path(), b.port)];
    let window = window_bucket(&a);
    both_passes("nothing changed", devices, folder.path());
    let first = a.client().get(&format!("/api/0/buckets/{window}")).json()["metadata"]["start"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&chrono::Utc))
        .expect("the bucket's first event");
    delete_a_day(&a, &window, first, days / 2);
    both_passes("one day deleted", devices, folder.path());
    edit_events(&a, &window, 100);
    both_passes("100 events edited across the year", devices, folder.path());
    both_passes("nothing changed, again", devices, folder.path());
    assert_eq!(
        total_events(&b),
        total_events(&a),
        "B follows A's deletions"
    );

    // The sync built into a server: C pulls the folder by itself.
    let config = format!(
        "[sync]\nfolder = \"{}\"\ninterval = 1\nmode = \"pull\"\n",
        folder.path().display()
    );
    let started = Instant::now();
    let c = TestServer::start_with_config(&config);
    let pid = c.pid().unwrap_or(0);
    let cpu_before = year::process_usage(pid);
    // B's own file is in the folder too, with B's (empty) first-hand buckets: C pulls A's
    // (as its history is now).
    let events = total_events(&a);
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
        by_days: String::new(),
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
