//! The worker's loop: each turn asks [`schedule::plan`] what to do next and carries it out
//! (receive a message and answer it or start a long job, give a job its next step, or
//! commit), then ends the turn the same way whatever it did (the check for a dropped
//! transaction, the commit policy). The commit policy itself is in `worker/mod.rs`'s docs.

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{DatastoreError, Result};
use crate::file::DatabaseFile;
use crate::store::Store;
use crate::worker::batch::Batch;
use crate::worker::fence::{rewriting, Fence};
use crate::worker::group_commit::GroupCommit;
use crate::worker::job::{Job, Stepped};
use crate::worker::live_salvage::{salvage_now, Salvager};
use crate::worker::reply::{answer, Reply};
use crate::worker::request::{Control, Message, Request};
use crate::worker::schedule::{
    self, Commit, Otherwise, PollTrial, Receive, Situation, StreamGuess,
};
use crate::worker::shared::Shared;

/// What a [`Control::Close`] leaves for the thread to finish once the store is dropped.
pub(crate) struct Closed {
    /// The caller of `close`, answered once the file's lock is released.
    pub reply: Reply<()>,
    /// The final commit's result.
    pub result: Result<()>,
    /// SQLite's `data_version` of the connection just before it closed (`file/derived.rs`).
    pub data_version: Option<i64>,
    /// The journal number of the last write (all committed when `result` is `Ok`).
    pub journal_last: Option<u64>,
}

/// Runs until `Close` arrives or every handle is dropped; commits before returning. Returns
/// what the `Close` leaves ([`Closed`]), to be answered once the connection and the file
/// lock are released.
pub(crate) fn run(
    store: Store,
    messages: Receiver<Message>,
    shared: &Arc<Shared>,
    file: &DatabaseFile,
    batch: Batch,
    salvager: Option<&Salvager>,
) -> Option<Closed> {
    let mut worker = Worker::new(store, batch, shared, file, salvager);
    loop {
        if !worker.salvage_if_damaged() {
            return None;
        }
        let plan = worker.plan();
        let Ok(message) = worker.next_message(&messages, plan.receive) else {
            break;
        };
        let turn = Turn::begin(&worker);
        let commit = match message {
            Some(message)
                if worker
                    .fence
                    .must_wait(&message, &worker.jobs, &worker.store) =>
            {
                worker.fence.hold(message);
                continue;
            }
            Some(Message::Control(control)) => match worker.control(control) {
                Carried::Done => Commit::Later,
                Carried::Next => continue,
                Carried::Stop(closed) => return Some(closed),
            },
            Some(Message::Request(request)) => match worker.request(request, turn.step) {
                Some(commit) => commit,
                None => continue,
            },
            None => match worker.otherwise(plan.otherwise, turn.step) {
                Some(commit) => commit,
                None => continue,
            },
        };
        worker.end_turn(&turn, commit);
    }
    // Every handle is gone: keep nothing uncommitted.
    worker.abandon();
    let _ = worker.tx.commit(&mut worker.store);
    None
}

/// The worker's state between turns.
struct Worker<'a> {
    store: Store,
    /// The open transaction and the writes it holds.
    tx: GroupCommit,
    /// Long requests in progress, in the order they get steps.
    jobs: VecDeque<Job>,
    /// Requests that wait for a rewrite (`fence.rs`).
    fence: Fence,
    /// How requests arrive, for the plan.
    pace: Pace,
    shared: &'a Arc<Shared>,
    file: &'a DatabaseFile,
    salvager: Option<&'a Salvager>,
}

/// How requests arrive: what the plan needs to know to poll or sleep, and to give jobs
/// their steps.
struct Pace {
    /// When the waiting job's wait began (the end of the last job step, or the job's
    /// start).
    job_stepped: Instant,
    /// When a quick request was last answered.
    last_quick: Option<Instant>,
    /// Whether the last turn answered a quick request.
    after_quick: bool,
    /// Whether requests stream in, judged by the gap from the last quick request's answer
    /// to the next request.
    stream: StreamGuess,
    /// Whether polling pays now (`schedule.rs`).
    trial: PollTrial,
}

/// What a turn knows from its start, for its end.
struct Turn {
    /// The batch's length before the turn: its changes are the ones after.
    mark: usize,
    /// The jobs in progress before the turn: fewer after means one ended.
    jobs_before: usize,
    /// The time budget of a job step this turn.
    step: Duration,
}

impl Turn {
    /// Starts a turn.
    fn begin(worker: &Worker<'_>) -> Turn {
        Turn {
            mark: worker.tx.batch().len(),
            jobs_before: worker.jobs.len(),
            step: schedule::step_time(worker.pace.last_quick.map(|t| t.elapsed())),
        }
    }
}

/// What carrying out a [`Control`] message left for the loop.
enum Carried {
    /// Done: the turn ends as usual.
    Done,
    /// Nothing more this turn.
    Next,
    /// The worker stops.
    Stop(Closed),
}

/// Every handle is gone.
struct Disconnected;

impl<'a> Worker<'a> {
    fn new(
        mut store: Store,
        batch: Batch,
        shared: &'a Arc<Shared>,
        file: &'a DatabaseFile,
        salvager: Option<&'a Salvager>,
    ) -> Worker<'a> {
        let tx = GroupCommit::begin_with(&mut store, batch);
        Worker {
            store,
            tx,
            jobs: VecDeque::new(),
            fence: Fence::default(),
            pace: Pace {
                job_stepped: Instant::now(),
                last_quick: None,
                after_quick: false,
                stream: StreamGuess::default(),
                trial: PollTrial::default(),
            },
            shared,
            file,
            salvager,
        }
    }

    /// A request of the last turn met a damaged page: salvages before the next one.
    /// Returns false when there is nothing left to serve from.
    fn salvage_if_damaged(&mut self) -> bool {
        let met = self.store.take_damage_met();
        let Some(salvager) = self.salvager.filter(|_| met) else {
            return true;
        };
        let (store, tx, jobs) = (&mut self.store, &mut self.tx, &mut self.jobs);
        let serving = salvage_now(store, self.file, tx, jobs, salvager, self.shared);
        self.fence.job_ended();
        if !serving {
            keep_held(&self.tx, "the salvaged copy could not be opened");
        }
        serving
    }

    /// What to do next, from the situation (`schedule.rs`).
    fn plan(&mut self) -> schedule::Plan {
        let turns = &self.shared.turns;
        turns
            .jobs_in_progress
            .store(self.jobs.len(), Ordering::Release);
        let pace = &mut self.pace;
        schedule::plan(&Situation {
            job_waited: (!self.jobs.is_empty()).then(|| pace.job_stepped.elapsed()),
            in_stream: std::mem::take(&mut pace.after_quick)
                && pace.stream.is_stream()
                && self.shared.handoff.one_client()
                && pace.trial.polls(),
            uncommitted_age: (!self.tx.batch().is_empty()).then(|| self.tx.age()),
            retry_in: self.tx.retry_in(),
        })
    }

    /// The next message: a held one to look at again, else one from the queue as the plan
    /// says; notes its arrival for the pace, and counts it when a long job is unfinished.
    fn next_message(
        &mut self,
        messages: &Receiver<Message>,
        how: Receive,
    ) -> std::result::Result<Option<Message>, Disconnected> {
        let again = match how {
            Receive::Skip => None,
            Receive::Now | Receive::Poll(_) | Receive::Block(_) | Receive::Forever => {
                self.fence.next_again()
            }
        };
        let polled = again.is_none() && matches!(how, Receive::Poll(_));
        let message = match again {
            Some(held) => Some(held),
            None => receive(messages, how, self.shared)?,
        };
        if message.is_some() {
            let now = Instant::now();
            let pace = &mut self.pace;
            // Gaps are judged only while polling: without it they include the worker's own
            // wake-up, and a stream would look like none when the trial tries polling again.
            if let (Some(at), true) = (pace.last_quick, pace.trial.polls()) {
                pace.stream.note_gap(now.saturating_duration_since(at));
            }
            let one_client = self.shared.handoff.one_client();
            pace.trial.note_request(now, one_client, polled);
        }
        Ok(message)
    }

    /// Carries out a control message.
    fn control(&mut self, control: Control) -> Carried {
        self.count_between_steps();
        match control {
            Control::ForceCommit(reply) => {
                let _ = reply.send(self.tx.commit(&mut self.store));
            }
            Control::Hold(reply, release) => {
                let _ = reply.send(Ok(()));
                // Until the holder lets go (its sender dropped).
                let _ = release.recv();
                return Carried::Next;
            }
            Control::CopyWal(reply) => self.tx.copy_wal(&mut self.store, reply),
            Control::Scrub(reply) => {
                let scrubbed = self.tx.scrub(&mut self.store);
                answer(&mut self.store, reply, scrubbed);
            }
            Control::Close(reply) => return Carried::Stop(self.close(reply)),
            Control::MarkDerived(reply) => drop(reply.send(Ok(self.tx.journal_last()))),
        }
        Carried::Done
    }

    /// The final commit at a `Close`: jobs still running are dropped, and held requests
    /// (their callers see `WorkerGone`); a rewrite's rows are undone first.
    fn close(&mut self, reply: Reply<()>) -> Closed {
        self.abandon();
        let mut result = self.tx.commit(&mut self.store);
        if let (Err(e), true) = (&result, self.tx.batch().is_empty()) {
            // Nothing uncommitted was at stake (a damaged file can fail even that).
            log::warn!("The final commit failed ({e}), with nothing left to commit");
            result = Ok(());
        }
        let why = result
            .as_ref()
            .err()
            .map_or(String::new(), ToString::to_string);
        keep_held(&self.tx, &format!("before the stop: {why}"));
        // Whether another connection committed while this one served: the state kept
        // beside the file must not outlive a write no cache of ours heard of.
        let data_version = self
            .store
            .conn()
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .ok();
        Closed {
            reply,
            result,
            data_version,
            journal_last: self.tx.journal_last(),
        }
    }

    /// Runs a request (or refuses it: a write while the store is not writable, a rewrite
    /// without a transaction); returns what its changes mean for the commit, `None` when
    /// it was refused.
    fn request(&mut self, request: Request, step: Duration) -> Option<Commit> {
        self.count_between_steps();
        let kind = request.kind();
        let (quick, writes, rewrite, mut commit) =
            (kind.quick, kind.writes, kind.rewrite.is_some(), kind.commit);
        if writes {
            let jobs = &self.jobs;
            self.tx.refresh(&self.store, || rewriting(jobs).is_some());
            if let Err(e) = self.tx.writable(&mut self.store) {
                request.refuse(e);
                return None;
            }
            if rewrite && self.tx.transaction().is_none() {
                request.refuse(DatastoreError::Unavailable(
                    "no transaction could be begun, and this change must be all or nothing: \
                     ask again later"
                        .into(),
                ));
                return None;
            }
        }
        let first = request.run(&mut self.store, self.tx.writes(), step);
        // A long job's first step may also be its last (a small import).
        if first.commit == Commit::Finished {
            commit = Commit::Finished;
        }
        match first.job {
            Some(mut job) => {
                if let Some(number) = self.tx.transaction() {
                    job.began_in(number);
                }
                if self.jobs.is_empty() {
                    self.pace.job_stepped = Instant::now();
                }
                self.jobs.push_back(job);
            }
            None => self.pace.after_quick = quick,
        }
        if quick {
            self.pace.last_quick = Some(Instant::now());
        }
        Some(commit)
    }

    /// Counted once it runs: a message the fence held did not run between the steps.
    fn count_between_steps(&self) {
        if !self.jobs.is_empty() {
            let turns = &self.shared.turns;
            turns.requests_between_steps.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// What the plan says when no message came: a job's step, a commit, or another look.
    /// Returns the step's commit intent; `None` when the turn is over.
    fn otherwise(&mut self, otherwise: Otherwise, step: Duration) -> Option<Commit> {
        match otherwise {
            Otherwise::StepJob => {
                let job = self.jobs.pop_front()?;
                let stepped = step_job(job, &mut self.tx, &mut self.store, step);
                // The wait of the next job counts from the end of this step: counted from
                // its start, a step longer than `JOB_WAIT_LIMIT` (any step on a slow or
                // busy machine) made the next one start at once, and requests waited for
                // the whole job.
                self.pace.job_stepped = Instant::now();
                if let Some(job) = stepped.job {
                    self.jobs.push_back(job);
                }
                Some(stepped.commit)
            }
            // Never while a job (a rewrite among them) is in progress: the plan steps jobs
            // instead.
            Otherwise::Commit => {
                if self.tx.may_retry() {
                    let _ = self.tx.commit(&mut self.store);
                }
                None
            }
            Otherwise::Again => None,
        }
    }

    /// Ends a turn that ran something: undoes what a failure left, applies the commit
    /// policy, and lets held requests be looked at again when a job ended.
    fn end_turn(&mut self, turn: &Turn, commit: Commit) {
        self.tx.check(&mut self.store);
        schedule::note_changes(self.tx.writes(), commit, turn.mark);
        if self.jobs.len() < turn.jobs_before {
            self.fence.job_ended();
        }
        // While a rewrite runs its rows are in the open transaction, not yet its own.
        let rewriting = rewriting(&self.jobs).is_some();
        let (batch, age, may_retry) = (self.tx.batch(), self.tx.age(), self.tx.may_retry());
        if !rewriting && schedule::commit_due(batch, age, may_retry) {
            let _ = self.tx.commit(&mut self.store);
        }
        let turns = &self.shared.turns;
        turns
            .journal_used
            .store(self.tx.batch().journal_used(), Ordering::Relaxed);
    }

    /// At a stop: ends every job and drops every held request (their callers see the worker
    /// gone); a rewrite in progress is undone, so the final commit holds none of it.
    fn abandon(&mut self) {
        for job in self.jobs.drain(..) {
            job.abandon(self.tx.writes());
        }
        self.fence.clear();
        self.tx.check(&mut self.store);
    }
}

/// Makes sure the acknowledged changes the worker could not commit (`why`) outlive a power
/// cut too: they are in the journal already, which the next start applies
/// (`file/recovery.rs`).
fn keep_held(tx: &GroupCommit, why: &str) {
    let (Some(journal), false) = (tx.batch().journal(), tx.batch().is_empty()) else {
        return;
    };
    match journal.sync() {
        Ok(()) => log::error!(
            "{} acknowledged changes could not be committed ({why}); they are kept in {} and \
             applied at the next start",
            tx.batch().len(),
            journal.path().display()
        ),
        Err(e) => log::error!(
            "{} acknowledged changes could not be committed ({why}); they are in {}, which \
             could not be synced ({e}): a power cut before the next start may lose them",
            tx.batch().len(),
            journal.path().display()
        ),
    }
}

/// Gives `job` its next step; returns it if it is not finished, with the step's commit
/// intent. A step that writes (an import's) runs only while the store is writable, like a
/// write request: while acknowledged writes wait to be applied again it would write in
/// autocommit mode and take their ids. The job then ends with that error; what it wrote
/// before stays.
pub(super) fn step_job(
    job: Job,
    tx: &mut GroupCommit,
    store: &mut Store,
    step: Duration,
) -> Stepped {
    if job.is_write() {
        if let Err(e) = tx.writable(store) {
            job.refuse(e);
            return Stepped::done(Commit::Later);
        }
    }
    // A rewrite's rows are gone if its transaction is (rolled back under it).
    let began_in = job
        .as_rewrite()
        .and_then(crate::worker::rewrite::Rewrite::transaction);
    if began_in.is_some_and(|t| tx.transaction() != Some(t)) {
        job.refuse(DatastoreError::Unavailable(
            "another request's failure rolled the open transaction back while this ran; \
             nothing of it was kept: ask again"
                .into(),
        ));
        return Stepped::done(Commit::Later);
    }
    job.step(store, tx.writes(), step)
}

/// Looks at the queue as the plan says: a request, or `None` if none came in time.
fn receive(
    messages: &Receiver<Message>,
    how: Receive,
    shared: &Shared,
) -> std::result::Result<Option<Message>, Disconnected> {
    match how {
        Receive::Skip => Ok(None),
        Receive::Now => match messages.try_recv() {
            Ok(r) => Ok(Some(r)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(Disconnected),
        },
        // `None` also if every handle is gone: the next receive reports it.
        Receive::Poll(window) => Ok(shared
            .handoff
            .worker_polls(window, || messages.try_recv().ok())),
        Receive::Block(timeout) => match messages.recv_timeout(timeout) {
            Ok(r) => Ok(Some(r)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(Disconnected),
        },
        Receive::Forever => messages.recv().map(Some).map_err(|_| Disconnected),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::error::DatastoreError;
    use crate::new_event::NewEvent;
    use crate::worker::group_commit::tests::{bucket, store_in, unrecoverable_rollback};

    /// The event rows the store's file holds (committed or in the open transaction).
    fn event_rows(store: &Store) -> i64 {
        store
            .conn()
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
            .unwrap()
    }

    /// `n` one-nanosecond events, one a second from the epoch.
    pub(crate) fn seconds(n: i64) -> Vec<NewEvent> {
        (0..n)
            .map(|i| NewEvent {
                id: None,
                start: i * 1_000_000_000,
                end: i * 1_000_000_000 + 1,
                data: "{}".into(),
            })
            .collect()
    }

    /// An import into an existing bucket is under way when SQLite drops the transaction and
    /// the acknowledged writes cannot be applied again yet: its next step is refused with
    /// `Unavailable` and writes nothing (in autocommit mode it would take the ids the
    /// acknowledged writes were answered with).
    #[test]
    fn an_import_step_waits_while_acknowledged_writes_are_unsaved() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = store_in(&dir);
        let mut tx = GroupCommit::begin(&store);
        store
            .create_bucket(tx.writes().changes(), bucket("imp"), Vec::new())
            .unwrap();
        tx.commit(&mut store).unwrap();
        store
            .create_bucket(tx.writes().changes(), bucket("kept"), Vec::new())
            .unwrap();
        tx.writes().seal().unwrap();

        let events = seconds(10);
        let (reply, mut answer) = tokio::sync::oneshot::channel();
        let step = Duration::from_millis(50);
        // The first step reads what the bucket already holds; the inserts come next.
        let buckets = vec![(bucket("imp"), events)];
        let job = Job::import(&mut store, tx.writes(), buckets, reply, step).job;
        let job = job.unwrap_or_else(|| panic!("done after one step: {:?}", answer.try_recv()));

        unrecoverable_rollback(&mut tx, &mut store);
        assert!(step_job(job, &mut tx, &mut store, step).job.is_none());
        assert!(matches!(
            answer.try_recv(),
            Ok(Err(DatastoreError::Unavailable(_)))
        ));
        assert_eq!(event_rows(&store), 0);
    }

    /// A range deletion is between two steps when another request fails with rows it did
    /// not seal: the worker rolls the transaction back and applies the sealed changes
    /// again, which takes the deletion's rows with it. Its next step ends it with
    /// `Unavailable`, nothing deleted, and the write acknowledged between its steps stays.
    #[test]
    fn a_rollback_between_the_steps_of_a_deletion_ends_it_with_nothing_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = store_in(&dir);
        let mut tx = GroupCommit::begin(&store);
        store
            .create_bucket(tx.writes().changes(), bucket("big"), Vec::new())
            .unwrap();
        let events = seconds(5_000);
        store
            .insert_events(tx.writes().changes(), "big", events)
            .unwrap();
        tx.writes().seal().unwrap();
        tx.commit(&mut store).unwrap();

        let (reply, mut answer) = tokio::sync::oneshot::channel();
        let buckets = ["big".to_string()];
        // A zero time budget: one chunk a step.
        let first = Job::delete_range(
            &mut store,
            tx.writes(),
            (&buckets, i64::MIN / 2, i64::MAX / 2),
            (false, None),
            reply,
            Duration::ZERO,
        );
        let mut job = first.job.expect("5,000 rows are more than one step");
        job.began_in(tx.transaction().unwrap());
        tx.check(&mut store);
        assert!(
            event_rows(&store) < 5_000,
            "the first step deleted its chunk"
        );

        // Acknowledged between the steps.
        store
            .create_bucket(tx.writes().changes(), bucket("kept"), Vec::new())
            .unwrap();
        tx.writes().seal().unwrap();
        // A request that fails after writing a row: the check undoes it by a rollback.
        store
            .create_bucket(tx.writes().changes(), bucket("failed"), Vec::new())
            .unwrap();
        tx.check(&mut store);

        assert!(step_job(job, &mut tx, &mut store, Duration::ZERO)
            .job
            .is_none());
        assert!(
            matches!(answer.try_recv(), Ok(Err(DatastoreError::Unavailable(_)))),
            "the deletion must fail"
        );
        assert_eq!(event_rows(&store), 5_000);
        tx.commit(&mut store).unwrap();
        assert_eq!(event_rows(&store), 5_000);
        let buckets: Vec<String> = store
            .conn()
            .prepare("SELECT name FROM buckets ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(buckets, ["big", "kept"]);
    }

    /// A write of many rows whose third row fails (SQLite aborts the statement only, so the
    /// transaction and the first two rows would stay) stores none of them, and the write
    /// acknowledged before it is kept.
    #[test]
    fn a_failed_write_of_many_rows_leaves_none_and_keeps_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = store_in(&dir);
        let mut tx = GroupCommit::begin(&store);
        let (reply, _answer) = tokio::sync::oneshot::channel();
        let created = Request::CreateBucket(Box::new(bucket("b")), Vec::new(), reply);
        let _ = created.run(&mut store, tx.writes(), Duration::from_secs(1));
        let event = |n: i64, data: &str| NewEvent {
            id: None,
            start: n,
            end: n,
            data: data.into(),
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        let kept = Request::InsertEvents("b".into(), vec![event(0, "{}")], reply);
        let _ = kept.run(&mut store, tx.writes(), Duration::from_secs(1));
        answer.blocking_recv().unwrap().unwrap();
        tx.check(&mut store);

        store
            .conn()
            .execute_batch(
                r#"CREATE TEMP TRIGGER refuse BEFORE INSERT ON events WHEN NEW.data = '{"bad":1}'
                   BEGIN SELECT RAISE(ABORT, 'refused'); END"#,
            )
            .unwrap();
        let (reply, answer) = tokio::sync::oneshot::channel();
        let rows = vec![event(1, "{}"), event(2, "{}"), event(3, r#"{"bad":1}"#)];
        let failing = Request::InsertEvents("b".into(), rows, reply);
        let _ = failing.run(&mut store, tx.writes(), Duration::from_secs(1));
        assert!(answer.blocking_recv().unwrap().is_err());
        tx.check(&mut store);
        // (Made inside the open transaction, the trigger went with the undo.)
        store
            .conn()
            .execute_batch("DROP TRIGGER IF EXISTS refuse")
            .unwrap();
        tx.commit(&mut store).unwrap();
        let starts: Vec<i64> = store
            .conn()
            .prepare("SELECT starttime FROM events")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(std::result::Result::unwrap)
            .collect();
        assert_eq!(starts, [0]);
    }
}
