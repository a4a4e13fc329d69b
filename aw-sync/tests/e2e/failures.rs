//! What must not stop a sync: bad peer files, a server that needs a key or is down, a
//! second aw-sync; and the daemon, which syncs on its own and stops cleanly on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aw_tests::TestServer;

use crate::common::{describe, eventually, window_events, Device};

const WINDOW_A: &str = "aw-watcher-window_laptop";

/// Counts the lines of `output` that contain `text` as they come, on a thread of its own
/// that reads to the end (so the writer never blocks on a full pipe).
fn lines_containing(
    output: impl std::io::Read + Send + 'static,
    text: &'static str,
) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if line.contains(text) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    count
}

#[test]
fn damaged_and_half_transferred_peer_files_are_skipped_and_the_rest_is_pulled() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::with_window_events(WINDOW_A, "laptop", window_events(2000, 0));
    a.sync(f, &["sync", "--mode", "push"]);
    let good = std::fs::read(f.join(&a.device_id).join("test.db")).unwrap();
    // A transfer cut short, and a file that is not a database at all.
    std::fs::create_dir_all(f.join("half")).unwrap();
    std::fs::write(f.join("half/test.db"), &good[..good.len() / 2]).unwrap();
    std::fs::create_dir_all(f.join("junk")).unwrap();
    std::fs::write(f.join("junk/test.db"), b"not a database, just text").unwrap();

    let b = Device::start();
    let out = b.run(f, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let text = describe(&out);
    assert!(
        text.contains("half/test.db") && text.contains("junk/test.db"),
        "{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
    // The good peer came through whole; the half file added nothing.
    let ids = b.bucket_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(b.events(&b.pulled(&a, WINDOW_A).id), a.events(WINDOW_A));
}

#[test]
fn api_key_unreachable_server_and_a_second_instance_are_clear_errors() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let keyed = Device::with_server(TestServer::start_with_config(
        "[auth]\napi_key = \"s3cret\"\n",
    ));
    let out = keyed.run(f, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401"),
        "{}",
        describe(&out)
    );
    let out = keyed.run(f, &["--api-key", "s3cret", "sync"]);
    assert!(out.status.success(), "{}", describe(&out));

    let mut down = Device::start();
    down.server.kill();
    let out = down.run(f, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("Error: "),
        "{}",
        describe(&out)
    );

    let out = down.run(f, &["sync", "--mode", "sideways"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let out = down.run(f, &["--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aw-sync"))
        .args([
            "--port",
            &down.server.port.to_string(),
            "--sync-dir",
            "relative/dir",
            "sync",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
}

#[test]
fn daemons_sync_both_ways_survive_a_server_restart_and_stop_on_sigterm() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let mut a = Device::with_window_events(WINDOW_A, "laptop", window_events(100, 0));
    let b = Device::start();
    let spawn = |d: &Device, stdout: Stdio| {
        d.aw_sync_command(f)
            .args(["daemon", "--interval", "1"])
            .stdout(stdout)
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // A's daemon logs to stdout: its failed passes are counted.
    let mut daemon_a = spawn(&a, Stdio::piped());
    let failed_passes = lines_containing(daemon_a.stdout.take().unwrap(), "Sync pass failed");
    let mut daemon_b = spawn(&b, Stdio::null());
    let arrived = |n: usize| {
        b.client
            .get_buckets()
            .unwrap()
            .into_keys()
            .find(|id| id.starts_with(WINDOW_A))
            .is_some_and(|id| b.client.get_event_count(&id).unwrap() as usize == n)
    };
    assert!(eventually(|| arrived(100)), "A's events did not reach B");

    // A second aw-sync on the same server is refused while the daemon runs.
    let out = b.run(f, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already"),
        "{}",
        describe(&out)
    );

    // A's server goes away and comes back (on another port, as a restarted test server
    // does; the daemon keeps its port, so restart it with the new one after checking it
    // survived the outage: it tried twice, a pass a second, and lives on).
    let failed_before = failed_passes.load(Ordering::SeqCst);
    a.server.kill();
    assert!(
        eventually(|| failed_passes.load(Ordering::SeqCst) >= failed_before + 2),
        "the daemon did not try its server again"
    );
    assert!(
        daemon_a.try_wait().unwrap().is_none(),
        "the daemon died with its server"
    );
    unsafe_sigterm(&daemon_a);
    assert!(daemon_a.wait().unwrap().success());
    a.server.start_again();
    let a = Device::with_server(a.server);
    a.client
        .insert_events(WINDOW_A, window_events(20, 5000))
        .unwrap();
    let mut daemon_a = spawn(&a, Stdio::null());
    assert!(eventually(|| arrived(120)), "new events did not reach B");

    for daemon in [&mut daemon_a, &mut daemon_b] {
        unsafe_sigterm(daemon);
        let status = daemon.wait().unwrap();
        assert!(status.success(), "{status}");
    }
    // Clean stop: no side files in the folder.
    for path in crate::common::files_under(f) {
        assert!(
            path.extension().is_some_and(|e| e == "db"),
            "{}",
            path.display()
        );
    }
}

fn unsafe_sigterm(child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}
