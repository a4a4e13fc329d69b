//! The worker thread: owns the connection, runs requests in arrival order, group-commits.
//!
//! Commit policy. Writes accumulate in one open `IMMEDIATE` transaction which is committed
//! when any of these holds after a request:
//! * a bucket was created or deleted, or a force-commit/close was asked for;
//! * more than [`schedule::MAX_UNCOMMITTED_EVENTS`] events or heartbeats were written;
//! * the batch of uncommitted changes holds more than [`schedule::MAX_BATCH_BYTES`] (an import);
//! * the transaction is older than [`schedule::COMMIT_INTERVAL`] and holds a write;
//! * the worker has been idle for [`schedule::IDLE_COMMIT_DELAY`] with a write pending (the reference
//!   only checks after a request, so an idle server sat on uncommitted data; ours does not).
//!
//! The store's operations only record the rows they changed; which requests count or commit
//! at once is [`Request::commit`], applied here by [`schedule::note_changes`].
//!
//! Callers are answered as soon as their request ran, before the commit (reads see the open
//! transaction, so the API is read-your-writes); `ForceCommit` and `Close` are answered only
//! after the commit succeeded. If SQLite drops the transaction (a failed statement or
//! commit), the writes already answered are applied again (`group_commit.rs`): one failing
//! request never loses another's acknowledged write.

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::batch::Batch;
use crate::error::{DatastoreError, Result};
use crate::fence::Fence;
use crate::group_commit::GroupCommit;
use crate::job::{Job, Stepped};
use crate::lifecycle::DatabaseFile;
use crate::range_read::RangeRead;
use crate::request::{Reply, Request, RowSink};
use crate::schedule::{self, Commit, Otherwise, PollTrial, Receive, Situation, StreamGuess};
use crate::shared::Shared;
use crate::store::Store;

/// What a [`Request::Close`] leaves for the thread to finish once the store is dropped.
pub(crate) struct Closed {
    /// The caller of `close`, answered once the file's lock is released.
    pub reply: Reply<()>,
    /// The final commit's result.
    pub result: Result<()>,
    /// SQLite's `data_version` of the connection just before it closed (`lifecycle/derived.rs`).
    pub data_version: Option<i64>,
}

/// Runs until `Close` arrives or every handle is dropped; commits before returning. Returns
/// what the `Close` leaves ([`Closed`]), to be answered once the connection and the file
/// lock are released.
///
/// Each turn asks [`schedule::plan`] what to do next and carries it out: receive a request
/// (and answer it, or start a long job), give a job its next step, or commit.
pub(crate) fn run(
    mut store: Store,
    requests: Receiver<Request>,
    shared: &std::sync::Arc<Shared>,
    file: &DatabaseFile,
    batch: Batch,
    salvager: Option<&crate::live_salvage::Salvager>,
) -> Option<Closed> {
    let mut tx = GroupCommit::begin_with(&mut store, batch);
    let mut jobs: VecDeque<Job> = VecDeque::new();
    // Requests that wait for a rewrite (`fence.rs`).
    let mut fence = Fence::default();
    // When the waiting job's wait began (the end of the last job step, or the job's start),
    // and when a quick request was last answered.
    let mut job_stepped = Instant::now();
    let mut last_quick: Option<Instant> = None;
    // Whether the last turn answered a quick request; whether requests stream in, judged by
    // the gap from the last quick request's answer to the next request.
    let mut after_quick = false;
    let mut stream = StreamGuess::default();
    let mut trial = PollTrial::default();
    loop {
        // A request of the last turn met a damaged page: salvage before the next one.
        if store.take_damage_met() {
            if let Some(salvager) = salvager {
                let serving = crate::live_salvage::salvage_now(
                    &mut store, file, &mut tx, &mut jobs, salvager, shared,
                );
                fence.job_ended();
                if !serving {
                    keep_held(&tx, "the salvaged copy could not be opened");
                    return None;
                }
            }
        }
        shared.jobs_in_progress.store(jobs.len(), Ordering::Release);
        let plan = schedule::plan(&Situation {
            job_waited: (!jobs.is_empty()).then(|| job_stepped.elapsed()),
            in_stream: std::mem::take(&mut after_quick)
                && stream.is_stream()
                && shared.handoff.one_client()
                && trial.polls(),
            uncommitted_age: (!tx.batch().is_empty()).then(|| tx.age()),
            retry_in: tx.retry_in(),
        });
        let again = match plan.receive {
            Receive::Skip => None,
            _ => fence.next_again(),
        };
        let polled = again.is_none() && matches!(plan.receive, Receive::Poll(_));
        let request = match again {
            Some(held) => Some(held),
            None => match receive(&requests, plan.receive, shared) {
                Ok(request) => request,
                Err(Disconnected) => break,
            },
        };
        let jobs_before = jobs.len();
        if request.is_some() {
            let now = Instant::now();
            // Gaps are judged only while polling: without it they include the worker's own
            // wake-up, and a stream would look like none when the trial tries polling again.
            if let (Some(at), true) = (last_quick, trial.polls()) {
                stream.note_gap(now.saturating_duration_since(at));
            }
            trial.note_request(now, shared.handoff.one_client(), polled);
        }
        let request = match request {
            Some(held) if fence.must_wait(&held, &jobs, &store) => {
                fence.hold(held);
                continue;
            }
            other => other,
        };
        // Counted once it runs: a request the fence held did not run between the steps.
        if request.is_some() && !jobs.is_empty() {
            shared.requests_between_steps.fetch_add(1, Ordering::AcqRel);
        }
        let step = schedule::step_time(last_quick.map(|t| t.elapsed()));
        let mark = tx.batch().len();
        // What this turn's changes mean for the commit (a job step's: nothing counted).
        let mut commit = Commit::Later;
        match request {
            Some(Request::ForceCommit(reply)) => {
                let _ = reply.send(tx.commit(&mut store));
            }
            Some(Request::Hold(reply, release)) => {
                let _ = reply.send(Ok(()));
                // Until the holder lets go (its sender dropped).
                let _ = release.recv();
                continue;
            }
            Some(Request::Scrub(reply)) => {
                let scrubbed = tx.scrub(&mut store).map(|emptied| {
                    if !emptied {
                        log::warn!("The WAL could not be emptied (a read holds it); it is at the next checkpoint");
                    }
                });
                store.note(&scrubbed);
                let _ = reply.send(scrubbed);
            }
            Some(Request::Close(reply)) => {
                // Jobs still running are dropped, and held requests: their callers see
                // `WorkerGone`. A rewrite's rows are undone first.
                abandon(&mut jobs, &mut fence, &mut tx, &mut store);
                let mut result = tx.commit(&mut store);
                if let (Err(e), true) = (&result, tx.batch().is_empty()) {
                    // Nothing uncommitted was at stake (a damaged file can fail even that).
                    log::warn!("The final commit failed ({e}), with nothing left to commit");
                    result = Ok(());
                }
                let why = result
                    .as_ref()
                    .err()
                    .map_or(String::new(), ToString::to_string);
                keep_held(&tx, &format!("before the stop: {why}"));
                // Whether another connection committed while this one served: the state
                // kept beside the file must not outlive a write no cache of ours heard of.
                let data_version = store
                    .conn()
                    .query_row("PRAGMA data_version", [], |r| r.get(0))
                    .ok();
                return Some(Closed {
                    reply,
                    result,
                    data_version,
                });
            }
            Some(other) => {
                if other.is_write() {
                    if let Err(e) = tx.writable(&mut store) {
                        other.refuse(e);
                        continue;
                    }
                    if other.is_rewrite() && tx.transaction().is_none() {
                        other.refuse(DatastoreError::Unavailable(
                            "no transaction could be begun, and this change must be all or \
                             nothing: ask again later"
                                .into(),
                        ));
                        continue;
                    }
                }
                let quick = other.is_quick();
                commit = other.commit();
                let first = handle(&mut store, tx.writes(), other, step);
                // A long job's first step may also be its last (a small import).
                if first.commit == Commit::Finished {
                    commit = Commit::Finished;
                }
                match first.job {
                    Some(mut job) => {
                        if let Some(number) = tx.transaction() {
                            job.began_in(number);
                        }
                        if jobs.is_empty() {
                            job_stepped = Instant::now();
                        }
                        jobs.push_back(job);
                    }
                    None => after_quick = quick,
                }
                if quick {
                    last_quick = Some(Instant::now());
                }
            }
            None => match plan.otherwise {
                Otherwise::StepJob => {
                    let Some(job) = jobs.pop_front() else {
                        continue;
                    };
                    let stepped = step_job(job, &mut tx, &mut store, step);
                    // The wait of the next job counts from the end of this step: counted
                    // from its start, a step longer than `JOB_WAIT_LIMIT` (any step on a
                    // slow or busy machine) made the next one start at once, and requests
                    // waited for the whole job.
                    job_stepped = Instant::now();
                    commit = stepped.commit;
                    if let Some(job) = stepped.job {
                        jobs.push_back(job);
                    }
                }
                // Never while a job (a rewrite among them) is in progress: the plan steps
                // jobs instead.
                Otherwise::Commit => {
                    if tx.may_retry() {
                        let _ = tx.commit(&mut store);
                    }
                    continue;
                }
                Otherwise::Again => continue,
            },
        }
        tx.check(&mut store);
        schedule::note_changes(tx.writes(), commit, mark);
        if jobs.len() < jobs_before {
            fence.job_ended();
        }
        // While a rewrite runs its rows are in the open transaction, not yet its own.
        let rewriting = crate::fence::rewriting(&jobs).is_some();
        if !rewriting && schedule::commit_due(tx.batch(), tx.age(), tx.may_retry()) {
            let _ = tx.commit(&mut store);
        }
    }
    // Every handle is gone: keep nothing uncommitted.
    abandon(&mut jobs, &mut fence, &mut tx, &mut store);
    let _ = tx.commit(&mut store);
    None
}

/// At a stop: ends every job and drops every held request (their callers see the worker
/// gone); a rewrite in progress is undone, so the final commit holds none of it.
fn abandon(jobs: &mut VecDeque<Job>, fence: &mut Fence, tx: &mut GroupCommit, store: &mut Store) {
    for job in jobs.drain(..) {
        job.abandon(tx.writes());
    }
    fence.clear();
    tx.check(store);
}

/// Makes sure the acknowledged changes the worker could not commit (`why`) outlive a power
/// cut too: they are in the journal already, which the next start applies
/// (`lifecycle/recovery.rs`).
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
fn step_job(job: Job, tx: &mut GroupCommit, store: &mut Store, step: Duration) -> Stepped {
    if job.is_write() {
        if let Err(e) = tx.writable(store) {
            job.refuse(e);
            return Stepped::done(Commit::Later);
        }
    }
    // A rewrite's rows are gone if its transaction is (rolled back under it).
    let began_in = job
        .as_rewrite()
        .and_then(crate::rewrite::Rewrite::transaction);
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

/// Sends a request's answer (a caller that went away is no error), noting first whether it
/// met a damaged file: the worker salvages after the turn (`live_salvage.rs`).
pub(crate) fn answer<T>(store: &mut Store, reply: crate::request::Reply<T>, result: Result<T>) {
    store.note(&result);
    let _ = reply.send(result);
}

/// Every handle is gone.
struct Disconnected;

/// Looks at the queue as the plan says: a request, or `None` if none came in time.
fn receive(
    requests: &Receiver<Request>,
    how: Receive,
    shared: &Shared,
) -> std::result::Result<Option<Request>, Disconnected> {
    match how {
        Receive::Skip => Ok(None),
        Receive::Now => match requests.try_recv() {
            Ok(r) => Ok(Some(r)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(Disconnected),
        },
        // `None` also if every handle is gone: the next receive reports it.
        Receive::Poll(window) => Ok(shared
            .handoff
            .worker_polls(window, || requests.try_recv().ok())),
        Receive::Block(timeout) => match requests.recv_timeout(timeout) {
            Ok(r) => Ok(Some(r)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(Disconnected),
        },
        Receive::Forever => requests.recv().map(Some).map_err(|_| Disconnected),
    }
}

/// Runs one request and sends its answer (a caller that went away is no error), a write's
/// only once its changes are sealed in the journal (`batch.rs`); a request
/// too long for one go comes back as a [`Job`] to continue later, after a first step of at
/// most `step` (reads), with that step's commit intent.
fn handle(store: &mut Store, batch: &mut Batch, request: Request, step: Duration) -> Stepped {
    match request {
        Request::CreateBucket(bucket, events, reply) => {
            let created = store.create_bucket(batch, *bucket, events);
            answer(store, reply, batch.sealed_result(created));
        }
        Request::Import(buckets, reply) => return Job::import(store, batch, buckets, reply, step),
        Request::DeleteBucket(name, reply) => {
            let deleted = store.delete_bucket(batch, &name);
            answer(store, reply, batch.sealed_result(deleted));
        }
        Request::InsertEvents(name, events, reply) => {
            let inserted = store.insert_events(batch, &name, events);
            answer(store, reply, batch.sealed_result(inserted));
        }
        Request::Heartbeat(name, event, pulsetime_ns, reply) => {
            let merged = store.heartbeat(batch, &name, event, pulsetime_ns);
            answer(store, reply, batch.sealed_result(merged));
        }
        Request::GetEvents {
            bucket,
            start,
            end,
            limit,
            clip,
            reply,
        } => {
            let read = store.range_read(&bucket, start, end, limit, clip);
            let read = match reply {
                RowSink::Texts(_) => read.map(RangeRead::with_text_parts),
                RowSink::Whole(_) => read,
            };
            return Job::read(store, read, reply, step);
        }
        Request::GetEvent(name, id, reply) => {
            let read = store.get_event(&name, id);
            answer(store, reply, read);
        }
        Request::DeleteEvents(name, ids, reply) => {
            let deleted = store.delete_events(batch, &name, &ids);
            answer(store, reply, batch.sealed_result(deleted));
        }
        Request::ReplaceEvent(name, id, event, reply) => {
            let replaced = store.replace_event(batch, &name, id, event);
            answer(store, reply, batch.sealed_result(replaced));
        }
        Request::RenameBucket {
            bucket,
            name,
            hostname,
            reply,
        } => {
            let renamed = store.rename_bucket(batch, &bucket, name.as_deref(), hostname.as_deref());
            answer(store, reply, batch.sealed_result(renamed));
        }
        Request::MergeBuckets { from, into, reply } => {
            return Job::merge(store, batch, (&from, &into), reply, step)
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
        Request::CountEvents(name, start, end, reply) => {
            let read = store.count_events(&name, start, end);
            answer(store, reply, read);
        }
        Request::GetKeyValue(key, reply) => {
            let read = store.get_key_value(&key);
            answer(store, reply, read);
        }
        Request::SetKeyValue(key, value, reply) => {
            let set = store.set_key_value(batch, &key, &value);
            answer(store, reply, batch.sealed_result(set));
        }
        Request::DeleteKeyValue(key, reply) => {
            let deleted = store.delete_key_value(batch, &key);
            answer(store, reply, batch.sealed_result(deleted));
        }
        Request::GetKeyValues(prefix, reply) => {
            let read = store.get_key_values(&prefix);
            answer(store, reply, read);
        }
        Request::ApplyPrivacy { dry_run, reply } => {
            return Job::apply_privacy(store, batch, dry_run, reply, step)
        }
        // Taken by the loop (they need the transaction); never handled here.
        Request::ForceCommit(reply)
        | Request::Close(reply)
        | Request::Scrub(reply)
        | Request::Hold(reply, _) => {
            let _ = reply.send(Ok(()));
        }
    }
    Stepped::done(Commit::Later)
}

#[cfg(test)]
mod damage_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::DatastoreError;
    use crate::group_commit::tests::{bucket, store_in, unrecoverable_rollback};
    use crate::new_event::NewEvent;

    /// The event rows the store's file holds (committed or in the open transaction).
    fn event_rows(store: &Store) -> i64 {
        store
            .conn()
            .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
            .unwrap()
    }

    /// `n` one-nanosecond events, one a second from the epoch.
    pub(super) fn seconds(n: i64) -> Vec<NewEvent> {
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
            .create_bucket(tx.writes(), bucket("imp"), Vec::new())
            .unwrap();
        tx.commit(&mut store).unwrap();
        store
            .create_bucket(tx.writes(), bucket("kept"), Vec::new())
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
            .create_bucket(tx.writes(), bucket("big"), Vec::new())
            .unwrap();
        let events = seconds(5_000);
        store.insert_events(tx.writes(), "big", events).unwrap();
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
            .create_bucket(tx.writes(), bucket("kept"), Vec::new())
            .unwrap();
        tx.writes().seal().unwrap();
        // A request that fails after writing a row: the check undoes it by a rollback.
        store
            .create_bucket(tx.writes(), bucket("failed"), Vec::new())
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
        let _ = handle(&mut store, tx.writes(), created, Duration::from_secs(1));
        let event = |n: i64, data: &str| NewEvent {
            id: None,
            start: n,
            end: n,
            data: data.into(),
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        let kept = Request::InsertEvents("b".into(), vec![event(0, "{}")], reply);
        let _ = handle(&mut store, tx.writes(), kept, Duration::from_secs(1));
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
        let _ = handle(&mut store, tx.writes(), failing, Duration::from_secs(1));
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
