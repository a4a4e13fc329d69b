//! Long requests the worker runs in steps, answering other requests in between.
//!
//! A year-long event read or a large import would otherwise hold the single worker for up
//! to a second while every heartbeat waits behind it. Each step does a bounded amount of
//! work (reads: `schedule::STEP_TIME` or [`READ_CHUNK_ROWS`] rows, whichever comes first; imports:
//! the same read steps for the events an existing bucket already holds in the imported span,
//! then [`IMPORT_CHUNK_EVENTS`] events per step), so a small request waits at most about one
//! step.
//!
//! An import's inserts do not count toward the 100-events commit trigger (that would fsync
//! after every step); the import commits when it is done, and the 15 s rule and the batch
//! size bound ([`crate::worker::schedule::MAX_BATCH_BYTES`]) still apply.
//! A crash mid-import loses only the uncommitted part, and importing the file again adds
//! exactly what is missing.
//!
//! A rewrite of stored history (a range deletion, a merge, the privacy rules applied to the
//! past) is all or nothing instead (`worker/rewrite.rs`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::new_event::NewEvent;
use crate::store::range_read::RangeRead;
use crate::store::{ImportBucket, Reclaimed, Store};
use crate::worker::batch::Batch;
use crate::worker::reply::{answer, Reply, RowSink};
use crate::worker::rewrite::{self, Rewrite};
use crate::worker::schedule::Commit;

/// Rows read per step of a long read at most (a fast machine reaches this first).
pub(crate) const READ_CHUNK_ROWS: usize = 4_000;
/// Events inserted per step of an import (about a millisecond of work).
pub(crate) const IMPORT_CHUNK_EVENTS: usize = 1_000;

/// What a step of a job left: the job, if it is not finished, and what the step's writes
/// mean for the commit (the worker applies it with `schedule::note_changes`; a job does
/// not decide commits itself).
pub(crate) struct Stepped {
    /// The job, to continue later; `None` once it answered.
    pub job: Option<Job>,
    /// The step's commit intent.
    pub commit: Commit,
}

impl Stepped {
    /// The job goes on; this step asks for no commit.
    pub(crate) fn more(job: Job) -> Stepped {
        Stepped {
            job: Some(job),
            commit: Commit::Later,
        }
    }

    /// Nothing goes on (the request was answered), with this commit intent.
    pub(crate) fn done(commit: Commit) -> Stepped {
        Stepped { job: None, commit }
    }
}

/// A request in progress.
pub(crate) enum Job {
    /// An event read too large for one step.
    Read(RangeRead, RowSink),
    /// An import, per bucket: first the read of the events already stored (existing
    /// buckets), then the inserts, each list reversed so chunks pop off the end.
    Import(VecDeque<ImportBucket>, Reply<()>),
    /// A rewrite of stored history, all or nothing (`worker/rewrite.rs`).
    Rewrite(Box<Rewrite>),
    /// Free pages given back to the file system (`store/reclaim.rs`): what it did so far.
    Reclaim(Reclaimed, Reply<Reclaimed>),
}

impl Job {
    /// Starts a read: runs its first step (of at most `time`), and answers at once if that
    /// was all of it.
    pub(crate) fn read(
        store: &mut Store,
        read: Result<RangeRead>,
        reply: RowSink,
        time: Duration,
    ) -> Stepped {
        match read {
            Ok(read) => step_read(store, read, reply, time),
            Err(e) => {
                store.note_error(&e);
                reply.fail(e);
                Stepped::done(Commit::Later)
            }
        }
    }

    /// Starts an import: creates buckets, then reads what existing buckets already hold and
    /// inserts the rest, in steps.
    pub(crate) fn import(
        store: &mut Store,
        batch: &mut Batch,
        buckets: Vec<(aw_models::Bucket, Vec<NewEvent>)>,
        reply: Reply<()>,
        time: Duration,
    ) -> Stepped {
        match store.prepare_import(batch.changes(), buckets) {
            Ok(left) => {
                let left = left
                    .into_iter()
                    .map(|mut b| {
                        b.events.reverse();
                        b
                    })
                    .collect();
                step_import(store, batch, left, reply, time)
            }
            Err(e) => {
                store.note_error(&e);
                let _ = reply.send(Err(e));
                Stepped::done(Commit::Now)
            }
        }
    }

    /// Starts a range deletion (`store/range_delete.rs`) and runs its first step (of at
    /// most `time`), which answers at once if that was all of it.
    pub(crate) fn delete_range(
        store: &mut Store,
        batch: &mut Batch,
        (buckets, lo, hi): (&[String], i64, i64),
        (dry_run, expect): (bool, Option<u64>),
        reply: Reply<crate::RangeDeletion>,
        time: Duration,
    ) -> Stepped {
        let run = store.start_range_deletion(buckets, lo, hi, dry_run, expect);
        Job::rewrite(store, batch, run, reply, rewrite::Run::DeleteRange, time)
    }

    /// Starts compacting `buckets` (`store/compaction.rs`), as [`Job::delete_range`].
    pub(crate) fn compact(
        store: &mut Store,
        batch: &mut Batch,
        asked: crate::worker::asked::CompactionAsked,
        time: Duration,
    ) -> Stepped {
        let run = store.start_compaction(&asked.buckets, asked.dry_run, asked.expect);
        Job::rewrite(store, batch, run, asked.reply, rewrite::Run::Compact, time)
    }

    /// Starts applying the privacy or the retention rules to the past
    /// (`store/privacy_past.rs`) and runs its first step, as [`Job::delete_range`].
    pub(crate) fn apply_rules(
        store: &mut Store,
        batch: &mut Batch,
        asked: crate::worker::asked::RulesAsked,
        time: Duration,
    ) -> Stepped {
        use crate::worker::asked::Rules;
        let run = match asked.rules {
            Rules::Privacy => store.start_privacy_run(asked.dry_run),
            Rules::Retention { now, expect } => {
                store.start_retention_run(now, asked.dry_run, expect)
            }
        };
        Job::rewrite(store, batch, run, asked.reply, rewrite::Run::Privacy, time)
    }

    /// Starts merging bucket `from` into `into` (`store/merge.rs`), as
    /// [`Job::delete_range`].
    pub(crate) fn merge(
        store: &mut Store,
        batch: &mut Batch,
        (from, into): (&str, &str),
        reply: Reply<crate::Merge>,
        time: Duration,
    ) -> Stepped {
        let run = store.start_merge(from, into);
        Job::rewrite(store, batch, run, reply, rewrite::Run::Merge, time)
    }

    /// Starts giving free pages back (`store/reclaim.rs`), with a first step of at most
    /// `time`.
    pub(crate) fn reclaim(store: &mut Store, reply: Reply<Reclaimed>, time: Duration) -> Stepped {
        match store.start_reclaim() {
            Ok(reclaimed) => step_reclaim(store, reclaimed, reply, time),
            Err(e) => {
                answer(store, reply, Err(e));
                Stepped::done(Commit::Later)
            }
        }
    }

    /// Starts the rewrite `run` began as (or answers its error), with a first step.
    fn rewrite<R, T>(
        store: &mut Store,
        batch: &mut Batch,
        run: Result<R>,
        reply: Reply<T>,
        kind: impl FnOnce(R, Reply<T>) -> rewrite::Run,
        time: Duration,
    ) -> Stepped {
        match run {
            Ok(run) => {
                let rewrite = Box::new(Rewrite::new(kind(run, reply), batch));
                Job::from_rewrite(rewrite.step(store, batch, time))
            }
            Err(e) => {
                answer(store, reply, Err(e));
                Stepped::done(Commit::Later)
            }
        }
    }

    /// A rewrite's step as a job's: its middle steps commit nothing (its rows are not its
    /// own yet); the step that answered asks for the commit.
    fn from_rewrite(stepped: rewrite::Stepped) -> Stepped {
        match stepped {
            rewrite::Stepped::More(rewrite) => Stepped::more(Job::Rewrite(rewrite)),
            rewrite::Stepped::Answered => Stepped::done(Commit::Now),
        }
    }

    /// Whether the job's next steps write (an import, a rewrite that is not a dry run):
    /// they run only while the store is writable, like a write request (see
    /// `GroupCommit::writable`).
    pub(crate) fn is_write(&self) -> bool {
        match self {
            Job::Read(..) => false,
            Job::Import(..) | Job::Reclaim(..) => true,
            Job::Rewrite(rewrite) => !rewrite.is_dry_run(),
        }
    }

    /// The rewrite, if the job is one.
    pub(crate) fn as_rewrite(&self) -> Option<&Rewrite> {
        match self {
            Job::Rewrite(rewrite) => Some(rewrite),
            Job::Read(..) | Job::Import(..) | Job::Reclaim(..) => None,
        }
    }

    /// Notes that a rewrite's rows are in transaction `number` (see [`Rewrite::began_in`]).
    pub(crate) fn began_in(&mut self, number: u64) {
        if let Job::Rewrite(rewrite) = self {
            rewrite.began_in(number);
        }
    }

    /// The rows of the buckets the job reads or writes; `None` for all (an import).
    pub(crate) fn bucket_rows(&self) -> Option<Vec<i64>> {
        match self {
            Job::Read(read, _) => Some(vec![read.bucketrow()]),
            Job::Import(..) => None,
            Job::Reclaim(..) => Some(Vec::new()),
            Job::Rewrite(rewrite) => rewrite
                .buckets()
                .map(|buckets| buckets.iter().map(|&(_, row)| row).collect()),
        }
    }

    /// Ends the job without another step at a stop: a rewrite puts its changes back into
    /// `batch` unsealed, for the worker's check to undo (`GroupCommit::check`); other
    /// jobs keep what they wrote. Its caller sees the worker gone.
    pub(crate) fn abandon(self, batch: &mut Batch) {
        if let Job::Rewrite(rewrite) = self {
            rewrite.abandon(batch);
        }
    }

    /// Ends the job with `error` instead of its next step (what it wrote so far stays).
    pub(crate) fn refuse(self, error: crate::error::DatastoreError) {
        match self {
            Job::Read(_, reply) => reply.fail(error),
            Job::Import(_, reply) => {
                let _ = reply.send(Err(error));
            }
            Job::Rewrite(rewrite) => rewrite.refuse(error),
            Job::Reclaim(_, reply) => {
                let _ = reply.send(Err(error));
            }
        }
    }

    /// Runs one step (reads: of at most `time`; imports: one chunk); returns the job if it is
    /// not finished (its answer is sent when it is) and the step's commit intent: an
    /// import's last step, and a failed one (what it wrote before is kept, as after a failed
    /// insert), commit at once. Only imports write, into `batch`.
    pub(crate) fn step(self, store: &mut Store, batch: &mut Batch, time: Duration) -> Stepped {
        match self {
            Job::Read(read, reply) => step_read(store, read, reply, time),
            Job::Import(left, reply) => step_import(store, batch, left, reply, time),
            Job::Rewrite(rewrite) => Job::from_rewrite(rewrite.step(store, batch, time)),
            Job::Reclaim(reclaimed, reply) => step_reclaim(store, reclaimed, reply, time),
        }
    }
}

/// One step of a reclaim, of at most `time`; the last one (or a failed one) answers and
/// asks for the commit that keeps what was moved.
fn step_reclaim(
    store: &mut Store,
    mut reclaimed: Reclaimed,
    reply: Reply<Reclaimed>,
    time: Duration,
) -> Stepped {
    match store.reclaim_step(&mut reclaimed, time) {
        Ok(false) => {
            // The pages moved reach the disk meanwhile, not all in the commit's sync.
            store.presync_wal();
            Stepped::more(Job::Reclaim(reclaimed, reply))
        }
        Ok(true) => {
            answer(store, reply, Ok(reclaimed));
            Stepped::done(Commit::Now)
        }
        Err(e) => {
            answer(store, reply, Err(e));
            Stepped::done(Commit::Now)
        }
    }
}

/// One step of a read, of at most `time`.
fn step_read(store: &mut Store, mut read: RangeRead, reply: RowSink, time: Duration) -> Stepped {
    if let Err(e) = read.step_until(store.conn(), READ_CHUNK_ROWS, Some(Instant::now() + time)) {
        store.note_error(&e);
        reply.fail(e);
        return Stepped::done(Commit::Later);
    }
    match reply {
        RowSink::Whole(reply) if read.is_done() => {
            let _ = reply.send(Ok(read.finish()));
            Stepped::done(Commit::Later)
        }
        RowSink::Texts(parts) => {
            let part = read.take_text_rows();
            // A caller that went away ends the read.
            let gone = !part.is_empty() && parts.send(Ok(part)).is_err();
            if gone || read.is_done() {
                Stepped::done(Commit::Later)
            } else {
                Stepped::more(Job::Read(read, RowSink::Texts(parts)))
            }
        }
        whole => Stepped::more(Job::Read(read, whole)),
    }
}

/// One step of an import: a read step of what a bucket already holds, or one chunk of
/// inserts. Each step's changes are sealed in the journal before the import goes on (an
/// import is kept step by step, and importing the file again adds only what is missing);
/// a step that fails leaves none of its own.
fn step_import(
    store: &mut Store,
    batch: &mut Batch,
    left: VecDeque<ImportBucket>,
    reply: Reply<()>,
    time: Duration,
) -> Stepped {
    match import_chunk(store, batch, left, time).and_then(|left| {
        batch.seal()?;
        Ok(left)
    }) {
        Ok(Some(left)) => Stepped::more(Job::Import(left, reply)),
        Ok(None) => {
            let _ = reply.send(Ok(()));
            Stepped::done(Commit::Finished)
        }
        Err(e) => {
            store.note_error(&e);
            let _ = reply.send(Err(e));
            Stepped::done(Commit::Finished)
        }
    }
}

/// The work of one import step; what is left to do, `None` when the import is done.
fn import_chunk(
    store: &mut Store,
    batch: &mut Batch,
    mut left: VecDeque<ImportBucket>,
    time: Duration,
) -> crate::error::Result<Option<VecDeque<ImportBucket>>> {
    let Some(bucket) = left.front_mut() else {
        return Ok(None);
    };
    if let Some(present) = bucket.present.as_mut() {
        let deadline = Some(Instant::now() + time);
        present.step_until(store.conn(), READ_CHUNK_ROWS, deadline)?;
        if let Some(read) = bucket.present.take_if(|r| r.is_done()) {
            bucket.drop_present(&read.finish());
        }
        return Ok(Some(left));
    }
    let events = &mut bucket.events;
    let chunk: Vec<NewEvent> = events
        .split_off(events.len().saturating_sub(IMPORT_CHUNK_EVENTS))
        .into_iter()
        .rev()
        .collect();
    let name = bucket.name.clone();
    if events.is_empty() {
        left.pop_front();
    }
    store.insert_events(batch.changes(), &name, chunk)?;
    Ok((!left.is_empty()).then_some(left))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read step with a generous time budget reads one chunk of the year.
    fn one_step(
        store: &mut Store,
        parts: crossbeam_channel::Sender<Result<aw_models::TextRows>>,
    ) -> Option<Job> {
        let read = store
            .range_read("b", None, None, None, true)
            .map(RangeRead::with_text_parts);
        Job::read(store, read, RowSink::Texts(parts), Duration::from_secs(60)).job
    }

    #[test]
    fn a_streamed_read_goes_on_for_its_reader_and_ends_when_the_reader_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = crate::store::plan_tests::big_store(&dir);
        let (parts, reader) = crossbeam_channel::unbounded();
        assert!(
            one_step(&mut store, parts).is_some(),
            "one chunk of a year is not all of it"
        );
        let first = reader.try_recv().unwrap().unwrap();
        assert_eq!(first.len(), READ_CHUNK_ROWS);
        let (parts, reader) = crossbeam_channel::unbounded();
        drop(reader);
        assert!(
            one_step(&mut store, parts).is_none(),
            "a read for nobody must end"
        );
    }
}
