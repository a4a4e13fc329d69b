//! Starts the real `aw-server` binary on a free loopback port with a temporary database and
//! private XDG directories (no mock server: the client is tested against what it will talk
//! to). The binary is `AW_SERVER_BIN`, else the newer of the workspace's release and debug
//! builds; build it first with `cargo build -p aw-server`.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aw_client_rust::aw_models::Event;
use aw_client_rust::{blocking, AwClient};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Map, Value};

/// The server binary to test against.
fn server_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("AW_SERVER_BIN") {
        return PathBuf::from(bin);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let candidates = [
        target.join("release/aw-server"),
        target.join("debug/aw-server"),
    ];
    candidates
        .iter()
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| {
            panic!("no aw-server binary in {target:?}: run `cargo build -p aw-server` first")
        })
}

/// A free TCP port on 127.0.0.1 (nothing listens on it once this returns).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

/// A running server; killed when dropped.
pub struct Server {
    /// The port it listens on.
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

/// The port in the startup line `… listening on http://127.0.0.1:PORT/ …`.
fn listening_port(line: &str) -> Option<u16> {
    let rest = &line[line.find("listening on http://")? + "listening on http://".len()..];
    let hostport = rest.split('/').next()?;
    hostport
        .rsplit(':')
        .next()?
        .parse()
        .ok()
        .filter(|&p| p != 0)
}

impl Server {
    /// A testing-mode server on a fresh database.
    pub fn start() -> Server {
        Server::start_on(0, None)
    }

    /// A server whose config file contains `config` (TOML).
    pub fn start_with_config(config: &str) -> Server {
        Server::start_on(0, Some(config))
    }

    /// A server on a given port; with port 0 the server picks a free one and the port is
    /// read from its startup log line, so parallel tests never race for ports.
    pub fn start_on(port: u16, config: Option<&str>) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cmd = Command::new(server_binary());
        cmd.env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("LOG_LEVEL", "info")
            .arg("--testing")
            .arg("--no-legacy-import")
            .arg("--port")
            .arg(port.to_string())
            .arg("--dbpath")
            .arg(dir.path().join("sqlite.db"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(config) = config {
            let path = dir.path().join("config.toml");
            std::fs::write(&path, config).expect("write config");
            cmd.arg("--config").arg(path);
        }
        let mut child = cmd.spawn().expect("cannot start aw-server");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut sent = false;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if !sent {
                    if let Some(p) = listening_port(&line) {
                        let _ = tx.send(p);
                        sent = true;
                    }
                }
            }
        });
        let port = if port == 0 {
            rx.recv_timeout(Duration::from_secs(30))
                .expect("aw-server did not report its port")
        } else {
            port
        };
        let mut server = Server {
            port,
            dir,
            child: Some(child),
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                panic!("aw-server exited during startup: {status}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("aw-server did not listen on port {} in time", self.port);
    }

    /// Kills the process (the port then refuses connections).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// An async client for this server.
    pub fn client(&self) -> AwClient {
        AwClient::new("127.0.0.1", self.port, "aw-client-rust-test").expect("client")
    }

    /// A blocking client for this server.
    pub fn blocking(&self) -> blocking::AwClient {
        blocking::AwClient::new("127.0.0.1", self.port, "aw-client-rust-test").expect("client")
    }

    /// The temporary directory (keeps it alive with the server).
    #[allow(dead_code)]
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// 2024-03-04T10:00:00Z plus `secs` seconds.
pub fn at(secs: f64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 3, 4, 10, 0, 0).unwrap()
        + chrono::Duration::nanoseconds((secs * 1e9).round() as i64)
}

/// A JSON object from a `json!({...})` literal.
pub fn data(value: Value) -> Map<String, Value> {
    value.as_object().cloned().expect("object")
}

/// An event at `at(start)` lasting `secs` with `data`.
pub fn event(start: f64, secs: f64, value: Value) -> Event {
    Event::new(
        at(start),
        chrono::Duration::nanoseconds((secs * 1e9).round() as i64),
        data(value),
    )
}

/// Duration in float seconds.
pub fn secs(event: &Event) -> f64 {
    event.duration.num_nanoseconds().unwrap() as f64 / 1e9
}
