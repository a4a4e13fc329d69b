//! The requests sync makes (`handle/sync_requests.rs`): their rows of the request table
//! and their store code (`store/day_digest.rs`, `store/day_mirror.rs`,
//! `store/pulled_day.rs`).

use crate::error::DatastoreError;
use crate::new_event::NewEvent;
use crate::store::{DayDigests, MirroredDay, PulledDay, PulledDayApplied, Store};
use crate::worker::batch::Batch;
use crate::worker::kind::{one, Row};
use crate::worker::reply::Reply;
use crate::worker::reply::{read, send, write};
use crate::worker::schedule::Commit::{Counted, Later};

/// What sync asks of the worker.
pub(crate) enum SyncRequest {
    /// The digests of a bucket's days `from..=to`, up to a bound of events.
    DayDigests {
        /// The bucket.
        bucket: String,
        /// First day.
        from: i64,
        /// Last day.
        to: i64,
        /// Stop after the day in which this many events were passed.
        max_events: u64,
        /// The answer.
        reply: Reply<DayDigests>,
    },
    /// Makes one day of a bucket exactly these events, ids included (a sync file).
    MirrorDay(String, i64, Vec<NewEvent>, Reply<MirroredDay>),
    /// Applies one day of another device's bucket to its pulled copy.
    ApplyPulledDay(Box<PulledDay>, Reply<PulledDayApplied>),
}

impl SyncRequest {
    /// Its row of the request table (`Request::kind`): none is quick (a day may hold
    /// thousands of events); the writes count towards the commit's size bound.
    pub(crate) fn row(&self) -> Row<'_> {
        match self {
            SyncRequest::DayDigests { bucket, .. } => {
                (false, false, Later, one(bucket), false, None)
            }
            SyncRequest::MirrorDay(b, ..) => (false, true, Counted, one(b), false, None),
            SyncRequest::ApplyPulledDay(day, _) => {
                (false, true, Counted, one(&day.bucket), false, None)
            }
        }
    }

    /// Runs it on `store` and answers it.
    pub(crate) fn run(self, store: &mut Store, batch: &mut Batch) {
        match self {
            SyncRequest::DayDigests {
                bucket,
                from,
                to,
                max_events,
                reply,
            } => read(store, reply, |s| {
                s.day_digests(&bucket, from, to, max_events)
            }),
            SyncRequest::MirrorDay(name, day, events, reply) => {
                write(store, batch, reply, |s, c| {
                    s.mirror_day(c, &name, day, events)
                });
            }
            SyncRequest::ApplyPulledDay(day, reply) => {
                write(store, batch, reply, |s, c| s.apply_pulled_day(c, *day));
            }
        }
    }

    /// Answers it with `error` without running it.
    pub(crate) fn refuse(self, error: DatastoreError) {
        match self {
            SyncRequest::DayDigests { reply, .. } => send(reply, error),
            SyncRequest::MirrorDay(.., r) => send(r, error),
            SyncRequest::ApplyPulledDay(_, r) => send(r, error),
        }
    }
}
