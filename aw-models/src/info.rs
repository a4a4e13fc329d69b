//! Server information.

use serde::{Deserialize, Serialize};

/// The body of `GET /api/0/info`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Info {
    /// The server's host name (`"unknown"` when not UTF-8).
    pub hostname: String,
    /// `v<version> (rust)`, as clients display it.
    pub version: String,
    /// Whether the server runs in testing mode.
    pub testing: bool,
    /// The stable id of this installation.
    pub device_id: String,
}
