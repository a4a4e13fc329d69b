//! The server the client is tested against: the real `aw-server` binary, started by the
//! workspace's one end-to-end harness (`aw_tests::TestServer`: a free loopback port, a
//! temporary database and private XDG directories, the binary built from the current
//! source), in testing mode. No mock server: the client is tested against what it will
//! talk to.

use aw_client_rust::aw_models::Event;
use aw_client_rust::{blocking, AwClient};
use aw_tests::TestServer;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Map, Value};

pub use aw_tests::free_port;

/// A running testing-mode server.
pub struct Server {
    inner: TestServer,
    /// The port it listens on.
    pub port: u16,
}

impl Server {
    /// A testing-mode server on a fresh database.
    pub fn start() -> Server {
        Server::wrap(TestServer::start_with(&["--testing"]))
    }

    /// A server whose config file contains `config` (TOML).
    pub fn start_with_config(config: &str) -> Server {
        Server::wrap(TestServer::start_with_config(config))
    }

    /// A testing-mode server on a given port (the client's default-port tests).
    pub fn start_on(port: u16) -> Server {
        Server::wrap(TestServer::start_with(&[
            "--testing",
            "--port",
            &port.to_string(),
        ]))
    }

    fn wrap(inner: TestServer) -> Server {
        Server {
            port: inner.port,
            inner,
        }
    }

    /// Kills the process (the port then refuses connections).
    pub fn kill(&mut self) {
        self.inner.kill();
    }

    /// An async client for this server.
    pub fn client(&self) -> AwClient {
        AwClient::new("127.0.0.1", self.port, "aw-client-rust-test").expect("client")
    }

    /// A blocking client for this server.
    pub fn blocking(&self) -> blocking::AwClient {
        blocking::AwClient::new("127.0.0.1", self.port, "aw-client-rust-test").expect("client")
    }
}

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
