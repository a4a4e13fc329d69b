//! End-to-end tests of aw-client-rust against the real `aw-server` binary (one test binary
//! with modules, to keep link time down).

mod async_api;
mod blocking_api;
mod common;
mod failures;
