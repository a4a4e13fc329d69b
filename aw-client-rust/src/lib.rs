//! Client library for the ActivityWatch server HTTP API (`/api/0/`).
//!
//! Drop-in for the reference `aw-client-rust`: the same [`AwClient`] (async) and
//! [`blocking::AwClient`] types with the same method names and arguments, so existing Rust
//! watchers compile against it. Differences worth knowing:
//!
//! * errors are a typed [`ClientError`] that keeps the HTTP status and the server's
//!   `message`, and names the URL when the server cannot be reached;
//! * [`AwClient::get_settings`] returns the settings as a JSON object instead of a struct
//!   that fails when a key is missing;
//! * there are a few additions: [`AwClient::get_event`], [`AwClient::delete_setting`],
//!   [`AwClient::ensure_bucket`], `*_returning` variants that return what the server stored,
//!   [`AwClient::get_event_count_range`] and a [`AwClientBuilder`] for timeouts;
//! * no single-instance lock file is taken: two clients with the same name may coexist.
//!
//! The models (`Event`, `Bucket`, …) are those of the `aw-models` crate, re-exported as
//! [`aw_models`].
//!
//! # Example: a minimal watcher (blocking)
//!
//! ```no_run
//! use aw_client_rust::aw_models::Event;
//! use aw_client_rust::blocking::AwClient;
//! use chrono::{Duration, Utc};
//! use serde_json::{json, Map};
//!
//! fn main() -> Result<(), aw_client_rust::ClientError> {
//!     let client = AwClient::new("127.0.0.1", AwClient::testing_port(), "my-watcher")?;
//!     client.wait_for_start()?;
//!     let bucket = format!("my-watcher_{}", client.hostname);
//!     client.create_bucket_simple(&bucket, "currentwindow")?; // fine if it exists
//!
//!     let mut data = Map::new();
//!     data.insert("app".into(), json!("Terminal"));
//!     data.insert("title".into(), json!("vim"));
//!     // Poll every second; a pulsetime a bit longer than the poll interval lets the
//!     // server merge consecutive heartbeats into one growing event.
//!     for _ in 0..3 {
//!         let event = Event::new(Utc::now(), Duration::zero(), data.clone());
//!         client.heartbeat(&bucket, &event, 2.0)?;
//!         std::thread::sleep(std::time::Duration::from_secs(1));
//!     }
//!     let events = client.get_events(&bucket, None, None, Some(10))?;
//!     println!("{} events, newest lasted {:?}", events.len(), events.first().map(|e| e.duration));
//!     Ok(())
//! }
//! ```
//!
//! # Example: async
//!
//! ```no_run
//! use aw_client_rust::{AwClient, ClientError};
//!
//! async fn show_buckets() -> Result<(), ClientError> {
//!     let client = AwClient::new("127.0.0.1", 5600, "bucket-lister")?;
//!     match client.get_bucket("no-such-bucket").await {
//!         Err(e) if e.is_not_found() => println!("missing: {}", e.message().unwrap_or("")),
//!         other => println!("{other:?}"),
//!     }
//!     for (id, bucket) in client.get_buckets().await? {
//!         println!("{id}: {} events until {:?}", bucket._type, bucket.metadata.end);
//!     }
//!     Ok(())
//! }
//! ```

#![warn(missing_docs)]

mod async_client;
pub mod blocking;
mod builder;
mod error;
mod sync_calls;
mod url;

/// The canonical dashboard queries, the default categories and query literals: defined in
/// `aw-models` (the server uses them too), re-exported here where scripts look for them.
pub use aw_models::{classes, queries, query_literal};

/// The shared data models, so watchers need no separate `aw-models` dependency.
pub use aw_models;

pub use async_client::{AwClient, DEFAULT_START_TIMEOUT};
pub use builder::{AwClientBuilder, IntoApiKey, DEFAULT_TIMEOUT};
pub use error::ClientError;
pub use url::encode_component;

pub use aw_models::{DEFAULT_PORT, TESTING_PORT};
