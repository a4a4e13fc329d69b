//! End-to-end tests of aw-client-rust against the real `aw-server` binary (one test binary
//! with modules, to keep link time down).
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

mod async_api;
mod blocking_api;
mod common;
mod failures;
