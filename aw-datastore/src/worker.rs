//! The worker thread: owns the connection, runs requests in arrival order, group-commits.
//!
//! Commit policy. Writes accumulate in one open `IMMEDIATE` transaction which is committed
//! when any of these holds after a request:
//! * a bucket was created or deleted, or a force-commit/close was asked for;
//! * more than [`MAX_UNCOMMITTED_EVENTS`] events or heartbeats were written;
//! * the batch of uncommitted changes holds more than [`MAX_BATCH_BYTES`] (an import);
//! * the transaction is older than [`COMMIT_INTERVAL`] and holds a write;
//! * the worker has been idle for [`IDLE_COMMIT_DELAY`] with a write pending (the reference
//!   only checks after a request, so an idle server sat on uncommitted data; ours does not).
//!
//! Callers are answered as soon as their request ran, before the commit (reads see the open
//! transaction, so the API is read-your-writes); `ForceCommit` and `Close` are answered only
//! after the commit succeeded. If SQLite drops the transaction (a failed statement or
//! commit), the writes already answered are applied again (`transaction.rs`): one failing
//! request never loses another's acknowledged write.

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::job::{Job, BUSY_STEP_TIME, STEP_TIME};
use crate::request::{Reply, Request};
use crate::store::Store;
use crate::transaction::Transaction;

/// The longest a write waits for its commit while requests keep arriving.
pub const COMMIT_INTERVAL: Duration = Duration::from_secs(15);
/// How long the worker waits for more requests before committing pending writes.
pub const IDLE_COMMIT_DELAY: Duration = Duration::from_millis(1000);
/// Written events after which the transaction is committed.
pub const MAX_UNCOMMITTED_EVENTS: usize = 100;
/// Memory the batch of uncommitted changes may hold before it is committed (it keeps a copy
/// of every written event's data until then; an import of a year would otherwise keep them
/// all).
pub const MAX_BATCH_BYTES: usize = 8 << 20;

/// The longest small requests keep the worker to themselves while a long job waits: they go
/// first, but a steady stream of them cannot stall a long read forever (the job gets at least
/// a fifth of the worker). Counted in time, not requests: a count of 16 made every 17th
/// heartbeat of a back-to-back stream wait behind a job step (p95 0.5 ms with one 1-year
/// query loop), although the 16 before it had taken well under a millisecond.
const JOB_WAIT_LIMIT: Duration = Duration::from_millis(2);

/// Runs until `Close` arrives or every handle is dropped; commits before returning. Returns
/// the `Close` request's reply channel with the final commit's result, to be answered once
/// the connection and the file lock are released.
pub fn run(mut store: Store, requests: Receiver<Request>) -> Option<(Reply<()>, Result<()>)> {
    let mut tx = Transaction::begin(&store);
    let mut jobs: VecDeque<Job> = VecDeque::new();
    // When the waiting job (if any) last got a step, and when a quick request was last
    // answered.
    let mut job_stepped = Instant::now();
    let mut last_quick: Option<Instant> = None;
    // Whether the last turn answered a quick request: a client sending those back to back
    // (a watcher's queue, a script) is likely to send the next one soon.
    let mut spin = false;
    loop {
        let after_quick = std::mem::take(&mut spin);
        let request = if !jobs.is_empty() {
            if job_stepped.elapsed() >= JOB_WAIT_LIMIT {
                None
            } else if after_quick {
                // The next small request is probably microseconds away: do not start a
                // step just before it arrives.
                spin_recv(&requests, JOB_GAP_SPIN)
            } else {
                match requests.try_recv() {
                    Ok(r) => Some(r),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => break,
                }
            }
        } else if let Some(request) = after_quick
            .then(|| spin_recv(&requests, IDLE_SPIN))
            .flatten()
        {
            Some(request)
        } else if !store.batch.is_empty() {
            let due = Instant::now()
                + COMMIT_INTERVAL
                    .saturating_sub(tx.age())
                    .min(IDLE_COMMIT_DELAY);
            match requests.recv_deadline(tx.not_before_retry(due)) {
                Ok(r) => Some(r),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match requests.recv() {
                Ok(r) => Some(r),
                Err(_) => break,
            }
        };
        let mark = store.batch.len();
        match request {
            Some(Request::ForceCommit(reply)) => {
                let _ = reply.send(tx.commit(&mut store));
            }
            Some(Request::Close(reply)) => {
                // Jobs still running are dropped: their callers see `WorkerGone`.
                let result = tx.commit(&mut store);
                if !store.batch.is_empty() {
                    log::error!(
                        "{} acknowledged changes could not be written before the stop",
                        store.batch.len()
                    );
                }
                return Some((reply, result));
            }
            Some(other) => {
                if other.is_write() {
                    if let Err(e) = tx.writable(&mut store) {
                        other.refuse(e);
                        continue;
                    }
                }
                let quick = other.is_quick();
                match handle(&mut store, other, step_time(last_quick)) {
                    Some(job) => {
                        if jobs.is_empty() {
                            job_stepped = Instant::now();
                        }
                        jobs.push_back(job);
                    }
                    None => spin = quick,
                }
                if quick {
                    last_quick = Some(Instant::now());
                }
            }
            None => match jobs.pop_front() {
                Some(job) => {
                    if let Some(job) = job.step(&mut store, step_time(last_quick)) {
                        jobs.push_back(job);
                    }
                    job_stepped = Instant::now();
                }
                None => {
                    // Idle (or the interval ran out) with writes pending.
                    if tx.may_retry() {
                        let _ = tx.commit(&mut store);
                    }
                    continue;
                }
            },
        }
        tx.check(&mut store, mark);
        let batch = &store.batch;
        if tx.may_retry()
            && (batch.commit_requested()
                || batch.counted_events() > MAX_UNCOMMITTED_EVENTS
                || batch.bytes() > MAX_BATCH_BYTES
                || (!batch.is_empty() && tx.age() >= COMMIT_INTERVAL))
        {
            let _ = tx.commit(&mut store);
        }
    }
    // Every handle is gone: keep nothing uncommitted.
    let _ = tx.commit(&mut store);
    None
}

/// Quick requests this close together are a stream (a watcher's queue, a script): long jobs
/// then run in [`BUSY_STEP_TIME`] steps instead of [`STEP_TIME`] ones.
const QUICK_STREAM_GAP: Duration = Duration::from_millis(2);

/// The time budget of a long job's next step.
fn step_time(last_quick: Option<Instant>) -> Duration {
    if last_quick.is_some_and(|t| t.elapsed() < QUICK_STREAM_GAP) {
        BUSY_STEP_TIME
    } else {
        STEP_TIME
    }
}

/// How long the worker keeps polling its queue after answering a quick request
/// ([`Request::is_quick`]), before it sleeps. Not after long reads and imports: their callers
/// (the dashboard, a query thread) are busy with the answer, and a spinning worker would only
/// take a CPU from them.
///
/// Sleeping on the channel means the next request's sender must wake this thread: a futex
/// call and, on an idle CPU, a cross-CPU wake-up that costs tens of microseconds on a virtual
/// machine, more than a heartbeat's own work. A client sending requests back to back (a
/// watcher's queue, a script, the dashboard) sends its next one well within this window.
/// The cost is at most this much CPU after each burst of work (0.05% of a core for a watcher
/// sending a heartbeat a second).
const IDLE_SPIN: Duration = Duration::from_micros(500);

/// The same while a long job waits, before its next step: shorter, since the job is work
/// waiting too (and gets its turn after [`JOB_WAIT_LIMIT`] anyway).
const JOB_GAP_SPIN: Duration = Duration::from_micros(100);

/// Polls the queue for up to `window`; `None` if nothing came (or every handle is gone,
/// which the next receive reports).
fn spin_recv(requests: &Receiver<Request>, window: Duration) -> Option<Request> {
    let until = Instant::now() + window;
    loop {
        match requests.try_recv() {
            Ok(request) => return Some(request),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if Instant::now() >= until {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// Runs one request and sends its answer (a caller that went away is no error); a request
/// too long for one go comes back as a [`Job`] to continue later, after a first step of at
/// most `step` (reads).
fn handle(store: &mut Store, request: Request, step: Duration) -> Option<Job> {
    match request {
        Request::CreateBucket(bucket, events, reply) => {
            let _ = reply.send(store.create_bucket(*bucket, events));
        }
        Request::Import(buckets, reply) => return Job::import(store, buckets, reply, step),
        Request::DeleteBucket(name, reply) => {
            let _ = reply.send(store.delete_bucket(&name));
        }
        Request::InsertEvents(name, events, reply) => {
            let _ = reply.send(store.insert_events(&name, events));
        }
        Request::Heartbeat(name, event, pulsetime_ns, reply) => {
            let _ = reply.send(store.heartbeat(&name, event, pulsetime_ns));
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
            return Job::read(store, read, reply, step);
        }
        Request::GetEvent(name, id, reply) => {
            let _ = reply.send(store.get_event(&name, id));
        }
        Request::DeleteEvents(name, ids, reply) => {
            let _ = reply.send(store.delete_events(&name, &ids));
        }
        Request::CountEvents(name, start, end, reply) => {
            let _ = reply.send(store.count_events(&name, start, end));
        }
        Request::GetKeyValue(key, reply) => {
            let _ = reply.send(store.get_key_value(&key));
        }
        Request::SetKeyValue(key, value, reply) => {
            let _ = reply.send(store.set_key_value(&key, &value));
        }
        Request::DeleteKeyValue(key, reply) => {
            let _ = reply.send(store.delete_key_value(&key));
        }
        Request::GetKeyValues(prefix, reply) => {
            let _ = reply.send(store.get_key_values(&prefix));
        }
        Request::ForceCommit(reply) | Request::Close(reply) => {
            let _ = reply.send(Ok(()));
        }
    }
    None
}
