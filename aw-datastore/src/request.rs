//! The messages the handle sends to the worker thread.

use aw_models::Bucket;
use tokio::sync::oneshot;

use crate::error::Result;
use crate::new_event::NewEvent;
use crate::raw_event::{EventRows, RawEvent};

/// Where the worker sends a reply; the caller awaits or blocks on the other end.
pub type Reply<T> = oneshot::Sender<Result<T>>;

/// One operation for the worker, with the channel its answer goes back on.
pub enum Request {
    /// Creates the bucket and inserts its events (ids ignored) in one step.
    CreateBucket(Box<Bucket>, Vec<NewEvent>, Reply<()>),
    /// Creates missing buckets; merges events into existing ones, skipping duplicates.
    Import(Vec<(Bucket, Vec<NewEvent>)>, Reply<()>),
    DeleteBucket(String, Reply<()>),
    InsertEvents(String, Vec<NewEvent>, Reply<Vec<RawEvent>>),
    Heartbeat(String, NewEvent, i64, Reply<RawEvent>),
    GetEvents {
        bucket: String,
        start: Option<i64>,
        end: Option<i64>,
        limit: Option<u64>,
        clip: bool,
        reply: Reply<EventRows>,
    },
    GetEvent(String, i64, Reply<RawEvent>),
    DeleteEvents(String, Vec<i64>, Reply<()>),
    CountEvents(String, Option<i64>, Option<i64>, Reply<u64>),
    GetKeyValue(String, Reply<String>),
    SetKeyValue(String, String, Reply<()>),
    DeleteKeyValue(String, Reply<()>),
    GetKeyValues(String, Reply<Vec<(String, String)>>),
    /// Answered once everything before it is committed.
    ForceCommit(Reply<()>),
    /// Commit and stop; answered after the final commit.
    Close(Reply<()>),
}
