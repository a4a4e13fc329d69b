//! A rewrite of stored history that runs in steps, all or nothing: a range deletion over
//! all history (`store/range_delete.rs`), the privacy rules applied to the past
//! (`store/privacy_past.rs`), a bucket merged into another (`store/merge.rs`), or buckets
//! compacted (`store/compaction.rs`).
//!
//! Between its steps a rewrite keeps its row changes out of the batch
//! ([`Batch::take_provisional`], which also appends them to the journal as provisional
//! records), so the requests answered in between seal only theirs; its last step puts them
//! back and seals them with its answer ([`Batch::seal_rewrite`]), and a step that fails
//! puts them back unsealed, so the worker's check undoes them with it. Its rows live in
//! the open transaction meanwhile: the worker commits nothing while it runs, and a new
//! transaction under it (another request's failure rolled everything back and applied the
//! sealed changes again) ends it with an error, nothing changed ([`Rewrite::began_in`]).
//! Which requests wait for it is `worker/fence.rs`'s.

use std::time::{Duration, Instant};

use crate::error::{DatastoreError, Result};
use crate::store::Change;
use crate::store::{CompactionRun, MergeRun, PrivacyRun, RangeDeletionRun, Store};
use crate::worker::batch::Batch;
use crate::worker::reply::answer;
use crate::worker::reply::Reply;

/// What a rewrite does, and where its answer goes.
pub(crate) enum Run {
    /// A range deletion.
    DeleteRange(RangeDeletionRun, Reply<crate::RangeDeletion>),
    /// The privacy rules applied to the past.
    Privacy(PrivacyRun, Reply<crate::PrivacyReport>),
    /// A bucket merged into another.
    Merge(MergeRun, Reply<crate::Merge>),
    /// Buckets compacted.
    Compact(CompactionRun, Reply<crate::Compaction>),
}

/// A rewrite in progress.
pub(crate) struct Rewrite {
    /// What it does, and how far it got.
    pub run: Run,
    /// Its changes so far, kept out of the batch between steps.
    changes: Vec<Change>,
    /// Its number in the journal's provisional records (`Batch::rewrite_number`).
    number: u64,
    /// The transaction its rows are in (`GroupCommit::transaction`), once the worker
    /// knows it.
    transaction: Option<u64>,
}

/// What one step of a rewrite came to.
pub(crate) enum Stepped {
    /// There is more to do.
    More(Box<Rewrite>),
    /// It answered (done or failed).
    Answered,
}

impl Rewrite {
    /// A rewrite that has not run yet; `batch` numbers it.
    pub(crate) fn new(run: Run, batch: &Batch) -> Rewrite {
        Rewrite {
            run,
            changes: Vec::new(),
            number: batch.rewrite_number(),
            transaction: None,
        }
    }

    /// The buckets it reads or writes (id and row); `None` for all of them.
    pub(crate) fn buckets(&self) -> Option<&[(String, i64)]> {
        match &self.run {
            Run::DeleteRange(run, _) => Some(run.buckets()),
            Run::Merge(run, _) => Some(run.buckets()),
            Run::Compact(run, _) => Some(run.buckets()),
            Run::Privacy(..) => None,
        }
    }

    /// Whether it only counts.
    pub(crate) fn is_dry_run(&self) -> bool {
        match &self.run {
            Run::DeleteRange(run, _) => run.is_dry_run(),
            Run::Privacy(run, _) => run.is_dry_run(),
            Run::Compact(run, _) => run.is_dry_run(),
            Run::Merge(..) => false,
        }
    }

    /// The transaction its rows are in, once noted.
    pub(crate) fn transaction(&self) -> Option<u64> {
        self.transaction
    }

    /// Notes that its rows are in transaction `number` (see `GroupCommit::transaction`):
    /// if another is open at its next step, they are gone.
    pub(crate) fn began_in(&mut self, number: u64) {
        self.transaction.get_or_insert(number);
    }

    /// Puts its changes back into `batch` unsealed, for the worker's check to undo (a stop
    /// in the middle; its caller sees the worker gone).
    pub(crate) fn abandon(self, batch: &mut Batch) {
        batch.put_back(self.changes);
    }

    /// Answers it with `error` (its rows are gone already, or undone by the caller).
    pub(crate) fn refuse(self, error: DatastoreError) {
        match self.run {
            Run::DeleteRange(_, reply) => {
                let _ = reply.send(Err(error));
            }
            Run::Privacy(_, reply) => {
                let _ = reply.send(Err(error));
            }
            Run::Merge(_, reply) => {
                let _ = reply.send(Err(error));
            }
            Run::Compact(_, reply) => {
                let _ = reply.send(Err(error));
            }
        }
    }

    /// Runs one step of at most `time` (at least one chunk). A step that is not the last
    /// keeps its changes aside; the last finishes the rewrite and seals all of them with
    /// the answer, and a failed one leaves them unsealed for the worker to undo.
    pub(crate) fn step(
        mut self: Box<Self>,
        store: &mut Store,
        batch: &mut Batch,
        time: Duration,
    ) -> Stepped {
        let deadline = Instant::now() + time;
        let stepped = match &mut self.run {
            Run::DeleteRange(run, _) => store.step_range_deletion(batch.changes(), run, deadline),
            Run::Privacy(run, _) => store.step_privacy_run(batch.changes(), run, deadline),
            Run::Merge(run, _) => store.step_merge(batch.changes(), run, deadline),
            Run::Compact(run, _) => store.step_compaction(batch.changes(), run, deadline),
        };
        let stepped = match stepped {
            Ok(false) => match batch.take_provisional(self.number) {
                Ok(changes) => {
                    self.changes.extend(changes);
                    // What the step spilled into the WAL reaches the disk meanwhile.
                    store.presync_wal();
                    return Stepped::More(self);
                }
                Err(e) => Err(e),
            },
            other => other,
        };
        let Rewrite {
            run,
            changes,
            number,
            ..
        } = *self;
        let sealed = Sealing { changes, number };
        match run {
            Run::DeleteRange(run, reply) => {
                let result = stepped.and_then(|_| store.finish_range_deletion(run));
                answer(store, reply, sealed.seal(batch, result));
            }
            Run::Privacy(run, reply) => {
                let result = stepped.and_then(|_| store.finish_privacy_run(run));
                answer(store, reply, sealed.seal(batch, result));
            }
            Run::Merge(run, reply) => {
                let result = stepped.and_then(|_| store.finish_merge(batch.changes(), run));
                answer(store, reply, sealed.seal(batch, result));
            }
            Run::Compact(run, reply) => {
                let result = stepped.and_then(|_| store.finish_compaction(run));
                answer(store, reply, sealed.seal(batch, result));
            }
        }
        Stepped::Answered
    }
}

/// The changes of a rewrite that has ended, and its number.
struct Sealing {
    changes: Vec<Change>,
    number: u64,
}

impl Sealing {
    /// Puts the rewrite's changes back into `batch`, after those its last step and its
    /// finish made (journaled as provisional first): sealed with `result` when it is a
    /// success, left unsealed (for the worker's check to undo, with whatever a failed step
    /// left) when it is not.
    fn seal<T>(mut self, batch: &mut Batch, result: Result<T>) -> Result<T> {
        let result = result.and_then(|value| {
            self.changes.extend(batch.take_provisional(self.number)?);
            Ok(value)
        });
        batch.put_back(self.changes);
        result.and_then(|value| batch.seal_rewrite(self.number).map(|()| value))
    }
}
