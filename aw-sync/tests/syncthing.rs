//! Sync over a real folder-sync engine: two Syncthing instances (loopback only; global and
//! local discovery, relays and NAT traversal off), each with its own folder and its own
//! aw-server syncing into it (`[sync]`, built in). Events written on device A must reach
//! device B's server within a bounded time, and back.
//!
//! Needs the `syncthing` binary (Debian package `syncthing`); `tests/syncthing/install.sh`
//! installs it, and the test command runs this test with `AW_REQUIRE_PREREQUISITES=1`, so
//! there it fails without the binary. Elsewhere, without it, the test says it is skipped.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aw_client_rust::blocking::AwClient;
use aw_models::{Bucket, Event};
use aw_sync::PeerFile;
use aw_tests::{free_port, TestServer};
use chrono::{TimeZone, Utc};
use serde_json::json;

/// One Syncthing instance.
struct Engine {
    home: PathBuf,
    folder: PathBuf,
    id: String,
    listen: u16,
    gui: u16,
    child: Option<Child>,
}

impl Engine {
    /// Keys and a device id in `dir/home`; the shared folder is `dir/folder`.
    fn generate(dir: &Path) -> Engine {
        let home = dir.join("home");
        let out = Command::new("syncthing")
            .args(["generate", "--no-default-folder", "--skip-port-probing"])
            .arg(format!("--home={}", home.display()))
            .output()
            .expect("cannot run syncthing generate");
        assert!(out.status.success(), "syncthing generate: {out:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let id = text
            .lines()
            .find_map(|l| l.split("Device ID: ").nth(1))
            .expect("a device id")
            .trim()
            .to_string();
        let folder = dir.join("folder");
        // Syncthing's folder marker (a dot-folder, which aw-sync never reads).
        std::fs::create_dir_all(folder.join(".stfolder")).unwrap();
        // What the aw-sync docs advise: never ship SQLite side files or temporary files.
        std::fs::write(
            folder.join(".stignore"),
            "*.db-wal\n*.db-shm\n*.db-journal\n.*.aw-sync-tmp\n",
        )
        .unwrap();
        Engine {
            home,
            folder,
            id,
            listen: free_port(),
            gui: free_port(),
            child: None,
        }
    }

    /// Writes the config (sharing the folder with `peer`) and starts the engine.
    ///
    /// Syncthing's own disk guards (`minDiskFree`, `minHomeDiskFree`, 1 % by default) are
    /// turned off: on a big, nearly full disk (a CI machine with a 250 GB disk and 1 GB
    /// free) they stop every transfer, and this test is about our files, not their guard.
    fn start(&mut self, peer: &Engine) {
        let device = |e: &Engine, name: &str| {
            format!(
                "<device id=\"{}\" name=\"{name}\" compression=\"metadata\"><address>tcp://127.0.0.1:{}</address></device>",
                e.id, e.listen
            )
        };
        let config = format!(
            r#"<configuration version="36">
    <folder id="aw-sync" label="aw-sync" path="{folder}" type="sendreceive" rescanIntervalS="30" fsWatcherEnabled="true" fsWatcherDelayS="1">
        <minDiskFree unit="%">0</minDiskFree>
        <device id="{me}"></device>
        <device id="{peer}"></device>
    </folder>
    {me_device}
    {peer_device}
    <gui enabled="true" tls="false"><address>127.0.0.1:{gui}</address><apikey>aw-sync-test</apikey></gui>
    <options>
        <listenAddress>tcp://127.0.0.1:{listen}</listenAddress>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <relaysEnabled>false</relaysEnabled>
        <natEnabled>false</natEnabled>
        <urAccepted>-1</urAccepted>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <crashReportingEnabled>false</crashReportingEnabled>
        <startBrowser>false</startBrowser>
        <minHomeDiskFree unit="%">0</minHomeDiskFree>
    </options>
</configuration>
"#,
            folder = self.folder.display(),
            me = self.id,
            peer = peer.id,
            me_device = device(self, "me"),
            peer_device = device(peer, "peer"),
            gui = self.gui,
            listen = self.listen,
        );
        std::fs::write(self.home.join("config.xml"), config).unwrap();
        let log = std::fs::File::create(self.home.join("syncthing.log")).unwrap();
        let child = Command::new("syncthing")
            .args([
                "serve",
                "--no-browser",
                "--no-restart",
                "--no-upgrade",
                "--no-default-folder",
            ])
            .arg(format!("--home={}", self.home.display()))
            .env("STNODEFAULTFOLDER", "1")
            .env("STNOUPGRADE", "1")
            .env("HOME", &self.home)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("cannot start syncthing");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(120);
        while TcpStream::connect(("127.0.0.1", self.gui)).is_err() {
            assert!(
                Instant::now() < deadline,
                "syncthing did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.join("syncthing.log")).unwrap_or_default()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn syncthing_available() -> bool {
    let found = Command::new("syncthing")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        aw_tests::prerequisite_missing(
            "no syncthing binary (tests/syncthing/install.sh installs it)",
        );
    }
    found
}

/// A server syncing into `folder` every second.
fn server(folder: &Path) -> (TestServer, AwClient, String) {
    let config = format!("[sync]\nfolder = \"{}\"\ninterval = 1\n", folder.display());
    let server = TestServer::start_with_config(&config);
    let client = AwClient::new("127.0.0.1", server.port, "syncthing-test").unwrap();
    let id = client.get_info().unwrap().device_id;
    (server, client, id)
}

/// Waits until `client` has a bucket pulled from `source` with `n` events; returns the time.
fn arrival(client: &AwClient, source: &str, n: usize, engines: [&Engine; 2]) -> Duration {
    let started = Instant::now();
    loop {
        let pulled = client
            .get_buckets()
            .unwrap()
            .into_keys()
            .find(|id| id.starts_with(&format!("{source}-synced-from-")));
        if let Some(id) = pulled {
            if client.get_event_count(&id).unwrap() as usize == n {
                return started.elapsed();
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{n} events of {source} did not arrive within 120 s\nA: {}\nB: {}",
            engines[0].log(),
            engines[1].log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn window_events(n: i64, offset: i64, app: &str) -> Vec<Event> {
    let t0 = Utc.with_ymd_and_hms(2026, 4, 1, 8, 0, 0).unwrap();
    (0..n)
        .map(|i| {
            let serde_json::Value::Object(data) = json!({"app": app, "title": format!("doc {i}")})
            else {
                unreachable!()
            };
            Event::new(
                t0 + chrono::Duration::seconds(offset + i * 10),
                chrono::Duration::seconds(9),
                data,
            )
        })
        .collect()
}

#[test]
fn events_travel_both_ways_through_two_syncthing_instances() {
    if !syncthing_available() {
        return;
    }
    let dir_a = tempfile::tempdir().unwrap();
    let dir_b = tempfile::tempdir().unwrap();
    let mut a = Engine::generate(dir_a.path());
    let mut b = Engine::generate(dir_b.path());
    a.start(&b);
    b.start(&a);
    let (server_a, client_a, id_a) = server(&a.folder);
    let (_server_b, client_b, id_b) = server(&b.folder);

    client_a
        .create_bucket(&Bucket::new(
            "aw-watcher-window_laptop",
            "currentwindow",
            "test",
            "laptop",
        ))
        .unwrap();
    client_a
        .insert_events("aw-watcher-window_laptop", window_events(3000, 0, "editor"))
        .unwrap();
    let a_to_b = arrival(&client_b, "aw-watcher-window_laptop", 3000, [&a, &b]);
    eprintln!("A → B: 3,000 events arrived in {a_to_b:.1?}");

    client_b
        .create_bucket(&Bucket::new(
            "aw-watcher-window_desktop",
            "currentwindow",
            "test",
            "desktop",
        ))
        .unwrap();
    client_b
        .insert_events(
            "aw-watcher-window_desktop",
            window_events(500, 5, "browser"),
        )
        .unwrap();
    let b_to_a = arrival(&client_a, "aw-watcher-window_desktop", 500, [&a, &b]);
    eprintln!("B → A: 500 events arrived in {b_to_a:.1?}");

    // More events on A: the grown file travels again and only the new events are added.
    client_a
        .insert_events(
            "aw-watcher-window_laptop",
            window_events(100, 40_000, "editor"),
        )
        .unwrap();
    let again = arrival(&client_b, "aw-watcher-window_laptop", 3100, [&a, &b]);
    eprintln!("A → B: 100 more events arrived in {again:.1?}");

    // A deletes an hour of its history: B's copy follows through Syncthing (by days).
    let r = server_a.client().delete(
        "/api/0/buckets/aw-watcher-window_laptop/events?start=2026-04-01T08:00:00Z&end=2026-04-01T09:00:00Z",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let deleted = r.json()["deleted"].as_u64().unwrap() as usize;
    assert_eq!(deleted, 360, "{}", r.body);
    let gone = arrival(
        &client_b,
        "aw-watcher-window_laptop",
        3100 - deleted,
        [&a, &b],
    );
    eprintln!("A → B: a deletion of 360 events followed in {gone:.1?}");

    // Each side holds the other's file whole, and nothing else: no conflict copies, no
    // SQLite side files.
    for (engine, peer) in [(&a, &id_b), (&b, &id_a)] {
        PeerFile::open(&engine.folder.join(peer).join("test.db"), true)
            .expect("a complete peer file");
        // Nothing but the database (and Syncthing's own markers) in the folder. Syncthing may
        // still be receiving the other layout's copy into a temporary file of its own
        // (`.syncthing.test.db.tmp`), and may start another transfer after one walk saw none:
        // the folder must come clean in two walks in a row.
        let stray = || -> Vec<std::path::PathBuf> {
            walk(&engine.folder)
                .into_iter()
                .filter(|entry| {
                    let name = entry.file_name().unwrap().to_string_lossy().into_owned();
                    let inside_marker = entry
                        .components()
                        .any(|c| c.as_os_str() == ".stfolder" || c.as_os_str() == ".stversions");
                    !(inside_marker || name == "test.db" || name == ".stignore")
                })
                .collect()
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut clean_walks = 0;
        while clean_walks < 2 && Instant::now() < deadline {
            clean_walks = if stray().is_empty() {
                clean_walks + 1
            } else {
                0
            };
            std::thread::sleep(Duration::from_millis(200));
        }
        assert_eq!(
            clean_walks,
            2,
            "unexpected files in the synced folder: {:?}",
            stray()
        );
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
