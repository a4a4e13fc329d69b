//! Events on their way into the database.

use aw_models::Event;

use crate::error::{DatastoreError, Result};
use aw_models::raw_event::data_to_text;

/// An event ready to be written: validated nanosecond bounds and serialised `data`.
///
/// Built on the caller's thread (see [`NewEvent::from_event`]) so that the worker thread does
/// no JSON work on the write path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEvent {
    /// `Some(id)` replaces that event of the same bucket; an id that names no event of the
    /// bucket is not used (the event gets a fresh id, see `Store::insert_events`).
    pub id: Option<i64>,
    /// Start, ns since the epoch.
    pub start: i64,
    /// End, ns since the epoch.
    pub end: i64,
    /// Compact JSON text of `data`, keys sorted.
    pub data: String,
}

impl NewEvent {
    /// Validates and converts an event. Fails with [`DatastoreError::InvalidEvent`] when the
    /// timestamp or end do not fit in `i64` nanoseconds.
    pub fn from_event(event: &Event) -> Result<NewEvent> {
        event.validate().map_err(DatastoreError::InvalidEvent)?;
        Ok(NewEvent {
            id: event.id,
            start: event.start_ns(),
            end: event.end_ns(),
            data: data_to_text(&event.data),
        })
    }

    /// Converts many events, failing on the first invalid one.
    pub fn from_events(events: &[Event]) -> Result<Vec<NewEvent>> {
        events.iter().map(NewEvent::from_event).collect()
    }
}
