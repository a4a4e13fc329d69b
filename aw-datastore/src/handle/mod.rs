//! The handle callers hold: [`Datastore`], a cheap `Clone + Send + Sync` channel sender to
//! the worker thread (no mutex), with one method per request.
//!
//! A method turns its arguments into a request for the worker (`worker/request.rs`) and
//! returns an [`Answer`] to await or wait on; reads of what the worker publishes (bucket
//! lists, counts) are answered here without a round trip. One file per kind of request:
//! `bucket_requests.rs`, `event_requests.rs`, `history_requests.rs` (rewrites of stored
//! history), `setting_requests.rs`, `sync_requests.rs` (what sync asks: day digests, a
//! day mirrored, a pulled day applied);
//! `opening.rs` opens a file and hands out the handle; `datastore.rs` has the handle
//! itself, its status reads and the requests about the worker (commit, hold, close).

mod answer;
mod bucket_requests;
mod datastore;
mod event_requests;
mod history_requests;
mod import_document;
mod opening;
mod setting_requests;
mod sync_requests;

pub use answer::{Answer, AnswerFuture};
pub use datastore::{Datastore, TextParts, WorkerHold};
pub use import_document::{parse_import_document, ImportDocument, ImportProblem, MAX_PROBLEMS};
pub use opening::Opening;
