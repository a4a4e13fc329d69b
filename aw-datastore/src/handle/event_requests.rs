//! The requests about events: insert, heartbeat, read, stream, count, replace, delete.

use aw_models::{Event, EventRows, RawEvent};
use chrono::{DateTime, Utc};

use crate::error::DatastoreError;
use crate::handle::datastore::bound_ns;
use crate::handle::{Answer, Datastore, TextParts};
use crate::new_event::NewEvent;
use crate::worker::{EventRead, Request, RowSink};

impl Datastore {
    /// Inserts events (an event with an `id` replaces that event of this bucket). Returns
    /// the stored events with their ids, in input order.
    pub fn insert_events(&self, bucket_id: &str, events: &[Event]) -> Answer<Vec<RawEvent>> {
        match NewEvent::from_events(events) {
            Ok(events) => self.insert_new_events(bucket_id, events),
            Err(e) => Answer::ready(e),
        }
    }

    /// [`Datastore::insert_events`] for events already converted on the caller's thread.
    pub fn insert_new_events(
        &self,
        bucket_id: &str,
        events: Vec<NewEvent>,
    ) -> Answer<Vec<RawEvent>> {
        self.ask(|r| Request::InsertEvents(bucket_id.to_string(), events, r))
    }

    /// Sends a heartbeat (see the crate docs for the merge rule); returns the resulting
    /// event. `pulsetime` is in seconds and must be finite.
    pub fn heartbeat(&self, bucket_id: &str, event: &Event, pulsetime: f64) -> Answer<RawEvent> {
        if !pulsetime.is_finite() {
            return Answer::ready(DatastoreError::InvalidEvent(format!(
                "pulsetime {pulsetime} is not a finite number of seconds"
            )));
        }
        match NewEvent::from_event(event) {
            // `as` saturates, so an absurd pulsetime means "always within reach".
            Ok(e) => self.ask(|r| {
                Request::Heartbeat(
                    bucket_id.to_string(),
                    e,
                    (pulsetime * 1e9).round() as i64,
                    r,
                )
            }),
            Err(e) => Answer::ready(e),
        }
    }

    /// Events overlapping or touching `[start, end]` (absent = open), clipped to it, newest
    /// first, at most `limit`.
    pub fn get_events(
        &self,
        bucket_id: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
        limit: Option<u64>,
    ) -> Answer<EventRows> {
        self.ask(|reply| {
            Request::GetEvents(EventRead {
                bucket: bucket_id.to_string(),
                start: bound_ns(start),
                end: bound_ns(end),
                limit,
                clip: true,
                reply: RowSink::Whole(reply),
            })
        })
    }

    /// [`Datastore::get_events`] without a limit, for the query engine: handed over a step
    /// at a time (each part as soon as it is read, so the caller works on it while the
    /// worker reads the rest), newest first and clipped, with the data texts as stored
    /// ([`crate::TextRows`]). An error ends the sequence; dropping it stops the read.
    pub fn stream_events(
        &self,
        bucket_id: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
    ) -> TextParts {
        self.stream(bucket_id, start, end, true)
    }

    /// [`Datastore::stream_events`] without clipping: each event whole, so a reader going
    /// through a long span window by window (an export) can tell an event that crosses a
    /// window's edge by its start and write it once.
    pub fn stream_whole_events(
        &self,
        bucket_id: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
    ) -> TextParts {
        self.stream(bucket_id, start, end, false)
    }

    fn stream(
        &self,
        bucket_id: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
        clip: bool,
    ) -> TextParts {
        let (parts, receiver) = crossbeam_channel::unbounded();
        self.send(Request::GetEvents(EventRead {
            bucket: bucket_id.to_string(),
            start: bound_ns(start),
            end: bound_ns(end),
            limit: None,
            clip,
            reply: RowSink::Texts(parts),
        }));
        TextParts(receiver)
    }

    /// One event of the bucket.
    pub fn get_event(&self, bucket_id: &str, event_id: i64) -> Answer<RawEvent> {
        self.ask(|r| Request::GetEvent(bucket_id.to_string(), event_id, r))
    }

    /// Deletes events of the bucket by id; answers the ids that are not events of the
    /// bucket (nothing was deleted for them).
    pub fn delete_events_by_id(&self, bucket_id: &str, event_ids: Vec<i64>) -> Answer<Vec<i64>> {
        self.ask(|r| Request::DeleteEvents(bucket_id.to_string(), event_ids, r))
    }

    /// Replaces the timestamp, duration and data of event `event_id` of the bucket (the
    /// privacy rules apply as to a new event). Fails with [`DatastoreError::NoSuchEvent`]
    /// when the bucket has no such event: unlike an insert with an id, never inserts.
    pub fn replace_event(&self, bucket_id: &str, event_id: i64, event: &Event) -> Answer<RawEvent> {
        match NewEvent::from_event(event) {
            Ok(new) => self.ask(|r| Request::ReplaceEvent(bucket_id.to_string(), event_id, new, r)),
            Err(e) => Answer::ready(e),
        }
    }

    /// Number of events overlapping `[start, end]` (all when both are absent).
    pub fn get_event_count(
        &self,
        bucket_id: &str,
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
    ) -> Answer<u64> {
        if start.is_none() && end.is_none() {
            // Published once counted (the first count of a bucket goes to the worker).
            if let Some(n) = self.published_count(bucket_id) {
                return self.read_published(|_| Ok(n));
            }
        }
        self.ask(|r| Request::CountEvents(bucket_id.to_string(), bound_ns(start), bound_ns(end), r))
    }
}
