//! The data models of the ActivityWatch HTTP API.
//!
//! Every type here serialises exactly as the reference server (aw-server-rust 0.14) does, so
//! that watchers, scripts and the web dashboard see the same JSON from our server:
//!
//! * timestamps are RFC 3339; on input an offset is mandatory (`Z`, `±HH:MM`, `±HHMM`, ` UTC`;
//!   `T`, `t` or a space between date and time), on output they are UTC with `Z` and a
//!   fraction of exactly 0, 3, 6 or 9 digits, whichever is the shortest exact form;
//! * durations travel as float seconds and are kept as integer nanoseconds, rounded to the
//!   nearest one (the reference truncated, so its exports did not always re-import as the
//!   same durations; see [`duration::from_secs_f64`]);
//! * event `data` is a JSON object whose keys serialise in alphabetical order.
//!
//! Unlike the reference, values that cannot be stored as 64-bit nanoseconds since the Unix
//! epoch (timestamps before 1677 or after 2262, durations of NaN, infinity or beyond that
//! range) are rejected while deserialising, with a message naming the field, instead of
//! panicking the database worker later.

mod bucket;
pub mod canonical;
pub mod classes;
pub mod duration;
mod event;
mod export;
mod info;
mod key_value;
pub mod queries;
mod query;
pub mod query_literal;
pub mod raw_event;
mod time_interval;
pub mod timestamp;

pub use bucket::{Bucket, BucketMetadata};
pub use event::Event;
pub use export::BucketsExport;
pub use info::Info;
pub use key_value::KeyValue;
pub use query::Query;
pub use raw_event::{EventRows, RawEvent, TextRow, TextRows};
pub use time_interval::{TimeInterval, TimeIntervalError};

/// The port an ActivityWatch server listens on, where watchers and the dashboard find it.
pub const DEFAULT_PORT: u16 = 5600;

/// The port of a server started with `--testing`, where watchers in testing mode report.
pub const TESTING_PORT: u16 = 5666;
