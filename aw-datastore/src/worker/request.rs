//! The messages the handle sends to the worker, and the one table of what each request is.
//!
//! A [`Request`] is an operation on the data; [`Request::kind`] declares, in one `match`,
//! everything the worker decides on about it: whether it is quick, whether it writes,
//! what its changes mean for the commit, which buckets it touches and how it orders
//! against a rewrite of stored history. The hand-off (`handoff.rs`), the commit policy
//! (`schedule.rs`), the write gate (`group_commit.rs`) and the fence (`fence.rs`) all read
//! that declaration (its vocabulary is in `kind.rs`), and [`Request::run`] binds each
//! request to its store code. A [`Control`] message is about the worker itself (commit,
//! scrub, hold, stop: `control.rs`): the loop carries it out (`run.rs`), and it never
//! reaches [`Request::run`]. The requests sync makes are grouped in `sync_request.rs`,
//! with their rows of the table.
//!
//! Adding a request: a variant here, its row in [`Request::kind`], its arms in
//! [`Request::run`] and [`Request::refuse`] (the compiler points at each), its store
//! code, and its method on the handle (`handle/`).

use aw_models::raw_event::RawEvent;
use aw_models::Bucket;
use std::time::Duration;

use crate::error::DatastoreError;
use crate::new_event::NewEvent;
use crate::store::{Merge, RangeDeletion, RangeRead, Reclaimed, Store, PRIVACY_FILTERS_KEY};
pub(crate) use crate::worker::asked::{CompactionAsked, Rules, RulesAsked};
use crate::worker::batch::Batch;
pub(crate) use crate::worker::control::Control;
use crate::worker::job::{Job, Stepped};
use crate::worker::kind::{one, Row};
pub(crate) use crate::worker::kind::{Holds, Kind, Touches};
use crate::worker::reply::{read, send, write};
use crate::worker::reply::{Reply, RowSink};
use crate::worker::schedule::Commit;
pub(crate) use crate::worker::sync_request::SyncRequest;

/// What goes down the channel to the worker.
pub(crate) enum Message {
    /// An operation on the data.
    Request(Request),
    /// An instruction to the worker itself.
    Control(Control),
}

impl From<Request> for Message {
    fn from(request: Request) -> Message {
        Message::Request(request)
    }
}

impl From<Control> for Message {
    fn from(control: Control) -> Message {
        Message::Control(control)
    }
}

/// One operation for the worker, with the channel its answer goes back on.
pub(crate) enum Request {
    /// Creates the bucket and inserts its events (ids ignored) in one step.
    CreateBucket(Box<Bucket>, Vec<NewEvent>, Reply<()>),
    /// Creates missing buckets; merges events into existing ones, skipping duplicates.
    Import(Vec<(Bucket, Vec<NewEvent>)>, Reply<()>),
    /// Deletes a bucket and its events.
    DeleteBucket(String, Reply<()>),
    /// Inserts events (an id of the bucket's replaces that event).
    InsertEvents(String, Vec<NewEvent>, Reply<Vec<RawEvent>>),
    /// Merges a heartbeat into the bucket's last event, or stores it; pulsetime in ns.
    Heartbeat(String, NewEvent, i64, Reply<RawEvent>),
    /// Reads the events overlapping a range, newest first.
    GetEvents(EventRead),
    /// Reads one event of a bucket.
    GetEvent(String, i64, Reply<RawEvent>),
    /// Applies the privacy or the retention rules to the stored history (or, dry, counts
    /// what they would do).
    ApplyRules(RulesAsked),
    /// Replaces one event of a bucket (never inserts).
    ReplaceEvent(String, i64, NewEvent, Reply<RawEvent>),
    /// Renames a bucket and/or moves it to another host.
    RenameBucket {
        /// The bucket.
        bucket: String,
        /// Its new id.
        name: Option<String>,
        /// Its new host.
        hostname: Option<String>,
        /// The answer.
        reply: Reply<()>,
    },
    /// Moves every event of `from` into `into` and deletes `from`.
    MergeBuckets {
        /// The bucket merged away.
        from: String,
        /// The bucket that stays.
        into: String,
        /// The answer.
        reply: Reply<Merge>,
    },
    /// Deletes events of a bucket by id; answers the ids that were not the bucket's events.
    DeleteEvents(String, Vec<i64>, Reply<Vec<i64>>),
    /// Deletes (or with `dry_run` counts) what lies in `[lo, hi)` of some buckets, all or
    /// nothing.
    DeleteRange {
        /// The buckets.
        buckets: Vec<String>,
        /// Start of the range (ns).
        lo: i64,
        /// End of the range (ns), after `lo`.
        hi: i64,
        /// Only count.
        dry_run: bool,
        /// The number of events it must change (deleted and cut), as a preview said: any
        /// other number ends it with [`DatastoreError::Changed`], nothing changed.
        expect: Option<u64>,
        /// The answer.
        reply: Reply<RangeDeletion>,
    },
    /// Compacts (or with `dry_run` counts the compaction of) some buckets, all or nothing.
    Compact(CompactionAsked),
    /// Counts the events of a bucket overlapping a range (all without one).
    CountEvents(String, Option<i64>, Option<i64>, Reply<u64>),
    /// Reads one setting.
    GetKeyValue(String, Reply<String>),
    /// Stores one setting.
    SetKeyValue(String, String, Reply<()>),
    /// Deletes one setting.
    DeleteKeyValue(String, Reply<()>),
    /// Reads the settings whose keys start with a prefix.
    GetKeyValues(String, Reply<Vec<(String, String)>>),
    /// Gives the free pages inside the file back, in steps (`store/reclaim.rs`).
    ReclaimSpace(Reply<Reclaimed>),
    /// What sync asks (`sync_request.rs`).
    Sync(SyncRequest),
}

/// What [`Request::GetEvents`] reads, and where the rows go.
pub(crate) struct EventRead {
    /// The bucket.
    pub bucket: String,
    /// Start of the range (ns), if any.
    pub start: Option<i64>,
    /// End of the range (ns), if any.
    pub end: Option<i64>,
    /// At most this many.
    pub limit: Option<u64>,
    /// Clip the events to the range.
    pub clip: bool,
    /// Where the rows go.
    pub reply: RowSink,
}

impl EventRead {
    /// Starts the read: its first step of at most `step` (and its answer, if that was all).
    fn start(self, store: &mut Store, step: Duration) -> Stepped {
        let read = store.range_read(&self.bucket, self.start, self.end, self.limit, self.clip);
        let read = match self.reply {
            RowSink::Texts(_) => read.map(RangeRead::with_text_parts),
            RowSink::Whole(_) => read,
        };
        Job::read(store, read, self.reply, step)
    }
}

/// Reads and inserts of at most this many events are quick requests.
const QUICK_ROWS: usize = 200;

impl Request {
    /// The table: what each request is (see [`Kind`]). (A count over a time range walks
    /// the range, milliseconds for a month, so it is not quick.)
    pub(crate) fn kind(&self) -> Kind<'_> {
        use Commit::{Counted, Later, Now};
        // Each row: quick, writes, commit, touches, waits for a privacy run, rewrite.
        let row: Row<'_> = match self {
            Request::Heartbeat(b, ..) => (true, true, Counted, one(b), false, None),
            Request::InsertEvents(b, events, _) => (
                events.len() <= QUICK_ROWS,
                true,
                Counted,
                one(b),
                false,
                None,
            ),
            Request::ReplaceEvent(b, ..) => (true, true, Later, one(b), false, None),
            Request::DeleteEvents(b, ids, _) => {
                (ids.len() <= QUICK_ROWS, true, Later, one(b), false, None)
            }
            Request::GetEvents(read) => {
                let quick = read.limit.is_some_and(|l| l <= QUICK_ROWS as u64);
                (quick, false, Later, one(&read.bucket), false, None)
            }
            Request::GetEvent(b, ..) => (true, false, Later, one(b), false, None),
            Request::CountEvents(b, ..) => (false, false, Later, one(b), false, None),
            Request::CreateBucket(bucket, ..) => (false, true, Now, one(&bucket.id), true, None),
            Request::DeleteBucket(b, _) => (false, true, Now, one(b), true, None),
            Request::RenameBucket { bucket, name, .. } => {
                let touches = Touches::Buckets(bucket, name.as_deref());
                (false, true, Now, touches, true, None)
            }
            Request::Import(..) => (false, true, Now, Touches::Everything, true, None),
            Request::MergeBuckets { from, into, .. } => {
                let touches = Touches::Buckets(from, Some(into));
                (false, true, Now, touches, true, Some(Holds::ItsBuckets))
            }
            Request::DeleteRange {
                buckets, dry_run, ..
            } => {
                let touches = Touches::List(buckets);
                (false, !dry_run, Now, touches, true, Some(Holds::ItsBuckets))
            }
            Request::Compact(asked) => {
                let touches = Touches::List(&asked.buckets);
                (
                    false,
                    !asked.dry_run,
                    Now,
                    touches,
                    true,
                    Some(Holds::ItsBuckets),
                )
            }
            Request::ApplyRules(asked) => {
                let touches = Touches::Everything;
                (
                    false,
                    !asked.dry_run,
                    Now,
                    touches,
                    true,
                    Some(Holds::History),
                )
            }
            Request::GetKeyValue(..) => (true, false, Later, Touches::Nothing, false, None),
            Request::GetKeyValues(..) => (false, false, Later, Touches::Nothing, false, None),
            Request::SetKeyValue(key, ..) | Request::DeleteKeyValue(key, _) => {
                let rules = key == PRIVACY_FILTERS_KEY;
                (true, true, Later, Touches::Nothing, rules, None)
            }
            // Changes no row: nothing to tell; waits for a rewrite, which it would lengthen.
            Request::ReclaimSpace(_) => (false, true, Now, Touches::Nothing, true, None),
            Request::Sync(request) => request.row(),
        };
        Kind::of(row)
    }

    /// Runs the request on `store` and sends its answer (a caller that went away is no
    /// error), a write's only once its changes are sealed in the journal (`batch.rs`); a
    /// request too long for one go comes back as a [`Job`] to continue later, after a
    /// first step of at most `step`, with that step's commit intent.
    pub(crate) fn run(self, store: &mut Store, batch: &mut Batch, step: Duration) -> Stepped {
        match self {
            Request::CreateBucket(bucket, events, reply) => {
                write(store, batch, reply, |s, c| {
                    s.create_bucket(c, *bucket, events)
                });
            }
            Request::Import(buckets, reply) => {
                return Job::import(store, batch, buckets, reply, step);
            }
            Request::DeleteBucket(name, reply) => {
                write(store, batch, reply, |s, c| s.delete_bucket(c, &name))
            }
            Request::InsertEvents(name, events, reply) => {
                write(store, batch, reply, |s, c| {
                    s.insert_events(c, &name, events)
                });
            }
            Request::Heartbeat(name, event, pulsetime, reply) => {
                write(store, batch, reply, |s, c| {
                    s.heartbeat(c, &name, event, pulsetime)
                });
            }
            Request::GetEvents(read) => return read.start(store, step),
            Request::GetEvent(name, id, reply) => read(store, reply, |s| s.get_event(&name, id)),
            Request::DeleteEvents(name, ids, reply) => {
                write(store, batch, reply, |s, c| s.delete_events(c, &name, &ids));
            }
            Request::ReplaceEvent(name, id, event, reply) => {
                write(store, batch, reply, |s, c| {
                    s.replace_event(c, &name, id, event)
                });
            }
            Request::RenameBucket {
                bucket,
                name,
                hostname,
                reply,
            } => write(store, batch, reply, |s, c| {
                s.rename_bucket(c, &bucket, name.as_deref(), hostname.as_deref())
            }),
            Request::MergeBuckets { from, into, reply } => {
                return Job::merge(store, batch, (&from, &into), reply, step);
            }
            Request::DeleteRange {
                buckets,
                lo,
                hi,
                dry_run,
                expect,
                reply,
            } => {
                let range = (buckets.as_slice(), lo, hi);
                return Job::delete_range(store, batch, range, (dry_run, expect), reply, step);
            }
            Request::Compact(asked) => return Job::compact(store, batch, asked, step),
            Request::ApplyRules(asked) => return Job::apply_rules(store, batch, asked, step),
            Request::CountEvents(name, start, end, reply) => {
                read(store, reply, |s| s.count_events(&name, start, end))
            }
            Request::GetKeyValue(key, reply) => read(store, reply, |s| s.get_key_value(&key)),
            Request::SetKeyValue(key, value, reply) => {
                write(store, batch, reply, |s, c| s.set_key_value(c, &key, &value));
            }
            Request::DeleteKeyValue(key, reply) => {
                write(store, batch, reply, |s, c| s.delete_key_value(c, &key))
            }
            Request::GetKeyValues(prefix, reply) => {
                read(store, reply, |s| s.get_key_values(&prefix))
            }
            Request::ReclaimSpace(reply) => return Job::reclaim(store, reply, step),
            Request::Sync(request) => request.run(store, batch),
        }
        Stepped::done(Commit::Later)
    }

    /// Answers the request with `error` without running it (a caller that went away is no
    /// error).
    pub(crate) fn refuse(self, error: DatastoreError) {
        match self {
            Request::CreateBucket(.., r)
            | Request::Import(_, r)
            | Request::DeleteBucket(_, r)
            | Request::SetKeyValue(.., r)
            | Request::DeleteKeyValue(_, r)
            | Request::RenameBucket { reply: r, .. } => send(r, error),
            Request::InsertEvents(.., r) => send(r, error),
            Request::Heartbeat(.., r) | Request::GetEvent(.., r) | Request::ReplaceEvent(.., r) => {
                send(r, error)
            }
            Request::GetEvents(read) => read.reply.fail(error),
            Request::ApplyRules(asked) => send(asked.reply, error),
            Request::MergeBuckets { reply, .. } => send(reply, error),
            Request::DeleteEvents(.., r) => send(r, error),
            Request::DeleteRange { reply, .. } => send(reply, error),
            Request::Compact(asked) => send(asked.reply, error),
            Request::CountEvents(.., r) => send(r, error),
            Request::GetKeyValue(_, r) => send(r, error),
            Request::GetKeyValues(_, r) => send(r, error),
            Request::ReclaimSpace(r) => send(r, error),
            Request::Sync(request) => request.refuse(error),
        }
    }
}

impl Message {
    /// What it is (see [`Kind`]).
    pub(crate) fn kind(&self) -> Kind<'_> {
        match self {
            Message::Request(request) => request.kind(),
            Message::Control(control) => control.kind(),
        }
    }

    /// Whether the worker answers it in microseconds ([`Kind::quick`]).
    pub(crate) fn is_quick(&self) -> bool {
        self.kind().quick
    }

    /// Answers it with `error` without running it.
    pub(crate) fn refuse(self, error: DatastoreError) {
        match self {
            Message::Request(request) => request.refuse(error),
            Message::Control(control) => control.refuse(error),
        }
    }
}
