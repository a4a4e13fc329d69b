//! The requests sync makes (`aw-sync`): a bucket's day digests, a day of this device's
//! sync file made equal to the server's, a day of another device applied to its pulled
//! copy. See `store/day_digest.rs`, `store/day_mirror.rs` and `store/pulled_day.rs`.

use crate::handle::{Answer, Datastore};
use crate::new_event::NewEvent;
use crate::store::{DayDigests, MirroredDay, PulledDay, PulledDayApplied};
use crate::worker::{Request, SyncRequest};

impl Datastore {
    /// The digests of the days `from..=to` of a bucket that have events, stopping after
    /// the day in which `max_events` events were passed (`DayDigests::next` then says where
    /// to go on): a long history is read in bounded steps, never holding writes up long.
    pub fn day_digests(
        &self,
        bucket_id: &str,
        from: i64,
        to: i64,
        max_events: u64,
    ) -> Answer<DayDigests> {
        self.ask(|reply| {
            Request::Sync(SyncRequest::DayDigests {
                bucket: bucket_id.to_string(),
                from,
                to,
                max_events,
                reply,
            })
        })
    }

    /// Makes the events of a bucket that start in `day` exactly `events`, each under the
    /// id it carries (a sync file keeps its server's ids, so other devices can tell events
    /// apart across edits). For a sync file only: it moves rows of those ids from anywhere.
    pub fn mirror_day(
        &self,
        bucket_id: &str,
        day: i64,
        events: Vec<NewEvent>,
    ) -> Answer<MirroredDay> {
        self.ask(|r| {
            Request::Sync(SyncRequest::MirrorDay(
                bucket_id.to_string(),
                day,
                events,
                r,
            ))
        })
    }

    /// Applies one day of another device's bucket to its pulled copy, with the record of
    /// what was applied, in one request (all or nothing).
    pub fn apply_pulled_day(&self, day: PulledDay) -> Answer<PulledDayApplied> {
        self.ask(|r| Request::Sync(SyncRequest::ApplyPulledDay(Box::new(day), r)))
    }
}
