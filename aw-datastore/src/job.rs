//! Long requests the worker runs in steps, answering other requests in between.
//!
//! A year-long event read or a large import would otherwise hold the single worker for up
//! to a second while every heartbeat waits behind it. Each step does a bounded amount of
//! work ([`READ_CHUNK_ROWS`] rows, [`IMPORT_CHUNK_EVENTS`] events), so a small request waits
//! at most about one step.

use std::collections::VecDeque;

use crate::error::Result;
use crate::new_event::NewEvent;
use crate::range_read::RangeRead;
use crate::raw_event::EventRows;
use crate::request::Reply;
use crate::store::Store;

/// Rows read per step of a long read.
pub const READ_CHUNK_ROWS: usize = 2_000;
/// Events inserted per step of an import.
pub const IMPORT_CHUNK_EVENTS: usize = 5_000;

/// A request in progress.
pub enum Job {
    /// An event read too large for one step.
    Read(RangeRead, Reply<EventRows>),
    /// The inserts of an import, per bucket, each list reversed so chunks pop off the end.
    Import(VecDeque<(String, Vec<NewEvent>)>, Reply<()>),
}

impl Job {
    /// Starts a read: runs its first step, and answers at once if that was all of it.
    pub fn read(
        store: &mut Store,
        read: Result<RangeRead>,
        reply: Reply<EventRows>,
    ) -> Option<Job> {
        match read {
            Ok(read) => Job::Read(read, reply).step(store),
            Err(e) => {
                let _ = reply.send(Err(e));
                None
            }
        }
    }

    /// Starts an import: creates buckets and removes duplicates, then inserts in steps.
    pub fn import(
        store: &mut Store,
        buckets: Vec<(aw_models::Bucket, Vec<NewEvent>)>,
        reply: Reply<()>,
    ) -> Option<Job> {
        match store.prepare_import(buckets) {
            Ok(pending) => {
                let pending = pending
                    .into_iter()
                    .map(|(name, mut events)| {
                        events.reverse();
                        (name, events)
                    })
                    .collect();
                Job::Import(pending, reply).step(store)
            }
            Err(e) => {
                let _ = reply.send(Err(e));
                None
            }
        }
    }

    /// Runs one step; returns the job if it is not finished (its answer is sent when it is).
    pub fn step(self, store: &mut Store) -> Option<Job> {
        match self {
            Job::Read(mut read, reply) => match read.step(store.conn(), READ_CHUNK_ROWS) {
                Err(e) => {
                    let _ = reply.send(Err(e));
                    None
                }
                Ok(()) if read.is_done() => {
                    let _ = reply.send(Ok(read.finish()));
                    None
                }
                Ok(()) => Some(Job::Read(read, reply)),
            },
            Job::Import(mut pending, reply) => {
                let Some((name, events)) = pending.front_mut() else {
                    let _ = reply.send(Ok(()));
                    return None;
                };
                let chunk: Vec<NewEvent> = events
                    .split_off(events.len().saturating_sub(IMPORT_CHUNK_EVENTS))
                    .into_iter()
                    .rev()
                    .collect();
                let name = name.clone();
                if events.is_empty() {
                    pending.pop_front();
                }
                if let Err(e) = store.insert_events(&name, chunk) {
                    let _ = reply.send(Err(e));
                    return None;
                }
                if pending.is_empty() {
                    let _ = reply.send(Ok(()));
                    return None;
                }
                Some(Job::Import(pending, reply))
            }
        }
    }
}
