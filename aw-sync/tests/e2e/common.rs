//! A simulated device: its own server, its own private directories for aw-sync, and a
//! helper to run the `aw-sync` binary against it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use aw_client_rust::blocking::AwClient;
use aw_models::{Bucket, Event};
use aw_tests::TestServer;
use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{json, Map, Value};

/// One device: a server and aw-sync's private directories.
pub struct Device {
    pub server: TestServer,
    pub home: tempfile::TempDir,
    pub client: AwClient,
    pub device_id: String,
}

impl Device {
    pub fn start() -> Device {
        Device::with_server(TestServer::start())
    }

    pub fn with_server(server: TestServer) -> Device {
        let client = AwClient::new("127.0.0.1", server.port, "sync-test").unwrap();
        let device_id = client.get_info().unwrap().device_id;
        Device {
            server,
            home: tempfile::tempdir().unwrap(),
            client,
            device_id,
        }
    }

    /// An `aw-sync` command for this device's server and private directories.
    pub fn aw_sync_command(&self, folder: &Path) -> Command {
        let mut cmd = self.aw_sync_environment();
        cmd.arg("--port")
            .arg(self.server.port.to_string())
            .arg("--sync-dir")
            .arg(folder);
        cmd
    }

    /// An `aw-sync` command with this device's private directories, and no arguments.
    pub fn aw_sync_environment(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_aw-sync"));
        cmd.env("HOME", self.home.path())
            .env("XDG_DATA_HOME", self.home.path().join("data"))
            .env("XDG_CACHE_HOME", self.home.path().join("cache"))
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env_remove("AW_SYNC_DIR")
            .env_remove("AW_API_KEY")
            .env_remove("LOG_LEVEL");
        cmd
    }

    /// Runs `aw-sync <args>` to the end; panics with its output unless it succeeds.
    pub fn sync(&self, folder: &Path, args: &[&str]) -> String {
        let out = self.run(folder, args);
        assert!(
            out.status.success(),
            "aw-sync {args:?} failed: {}",
            describe(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs `aw-sync <args>` to the end.
    pub fn run(&self, folder: &Path, args: &[&str]) -> Output {
        self.aw_sync_command(folder).args(args).output().unwrap()
    }

    /// Every event of the bucket as (start, duration, data), oldest first.
    pub fn events(&self, bucket: &str) -> Vec<(DateTime<Utc>, Duration, Map<String, Value>)> {
        let mut events: Vec<_> = self
            .client
            .get_events(bucket, None, None, None)
            .unwrap()
            .into_iter()
            .map(|e| (e.timestamp, e.duration, e.data))
            .collect();
        events.sort_by(|a, b| {
            (a.0, a.1).cmp(&(b.0, b.1)).then(
                Value::Object(a.2.clone())
                    .to_string()
                    .cmp(&Value::Object(b.2.clone()).to_string()),
            )
        });
        events
    }

    /// Bucket ids, sorted.
    pub fn bucket_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.client.get_buckets().unwrap().into_keys().collect();
        ids.sort();
        ids
    }

    /// The bucket this device pulled from `source` of device `from`.
    pub fn pulled(&self, from: &Device, source: &str) -> Bucket {
        let buckets = self.client.get_buckets().unwrap();
        let found: Vec<Bucket> = buckets
            .into_values()
            .filter(|b| {
                b.data.get("$aw.sync.device") == Some(&json!(from.device_id))
                    && b.data.get("$aw.sync.source") == Some(&json!(source))
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "expected one bucket pulled from {source}: {found:?}"
        );
        found.into_iter().next().unwrap()
    }

    /// A device whose server has a window bucket `id` of `hostname` holding `events`.
    pub fn with_window_events(id: &str, hostname: &str, events: Vec<Event>) -> Device {
        let d = Device::start();
        d.create_bucket(id, "currentwindow", hostname);
        // In requests of at most 10,000 events.
        for chunk in events.chunks(10_000) {
            d.client.insert_events(id, chunk.to_vec()).unwrap();
        }
        d
    }

    pub fn create_bucket(&self, id: &str, kind: &str, hostname: &str) {
        self.client
            .create_bucket(&Bucket::new(id, kind, "test-watcher", hostname))
            .unwrap();
    }
}

/// A device whose server syncs through `folder` by itself, every second (`[sync]` in
/// config.toml, with `extra` lines).
pub fn syncing_server(folder: &Path, extra: &str) -> Device {
    let config = format!(
        "[sync]\nfolder = \"{}\"\ninterval = 1\n{extra}",
        folder.display()
    );
    Device::with_server(TestServer::start_with_config(&config))
}

/// Exit status and output of a finished command.
pub fn describe(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// 2026-03-01 09:00 UTC plus `seconds`.
pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap() + Duration::seconds(seconds)
}

/// An event at `start` (seconds after [`at`]`(0)`) lasting `length` seconds.
pub fn event(start: i64, length: i64, data: Value) -> Event {
    let Value::Object(data) = data else {
        panic!("event data must be an object")
    };
    Event::new(at(start), Duration::seconds(length), data)
}

/// `n` window events, one every 10 s, each 8 s long, with a few titles repeating.
pub fn window_events(n: usize, offset: i64) -> Vec<Event> {
    (0..n as i64)
        .map(|i| {
            event(
                offset + i * 10,
                8,
                json!({"app": format!("app{}", i % 7), "title": format!("title {}", i % 13)}),
            )
        })
        .collect()
}

/// The shared folder's files, relative, sorted.
pub fn files_under(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Waits until `check` holds, for at most [`aw_tests::HANG_GUARD`] (only a hang reaches
/// it); whether it did.
pub fn eventually(mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + aw_tests::HANG_GUARD;
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    false
}
