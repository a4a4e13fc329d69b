//! A rewrite of stored history that runs in steps, all or nothing: a range deletion over
//! all history (`store/range_delete.rs`) or the privacy rules applied to the past
//! (`store/privacy_past.rs`).
//!
//! Between its steps a rewrite keeps its row changes out of the batch
//! ([`Batch::take_provisional`], which also appends them to the journal as provisional
//! records), so the requests answered in between seal only theirs; its last step puts them
//! back and seals them with its answer ([`Batch::seal_rewrite`]), and a step that fails
//! puts them back unsealed, so the worker's check undoes them with it. Its rows live in
//! the open transaction meanwhile: the worker commits nothing while it runs, and a new
//! transaction under it (another request's failure rolled everything back and applied the
//! sealed changes again) ends it with an error, nothing changed ([`Rewrite::began_in`]).
//! Which requests wait for it is `fence.rs`'s.

use std::time::{Duration, Instant};

use crate::batch::{Batch, Change};
use crate::error::DatastoreError;
use crate::request::Reply;
use crate::schedule::Commit;
use crate::store::{PrivacyRun, RangeDeletionRun, Store};

/// What a rewrite does, and where its answer goes.
pub(crate) enum Run {
    /// A range deletion.
    DeleteRange(RangeDeletionRun, Reply<crate::RangeDeletion>),
    /// The privacy rules applied to the past.
    Privacy(PrivacyRun, Reply<crate::PrivacyReport>),
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

    /// The rows of the buckets it reads or writes; `None` for all.
    pub(crate) fn bucket_rows(&self) -> Option<Vec<i64>> {
        match &self.run {
            Run::DeleteRange(run, _) => Some(run.buckets().iter().map(|&(_, row)| row).collect()),
            Run::Privacy(..) => None,
        }
    }

    /// Whether it only counts.
    pub(crate) fn is_dry_run(&self) -> bool {
        match &self.run {
            Run::DeleteRange(run, _) => run.is_dry_run(),
            Run::Privacy(run, _) => run.is_dry_run(),
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
        }
    }

    /// Runs one step of at most `time` (at least one chunk). A step that is not the last
    /// keeps its changes aside; the last seals all of them with the answer, and a failed
    /// one leaves them unsealed for the worker to undo. Either way the answered step asks
    /// for a commit.
    pub(crate) fn step(
        mut self: Box<Self>,
        store: &mut Store,
        batch: &mut Batch,
        time: Duration,
    ) -> (Stepped, Commit) {
        let deadline = Instant::now() + time;
        let stepped = match &mut self.run {
            Run::DeleteRange(run, _) => store.step_range_deletion(batch, run, deadline),
            Run::Privacy(run, _) => store.step_privacy_run(batch, run, deadline),
        }
        .and_then(|done| {
            self.changes.extend(batch.take_provisional(self.number)?);
            Ok(done)
        });
        if let Ok(false) = stepped {
            return (Stepped::More(self), Commit::Later);
        }
        let Rewrite {
            run,
            changes,
            number,
            ..
        } = *self;
        // Unsealed again: sealed with the answer, or (a failed step's own changes among
        // them) undone together by the worker's check.
        batch.put_back(changes);
        match run {
            Run::DeleteRange(run, reply) => {
                let result = stepped
                    .and_then(|_| store.finish_range_deletion(run))
                    .and_then(|done| batch.seal_rewrite(number).map(|()| done));
                store.note(&result);
                let _ = reply.send(result);
            }
            Run::Privacy(run, reply) => {
                let result = stepped
                    .map(|_| store.finish_privacy_run(run))
                    .and_then(|report| batch.seal_rewrite(number).map(|()| report));
                store.note(&result);
                let _ = reply.send(result);
            }
        }
        (Stepped::Answered, Commit::Now)
    }
}
