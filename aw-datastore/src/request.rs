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

/// Reads and inserts of at most this many events are quick requests.
const QUICK_ROWS: usize = 200;

impl Request {
    /// Whether the worker answers this request in microseconds (unless it is busy): a
    /// heartbeat, a small insert or read, a setting. For these, the caller polls for the
    /// answer briefly before parking, and the worker polls its queue briefly afterwards (see
    /// `worker::IDLE_SPIN`), because clients send them back to back. (A count over a time
    /// range walks the range: milliseconds for a month, so it is not quick.)
    pub fn is_quick(&self) -> bool {
        match self {
            Request::Heartbeat(..)
            | Request::GetEvent(..)
            | Request::GetKeyValue(..)
            | Request::SetKeyValue(..)
            | Request::DeleteKeyValue(..) => true,
            Request::InsertEvents(_, events, _) => events.len() <= QUICK_ROWS,
            Request::DeleteEvents(_, ids, _) => ids.len() <= QUICK_ROWS,
            Request::GetEvents { limit, .. } => limit.is_some_and(|l| l <= QUICK_ROWS as u64),
            Request::CreateBucket(..)
            | Request::CountEvents(..)
            | Request::Import(..)
            | Request::DeleteBucket(..)
            | Request::GetKeyValues(..)
            | Request::ForceCommit(..)
            | Request::Close(..) => false,
        }
    }
}
