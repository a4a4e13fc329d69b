//! End-to-end tests of aw-sync: real `aw-server` processes (one per simulated device), the
//! real `aw-sync` binary, a real shared folder (one test binary with modules, to keep link
//! time down).
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod builtin;
mod cli;
mod common;
mod failures;
mod folder_format;
mod hostile_peers;
mod rewrites;
mod two_devices;
