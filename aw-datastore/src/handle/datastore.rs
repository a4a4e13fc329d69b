//! [`Datastore`], the handle: a channel sender to the worker and the state the worker
//! shares, with the reads that need no round trip and the requests about the worker itself.

use chrono::{DateTime, Utc};
use crossbeam_channel::Sender;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{DatastoreError, Result};
use crate::file::{BackupSource, SalvageReport};
use crate::handle::answer::{Answer, Waiting};
use crate::store::{BucketMap, TextRows, WriteListener};
use crate::worker::{Control, Message, Reply, Request, Shared};
use aw_models::timestamp;

/// The worker held by [`Datastore::hold_worker`]: it goes on when this is dropped.
#[doc(hidden)]
#[derive(Debug)]
pub struct WorkerHold {
    _release: crossbeam_channel::Sender<()>,
}

/// The parts of [`Datastore::stream_events`], a step of the read at a time.
pub struct TextParts(pub(super) crossbeam_channel::Receiver<Result<TextRows>>);

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
    requests: Sender<Message>,
    /// Buckets, counts and spans the worker publishes (read without a round trip).
    shared: Arc<Shared>,
}

/// Nanoseconds of an optional bound, clamped to the storable range: a bound before 1677 or
/// after 2262 selects the same events as the range's extreme.
pub(super) fn bound_ns(t: Option<DateTime<Utc>>) -> Option<i64> {
    t.as_ref().map(timestamp::to_ns_saturating)
}

impl Datastore {
    /// The handle of a worker just started (`worker/thread.rs`).
    pub(super) fn new(requests: Sender<Message>, shared: Arc<Shared>) -> Datastore {
        Datastore { requests, shared }
    }

    /// Sends what `make` makes of a reply channel to the worker; its answer comes back on
    /// that channel.
    pub(super) fn ask<T, M: Into<Message>>(&self, make: impl FnOnce(Reply<T>) -> M) -> Answer<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let message = make(tx).into();
        let poll = self.shared.handoff.sending(message.is_quick());
        let waiting = Waiting(self.shared.clone());
        match self.requests.send(message) {
            Ok(()) => Answer::asked(rx, poll, waiting),
            Err(_) => Answer::ready(DatastoreError::WorkerGone),
        }
    }

    /// Sends a request whose answer does not come back on a reply channel (a streamed
    /// read: its rows go down their own); refused at once when the worker is gone.
    pub(super) fn send(&self, request: Request) {
        if let Err(crossbeam_channel::SendError(message)) = self.requests.send(request.into()) {
            message.refuse(DatastoreError::WorkerGone);
        }
    }

    /// The bucket's event count, if the worker has published it (it counts a bucket the
    /// first time it is asked).
    pub(super) fn published_count(&self, bucket_id: &str) -> Option<u64> {
        let buckets = self.shared.published.buckets.load();
        buckets.get(bucket_id).and_then(|b| b.count())
    }

    /// Answers from the published state, like the worker would (or `WorkerGone` after it
    /// stopped).
    pub(super) fn read_published<T>(
        &self,
        read: impl FnOnce(&BucketMap) -> Result<T>,
    ) -> Answer<T> {
        if !self.shared.turns.alive.load(Ordering::Acquire) {
            return Answer::ready(DatastoreError::WorkerGone);
        }
        Answer::done(read(&self.shared.published.buckets.load()))
    }

    /// The connection for backups opened with the database (`OpenOptions::backup_source`);
    /// `None` when none was asked for, or after the first call.
    pub fn take_backup_source(&self) -> Option<BackupSource> {
        self.shared
            .left
            .backup_source
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// What the last salvage while serving brought back (`worker/live_salvage.rs`); `None` while
    /// the file was never found damaged.
    pub fn salvage_report(&self) -> Option<SalvageReport> {
        self.shared
            .left
            .salvaged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The state kept beside the database by the last run (made by the producer given to
    /// [`Datastore::keep_derived_state`]) with what every write since it was saved changed,
    /// if all of those are known: no other program wrote, no migration, no other file put
    /// in its place (`file/derived.rs`). Once per open; `None` afterwards, before the open
    /// is done, and whenever the state is not known to be valid.
    pub fn take_derived_state(&self) -> Option<crate::KeptState> {
        self.derived_slot().take()
    }

    /// Whether [`Datastore::take_derived_state`] may have state to hand back (the state
    /// itself is read and checked only when taken).
    pub fn has_derived_state(&self) -> bool {
        self.derived_slot().is_pending()
    }

    /// Keeps what `producer` makes beside the database: when [`Datastore::save_derived_state`]
    /// asks, and at the clean stop ([`Datastore::close`], once everything is committed and
    /// the connection closed), for the next open to hand back. The producer gets the most
    /// bytes it may return (a twentieth of the database file, at least 16 MiB). The state
    /// must be worked out from the data as the writes left it, hearing of every later write
    /// (a [`WriteListener`]); it is encrypted with an encrypted database's key, and never
    /// copied into backups or sync folders.
    pub fn keep_derived_state(&self, producer: crate::Producer) {
        self.derived_slot().keep(producer);
        self.shared
            .published
            .derived_kept
            .store(true, Ordering::Release);
    }

    /// Saves what the producer given to [`Datastore::keep_derived_state`] makes now, so a
    /// start after a crash finds it (with what the writes since changed). Blocks for the
    /// producer's time and the file's write: call it from a thread of its own. Whether it
    /// was saved (not without a producer or a journal).
    pub fn save_derived_state(&self) -> Result<bool> {
        let Some(seq) = self.ask(Control::MarkDerived).wait()? else {
            return Ok(false);
        };
        let saved = self.derived_slot().save_now(seq);
        if saved {
            self.shared
                .published
                .derived_saved
                .fetch_max(seq, Ordering::AcqRel);
        }
        Ok(saved)
    }

    fn derived_slot(&self) -> std::sync::MutexGuard<'_, crate::file::derived::Slot> {
        self.shared
            .left
            .derived
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes `listener` hear of every write from now on, before the write is answered (see
    /// [`WriteListener`]): how a cache of answers derived from the events stays correct.
    pub fn add_write_listener(&self, listener: Arc<dyn WriteListener>) {
        self.shared.published.listeners.add(listener);
    }

    /// The bytes of the journal of acknowledged writes that hold records (its header and
    /// the writes not committed yet) as of the worker's last turn; the rest of the file is
    /// room allocated ahead. For the storage report.
    pub fn journal_used(&self) -> u64 {
        self.shared.turns.journal_used.load(Ordering::Relaxed)
    }

    /// How many long requests (event reads and imports too large for one step) the worker
    /// has in progress. Read without asking the worker, for status; a sample, so a test that
    /// must know the order of the worker's turns reads [`Datastore::requests_between_steps`].
    pub fn jobs_in_progress(&self) -> usize {
        self.shared.turns.jobs_in_progress.load(Ordering::Acquire)
    }

    /// How many requests wait in the worker's queue, not yet taken: counted once each is in
    /// the queue, so a test that holds the worker can know that a request sent from another
    /// thread (a `close`, which blocks its caller) is there before it lets the worker go.
    #[doc(hidden)]
    pub fn queued_requests(&self) -> usize {
        self.requests.len()
    }

    /// How many requests the worker has taken while a long request was unfinished, counted
    /// before it answers them. The worker's own record of its turns, so a caller that is the
    /// only one sending can prove that its request was answered between a long request's
    /// steps, not after its end, without racing the scheduler.
    pub fn requests_between_steps(&self) -> u64 {
        self.shared
            .turns
            .requests_between_steps
            .load(Ordering::Acquire)
    }

    /// Commits everything written so far; answers after the commit.
    pub fn force_commit(&self) -> Answer<()> {
        self.ask(Control::ForceCommit)
    }

    /// Holds the worker between two of its turns until the returned [`WorkerHold`] is
    /// dropped: nothing runs meanwhile, so the database's files (and the journal beside
    /// them) are exactly what a kill at this instant would leave, and a copy of them is
    /// that kill's outcome. For tests of the file's life (`tests/file_life.rs`); a long
    /// hold stalls every request.
    #[doc(hidden)]
    pub fn hold_worker(&self) -> Result<WorkerHold> {
        let (release, held) = crossbeam_channel::bounded(0);
        self.ask(|r| Control::Hold(r, held)).wait()?;
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
        let closed = self.ask(Control::Close).wait();
        let worker = self
            .shared
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        // Only a worker that has left its loop is waited for: a close that failed while
        // the worker still runs must not hang the caller.
        if let Some(worker) = worker {
            if self.shared.turns.alive.load(Ordering::Acquire) {
                *self
                    .shared
                    .thread
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(worker);
            } else {
                let _ = worker.join();
            }
        }
        closed
    }
}
