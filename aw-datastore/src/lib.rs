//! The ActivityWatch event store: one SQLite worker thread behind a cloneable handle.
//!
//! [`Datastore`] is a cheap, `Clone + Send + Sync` handle (a channel sender, no mutex). Every
//! operation becomes a message to the single worker thread that owns the only
//! `rusqlite::Connection`; the answer comes back as a [`Answer`] that async code `.await`s
//! and threads [`Answer::wait`] on. Requests run in arrival order.
//!
//! # Storage
//! The file format is aw-server-rust's (schema `user_version` 5; see `schema.rs`): an
//! existing reference `sqlite.db` (v4 or v5, or older) opens in place and is migrated. Events
//! are stored as integer nanoseconds with `data` as compact JSON text with sorted keys, and
//! read through the composite index `(bucketrow, starttime DESC, endtime)`.
//! The database runs in WAL mode with `synchronous=FULL`; writes are group-committed (see
//! `worker.rs` for the exact policy, which also commits after a short idle period).
//!
//! # Choices where the reference has hazards
//! * Events whose timestamp or end do not fit `i64` nanoseconds are refused with
//!   [`DatastoreError::InvalidEvent`] (the reference's worker panicked).
//! * An event `id` only ever addresses an event of the same bucket: inserting an event whose
//!   id belongs to another bucket fails before anything is written; an id that names no
//!   event gets a fresh id instead (so a client can never push the id sequence to its
//!   64-bit end, COMPATIBILITY.md, server #18; files where another server did are repaired at open); creating
//!   a bucket with events and importing ignore event ids (new ids are assigned).
//! * One failing request never loses another's acknowledged write: when SQLite rolls back
//!   the whole open transaction (full disk, I/O error), the writes it held are applied again
//!   from the batch that records them (`batch.rs`, `group_commit.rs`).
//! * An import keeps every event that can be stored and reports each one that cannot
//!   ([`ImportDocument`]); the reference skipped them silently.
//! * The last-heartbeat cache is cleared whenever the data it mirrors changes: on insert,
//!   on event delete and on bucket delete, so a deleted-and-recreated bucket merges correctly.
//! * A missing event is [`DatastoreError::NoSuchEvent`] (the reference answered an internal
//!   error); event counts honour `start`/`end`; events before 1970 are returned like others.
//! * Rows whose stored `data` is not a JSON object are skipped with a warning.
//! * A second process opening the same file fails at once with [`DatastoreError::Locked`],
//!   before it looks at or changes any file (`lifecycle/`).
//!
//! # When a hand-off polls instead of sleeping
//! Handing a request to the worker and the answer back puts a thread to sleep and wakes it
//! twice per request; on a virtual machine each wake-up of an idle CPU costs more than a
//! heartbeat's whole work. So while one client sends quick requests back to back (a
//! watcher's queue being flushed, a script), the worker polls its queue briefly after each
//! answer and the caller polls briefly for its answer, and such requests cross threads
//! without sleeping. Watchers at one heartbeat a second and many connections at once never
//! make either side poll: there it would only burn CPU (`handoff.rs` has the rules).
//!
//! # Heartbeats
//! A heartbeat `H` merges into the bucket's last event `L` iff `H.data == L.data` and
//! `L.start <= H.start <= L.end + pulsetime` (inclusive). The merge keeps `L`'s id, start
//! and data and extends its end to `max(L.end, H.end)`; otherwise `H` is stored as a new
//! event. `L` comes from a per-bucket cache, else from the database.

/// The SQL condition that makes an event "long" (longer than `schema::LONG_EVENT_NS`, one
/// hour), as text for `concat!`: SQLite uses the partial index `events_long_by_end` only for
/// a query that repeats the index's condition word for word, so the index and every query
/// that uses it take it from here (a test checks the number against `LONG_EVENT_NS`).
macro_rules! long_event_condition {
    () => {
        "endtime - starttime > 3600000000000"
    };
}

mod answer;
mod backup;
mod batch;
mod encryption;
mod error;
mod faults;
mod fence;
mod files;
mod group_commit;
mod handoff;
mod import_document;
mod job;
mod legacy_import;
mod lifecycle;
mod live_salvage;
mod new_event;
mod open;
mod privacy;
mod range_read;
mod request;
mod rewrite;
mod salvage;
mod schedule;
mod schema;
mod shared;
mod store;
mod worker;
mod write_listeners;

pub use answer::{Answer, AnswerFuture};
pub use aw_models::raw_event::{EventRows, RawEvent, TextRow, TextRows};
pub use backup::{copy_verified, verify_backup, BackupSource};
pub use encryption::{
    convert, Converted, DbPassword, Direction, AVAILABLE as ENCRYPTION_AVAILABLE,
};
pub use error::{DatastoreError, Failure, Result};
pub use faults::Faults;
pub use files::{with_suffix, FILE_TIME_FORMAT};
pub use import_document::{parse_import_document, ImportDocument, ImportProblem, MAX_PROBLEMS};
pub use lifecycle::{
    announce, announcement_path, list_backups, lock_file, rotate_backups, rotation,
    withdraw_announcement, write_backup, BackupFile, BackupKind, DatabaseFile, KEEP_BEFORE_REWRITE,
};
pub use new_event::NewEvent;
pub use open::OpenOptions;
pub use privacy::{PrivacyReport, PrivacySample, RuleReport, PRIVACY_FILTERS_KEY};
pub use salvage::{damage_marker, salvage, LostRange, SalvageReport};
pub use schedule::{COMMIT_INTERVAL, IDLE_COMMIT_DELAY, MAX_UNCOMMITTED_EVENTS};
pub use schema::SCHEMA_VERSION;
pub use write_listeners::{Touched, WriteListener};

/// The folder beside the database where backups go unless configured otherwise.
pub const BACKUP_FOLDER: &str = "backups";

pub use store::{created_from_text, Merge, RangeDeletion};

use aw_models::{timestamp, Bucket, Event};
use chrono::{DateTime, Utc};
use crossbeam_channel::Sender;
use std::collections::HashMap;
use std::path::Path;
use tokio::sync::oneshot;

use open::{open_store, Opened};
use request::{Request, RowSink};
use shared::{BucketMap, Shared};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The worker held by [`Datastore::hold_worker`]: it goes on when this is dropped.
#[doc(hidden)]
#[derive(Debug)]
pub struct WorkerHold {
    _release: crossbeam_channel::Sender<()>,
}

/// The parts of [`Datastore::stream_events`], a step of the read at a time.
pub struct TextParts(crossbeam_channel::Receiver<Result<TextRows>>);

impl Iterator for TextParts {
    type Item = Result<TextRows>;

    /// Blocks until the worker has read the next rows; `None` once all were handed over.
    fn next(&mut self) -> Option<Result<TextRows>> {
        self.0.recv().ok()
    }
}

/// A cloneable handle to the datastore worker. Dropping the last handle makes the worker
/// commit and stop; [`Datastore::close`] does the same and tells when it is done.
#[derive(Clone)]
pub struct Datastore {
    requests: Sender<Request>,
    /// Buckets, counts and spans the worker publishes (read without a round trip).
    shared: Arc<Shared>,
}

/// Nanoseconds of an optional bound, clamped to the storable range: a bound before 1677 or
/// after 2262 selects the same events as the range's extreme.
fn bound_ns(t: Option<DateTime<Utc>>) -> Option<i64> {
    t.as_ref().map(timestamp::to_ns_saturating)
}

impl Datastore {
    /// Opens (creating and migrating as needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Datastore> {
        Datastore::open_with(path, OpenOptions::default())
    }

    /// Opens the database at `path` with options: claims the file
    /// ([`DatabaseFile::claim`]: fails at once with [`DatastoreError::Locked`] when another
    /// server has it) and opens it ([`DatabaseFile::open`]).
    pub fn open_with(path: &Path, options: OpenOptions) -> Result<Datastore> {
        DatabaseFile::claim(path)?.open(options)
    }

    /// Starts the worker on `file`; the [`Opening`] says when it is ready (and reports every
    /// failure to open: read-only, newer schema, damage that could not be salvaged).
    fn start(file: DatabaseFile, options: OpenOptions) -> Result<Opening> {
        let (requests, receiver) = crossbeam_channel::unbounded();
        let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
        let shared = Arc::new(Shared::default());
        let published = shared.clone();
        let worker = std::thread::Builder::new()
            .name("aw-datastore".into())
            .spawn(move || {
                // Requests wait on this thread: it takes the CPU back at once when it wakes.
                aw_platform::sched::short_slices();
                let opened = open_or_salvage(&file, &options, &published);
                // The password (if any) is no longer needed once the file is open: wiped now,
                // not when the worker ends; unless a salvage while serving may reopen it.
                let salvager = options.salvage_on_damage.then(|| live_salvage::Salvager {
                    options: options.clone(),
                    failed_at: std::cell::Cell::new(None),
                });
                drop(options);
                match opened {
                    Ok(Opened {
                        store,
                        batch,
                        legacy,
                        backup_source,
                        derived,
                    }) => {
                        published
                            .derived
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .opened(file.path(), derived);
                        *published
                            .backup_source
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = backup_source;
                        published.worker_alive.store(true, Ordering::Release);
                        let _ = ready_tx.send(Ok(legacy));
                        let closing = worker::run(
                            store,
                            receiver,
                            &published,
                            &file,
                            batch,
                            salvager.as_ref(),
                        );
                        published.worker_alive.store(false, Ordering::Release);
                        // The lock is released only after the connection is closed (`run` has
                        // dropped the store), and `close` is answered only after both.
                        if let Some(worker::Closed {
                            reply,
                            result,
                            data_version,
                        }) = closing
                        {
                            // With the connection closed and the lock still held: the
                            // state is saved for the file exactly as this stop leaves it.
                            let mut derived = published
                                .derived
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            if result.is_ok() {
                                derived.save_at_stop(data_version);
                            } else {
                                crate::lifecycle::derived::discard(file.path());
                            }
                            drop(derived);
                            drop(file);
                            let _ = reply.send(result);
                        }
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })
            .map_err(|e| {
                let mut failure = crate::error::Failure::from(&e);
                failure.message = format!("cannot start the worker thread: {e}");
                DatastoreError::Io(failure)
            })?;
        *shared
            .worker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(worker);
        Ok(Opening {
            datastore: Datastore { requests, shared },
            ready: ready_rx,
        })
    }

    /// The connection for backups opened with the database (`OpenOptions::backup_source`);
    /// `None` when none was asked for, or after the first call.
    pub fn take_backup_source(&self) -> Option<BackupSource> {
        self.shared
            .backup_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// What the last salvage while serving brought back (`live_salvage.rs`); `None` while
    /// the file was never found damaged.
    pub fn salvage_report(&self) -> Option<SalvageReport> {
        self.shared
            .salvaged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The one-time import of the Python server's database into a new file: read here, then
    /// an ordinary import request (the worker owns every transaction). A failure is logged
    /// and the server starts with what was imported; it is not tried again (the file is no
    /// longer new).
    fn import_legacy(&self, legacy: &Path) {
        log::info!(
            "Importing the aw-server (Python) database {}",
            legacy.display()
        );
        let result = legacy_import::read_each(legacy, |bucket, events| {
            self.import_rows(vec![(bucket, events)]).wait()
        });
        match result {
            Ok(events) => log::info!("Legacy import done: {events} events"),
            Err(e) => log::error!("Legacy import failed: {e}"),
        }
    }

    /// The state saved beside the database at the last clean stop (by the producer given
    /// to [`Datastore::keep_derived_state_at_stop`]), if the database is exactly as that stop
    /// left it: no write since by any program, no journal replayed, no migration, no other
    /// file put in its place. Once per open; `None` afterwards, before the open is done,
    /// and whenever the state is not known to be valid (`lifecycle/derived.rs`).
    pub fn take_derived_state(&self) -> Option<Vec<u8>> {
        self.shared
            .derived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Whether [`Datastore::take_derived_state`] may have state to hand back: the open
    /// found the database exactly as the last clean stop left it (the state itself is
    /// read and checked only when taken).
    pub fn has_derived_state(&self) -> bool {
        self.shared
            .derived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_pending()
    }

    /// Makes the clean stop ([`Datastore::close`], once everything is committed and the
    /// connection closed) keep what `producer` makes, for the next open to hand back. The
    /// producer gets the most bytes it may return: a twentieth of the database file. The
    /// state must be worked out from the data as committed; it is encrypted with an
    /// encrypted database's key, and never copied into backups or sync folders.
    pub fn keep_derived_state_at_stop(&self, producer: crate::lifecycle::derived::Producer) {
        self.shared
            .derived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keep_at_stop(producer);
    }

    fn ask<T>(&self, make: impl FnOnce(request::Reply<T>) -> Request) -> Answer<T> {
        let (tx, rx) = oneshot::channel();
        let request = make(tx);
        let poll = self.shared.handoff.sending(request.is_quick());
        let waiting = answer::Waiting(self.shared.clone());
        match self.requests.send(request) {
            Ok(()) => Answer::asked(rx, poll, waiting),
            Err(_) => Answer::ready(DatastoreError::WorkerGone),
        }
    }

    /// Makes `listener` hear of every write from now on, before the write is answered (see
    /// [`WriteListener`]): how a cache of answers derived from the events stays correct.
    pub fn add_write_listener(&self, listener: Arc<dyn WriteListener>) {
        self.shared.listeners.add(listener);
    }

    /// How many long requests (event reads and imports too large for one step) the worker
    /// has in progress. Read without asking the worker, for status; a sample, so a test that
    /// must know the order of the worker's turns reads [`Datastore::requests_between_steps`].
    pub fn jobs_in_progress(&self) -> usize {
        self.shared.jobs_in_progress.load(Ordering::Acquire)
    }

    /// How many requests the worker has taken while a long request was unfinished, counted
    /// before it answers them. The worker's own record of its turns, so a caller that is the
    /// only one sending can prove that its request was answered between a long request's
    /// steps, not after its end, without racing the scheduler.
    pub fn requests_between_steps(&self) -> u64 {
        self.shared.requests_between_steps.load(Ordering::Acquire)
    }

    /// Answers from the published state, like the worker would (or `WorkerGone` after it
    /// stopped).
    fn read_published<T>(&self, read: impl FnOnce(&BucketMap) -> Result<T>) -> Answer<T> {
        if !self.shared.worker_alive.load(Ordering::Acquire) {
            return Answer::ready(DatastoreError::WorkerGone);
        }
        Answer::done(read(&self.shared.buckets.load()))
    }

    /// Creates a bucket; its `events`, if any, are inserted as new events.
    /// Fails with [`DatastoreError::BucketAlreadyExists`] when the id is taken.
    pub fn create_bucket(&self, bucket: &Bucket) -> Answer<()> {
        let events = match bucket.events.as_deref().map(NewEvent::from_events) {
            Some(Err(e)) => return Answer::ready(e),
            Some(Ok(events)) => events,
            None => Vec::new(),
        };
        let mut bucket = bucket.clone();
        bucket.events = None;
        self.ask(|r| Request::CreateBucket(Box::new(bucket), events, r))
    }

    /// Deletes a bucket and all its events.
    pub fn delete_bucket(&self, bucket_id: &str) -> Answer<()> {
        self.ask(|r| Request::DeleteBucket(bucket_id.to_string(), r))
    }

    /// One bucket, with `metadata` (first start, last end).
    pub fn get_bucket(&self, bucket_id: &str) -> Answer<Bucket> {
        self.read_published(|buckets| {
            buckets
                .get(bucket_id)
                .map(|b| b.to_bucket())
                .ok_or_else(|| DatastoreError::NoSuchBucket(bucket_id.to_string()))
        })
    }

    /// Every bucket by id.
    pub fn get_buckets(&self) -> Answer<HashMap<String, Bucket>> {
        self.read_published(|buckets| {
            Ok(buckets
                .iter()
                .map(|(name, b)| (name.clone(), b.to_bucket()))
                .collect())
        })
    }

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
        self.ask(|reply| Request::GetEvents {
            bucket: bucket_id.to_string(),
            start: bound_ns(start),
            end: bound_ns(end),
            limit,
            clip: true,
            reply: RowSink::Whole(reply),
        })
    }

    /// [`Datastore::get_events`] without a limit, for the query engine: handed over a step
    /// at a time (each part as soon as it is read, so the caller works on it while the
    /// worker reads the rest), newest first and clipped, with the data texts as stored
    /// ([`TextRows`]). An error ends the sequence; dropping it stops the read.
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
        let request = Request::GetEvents {
            bucket: bucket_id.to_string(),
            start: bound_ns(start),
            end: bound_ns(end),
            limit: None,
            clip,
            reply: RowSink::Texts(parts),
        };
        if let Err(crossbeam_channel::SendError(request)) = self.requests.send(request) {
            request.refuse(DatastoreError::WorkerGone);
        }
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

    /// Applies the enabled rules of the `privacy_filters` setting to every stored event
    /// (dropping or redacting, all or nothing), or with `dry_run` only counts; answers per
    /// rule what it did (see `privacy.rs`: on the past, a pattern that cannot be evaluated
    /// counts as no match).
    pub fn apply_privacy_to_past(&self, dry_run: bool) -> Answer<PrivacyReport> {
        self.ask(|reply| Request::ApplyPrivacy { dry_run, reply })
    }

    /// Commits, checkpoints the WAL into the file and truncates it, and zeroes the journal
    /// of acknowledged writes: after a rewrite that removed text (the privacy rules), none
    /// of it stays readable beside the database.
    pub fn scrub(&self) -> Answer<()> {
        self.ask(Request::Scrub)
    }

    /// Renames bucket `bucket_id` to `new_id` and/or moves it to host `new_hostname`.
    /// Fails with [`DatastoreError::BucketAlreadyExists`] when `new_id` is taken.
    pub fn rename_bucket(
        &self,
        bucket_id: &str,
        new_id: Option<&str>,
        new_hostname: Option<&str>,
    ) -> Answer<()> {
        self.ask(|reply| Request::RenameBucket {
            bucket: bucket_id.to_string(),
            name: new_id.map(str::to_string),
            hostname: new_hostname.map(str::to_string),
            reply,
        })
    }

    /// Moves every event of bucket `from` into bucket `into` (events `into` holds already,
    /// same start, end and data, are not doubled) and deletes `from`, all or nothing.
    /// Fails with [`DatastoreError::InvalidEvent`] when their types differ.
    pub fn merge_buckets(&self, from: &str, into: &str) -> Answer<Merge> {
        self.ask(|reply| Request::MergeBuckets {
            from: from.to_string(),
            into: into.to_string(),
            reply,
        })
    }

    /// Deletes what lies in `[start, end)` of each of `buckets`, all or nothing: events
    /// inside are deleted, events across an edge are cut at it (see
    /// `store/range_delete.rs`); with `dry_run`, nothing changes and the answer says what
    /// would. The next heartbeat never extends an event this cut. Fails with
    /// [`DatastoreError::InvalidEvent`] unless `start < end`, and with
    /// [`DatastoreError::NoSuchBucket`] (changing nothing) when one is missing. With
    /// `expect` (what a preview counted, deleted and cut), any other count fails with
    /// [`DatastoreError::Changed`] and changes nothing: what the user saw is what goes.
    pub fn delete_range(
        &self,
        buckets: &[String],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        dry_run: bool,
        expect: Option<u64>,
    ) -> Answer<RangeDeletion> {
        let (lo, hi) = (
            timestamp::to_ns_saturating(&start),
            timestamp::to_ns_saturating(&end),
        );
        if lo >= hi {
            return Answer::ready(DatastoreError::InvalidEvent(
                "the range is empty: start must be before end".into(),
            ));
        }
        self.ask(|reply| Request::DeleteRange {
            buckets: buckets.to_vec(),
            lo,
            hi,
            dry_run,
            expect,
            reply,
        })
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
            let published = self
                .shared
                .buckets
                .load()
                .get(bucket_id)
                .and_then(|b| b.count());
            if let Some(n) = published {
                return self.read_published(|_| Ok(n));
            }
        }
        self.ask(|r| Request::CountEvents(bucket_id.to_string(), bound_ns(start), bound_ns(end), r))
    }

    /// Imports buckets with their events: new buckets are created, existing ones get the
    /// events they do not have yet. Event ids in the documents are ignored.
    pub fn import_buckets(&self, buckets: Vec<Bucket>) -> Answer<()> {
        let mut rows = Vec::with_capacity(buckets.len());
        for mut bucket in buckets {
            let events = match bucket.events.take().map(|e| NewEvent::from_events(&e)) {
                Some(Err(e)) => return Answer::ready(e),
                Some(Ok(events)) => events,
                None => Vec::new(),
            };
            rows.push((bucket, events));
        }
        self.import_rows(rows)
    }

    /// [`Datastore::import_buckets`] for buckets whose events are already converted, e.g. by
    /// [`parse_import_document`].
    pub fn import_rows(&self, buckets: Vec<(Bucket, Vec<NewEvent>)>) -> Answer<()> {
        self.ask(|r| Request::Import(buckets, r))
    }

    /// The JSON text stored under `key`, or [`DatastoreError::NoSuchKey`].
    pub fn get_key_value(&self, key: &str) -> Answer<String> {
        self.ask(|r| Request::GetKeyValue(key.to_string(), r))
    }

    /// Stores `value` (JSON text) under `key`.
    pub fn set_key_value(&self, key: &str, value: &str) -> Answer<()> {
        self.ask(|r| Request::SetKeyValue(key.to_string(), value.to_string(), r))
    }

    /// Deletes `key`; a missing key is not an error.
    pub fn delete_key_value(&self, key: &str) -> Answer<()> {
        self.ask(|r| Request::DeleteKeyValue(key.to_string(), r))
    }

    /// Every `(key, JSON text)` whose key starts with `prefix`.
    pub fn get_key_values(&self, prefix: &str) -> Answer<Vec<(String, String)>> {
        self.ask(|r| Request::GetKeyValues(prefix.to_string(), r))
    }

    /// Commits everything written so far; answers after the commit.
    pub fn force_commit(&self) -> Answer<()> {
        self.ask(Request::ForceCommit)
    }

    /// Holds the worker between two of its turns until the returned [`WorkerHold`] is
    /// dropped: nothing runs meanwhile, so the database's files (and the journal beside
    /// them) are exactly what a kill at this instant would leave, and a copy of them is
    /// that kill's outcome. For tests of the file's life (`tests/file_life.rs`); a long
    /// hold stalls every request.
    #[doc(hidden)]
    pub fn hold_worker(&self) -> Result<WorkerHold> {
        let (release, held) = crossbeam_channel::bounded(0);
        self.ask(|r| Request::Hold(r, held)).wait()?;
        Ok(WorkerHold { _release: release })
    }

    /// Commits and stops the worker; returns once the final commit is done, the file's
    /// lock released and the worker thread has ended. Later calls on any handle fail with
    /// [`DatastoreError::WorkerGone`].
    ///
    /// The thread is waited for, not only its answer: after answering it still frees what
    /// it holds and runs its thread-exit cleanup (SQLCipher's OpenSSL keeps per-thread
    /// state), and a process that exits meanwhile runs OpenSSL's global cleanup beside it:
    /// an encrypted server once aborted at exit with a corrupted heap.
    pub fn close(&self) -> Result<()> {
        let closed = self.ask(Request::Close).wait();
        let worker = self
            .shared
            .worker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        // Only a worker that has left its loop is waited for: a close that failed while
        // the worker still runs must not hang the caller.
        if let Some(worker) = worker {
            if self.shared.worker_alive.load(Ordering::Acquire) {
                *self
                    .shared
                    .worker
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(worker);
            } else {
                let _ = worker.join();
            }
        }
        closed
    }
}

impl DatabaseFile {
    /// Opens the database for serving: salvages it first when a damage marker asks for it
    /// or the open meets damage (with `salvage_on_damage`), applies the journal's held
    /// writes, and starts the worker, which owns the file (and its lock) from then on.
    pub fn open(self, options: OpenOptions) -> Result<Datastore> {
        self.open_in_background(options)?.wait()
    }

    /// [`DatabaseFile::open`] on the worker thread while the caller goes on: a server builds
    /// its routes meanwhile (the two took 2.3 and 0.5 ms one after the other on an empty
    /// database).
    pub fn open_in_background(self, options: OpenOptions) -> Result<Opening> {
        Datastore::start(self, options)
    }
}

/// A database its worker is opening ([`DatabaseFile::open_in_background`]).
pub struct Opening {
    datastore: Datastore,
    ready: crossbeam_channel::Receiver<Result<Option<std::path::PathBuf>>>,
}

impl Opening {
    /// A handle to the datastore being opened, to hand out before it is ready: requests sent
    /// on it are answered once the open is done, and fail with
    /// [`DatastoreError::WorkerGone`] if it fails.
    pub fn handle(&self) -> Datastore {
        self.datastore.clone()
    }

    /// Waits until the database is open (then starts the import of the Python server's
    /// database, when this file was just made and that one exists).
    pub fn wait(self) -> Result<Datastore> {
        let legacy = self
            .ready
            .recv()
            .unwrap_or(Err(DatastoreError::WorkerGone))?;
        if let Some(legacy) = legacy {
            self.datastore.import_legacy(&legacy);
        }
        Ok(self.datastore)
    }
}

/// [`open_store`], with the salvage `options.salvage_on_damage` asks for: when the marker
/// of a damage met while serving is there, and when the open itself meets damage.
fn open_or_salvage(
    file: &DatabaseFile,
    options: &OpenOptions,
    shared: &Arc<Shared>,
) -> Result<Opened> {
    let path = file.path();
    if options.salvage_on_damage {
        file.salvage_if_marked(options.password.as_ref())?;
    }
    match open_store(path, options, shared.clone(), true) {
        Err(DatastoreError::Damaged(e)) if options.salvage_on_damage && file.is_locked() => {
            log::error!(
                "The database {} is damaged ({e}); salvaging what can be read",
                path.display()
            );
            file.salvage(options.password.as_ref())?;
            open_store(path, options, shared.clone(), true)
        }
        other => other,
    }
}
