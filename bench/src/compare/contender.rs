//! One server in the comparison (ours or the other binary) with the state its rows share:
//! the imported history's buckets and end, and a request counter so no timestamp or query
//! period repeats on it.

use std::path::PathBuf;

use aw_client_rust::queries::DesktopQueryParams;
use serde_json::json;

use aw_tests::{Client, TestServer};

/// One server in the comparison.
pub(super) struct Contender {
    /// `ours` or `other`.
    pub(super) label: &'static str,
    /// The binary (`None`: our build, [`aw_tests::server_binary`]).
    pub(super) binary: Option<PathBuf>,
    pub(super) server: TestServer,
    /// Counts this server's requests, so timestamps and query periods never repeat on it.
    pub(super) seq: i64,
    /// The window, AFK and browser buckets of the imported history.
    pub(super) params: DesktopQueryParams,
    /// The end of the imported history.
    pub(super) end: i64,
}

impl Contender {
    pub(super) fn pid(&self) -> u32 {
        self.server.pid().unwrap_or(0)
    }

    pub(super) fn client(&self) -> Client {
        self.server.client()
    }

    /// A fresh server of this binary on an empty database.
    pub(super) fn start_empty(&self) -> TestServer {
        TestServer::start_binary(&self.binary.clone().unwrap_or_else(aw_tests::server_binary))
    }

    /// The next number of this server's sequence.
    pub(super) fn next(&mut self) -> i64 {
        self.seq += 1;
        self.seq
    }

    /// Creates a bucket (an existing one is fine).
    pub(super) fn bucket(&self, id: &str, kind: &str) {
        let r = self.client().post_json(
            &format!("/api/0/buckets/{id}"),
            &json!({"client": "aw-bench", "type": kind, "hostname": "bench"}).to_string(),
        );
        assert!(r.status == 200 || r.status == 304, "{id}: {}", r.body);
    }
}
