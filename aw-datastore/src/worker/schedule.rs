//! What the worker does next, decided by pure functions of its situation.
//!
//! The worker has four kinds of work: answering a request, giving a long job (a big read or
//! an import) its next step, committing, and waiting. Which one comes next depends on the
//! queue, the jobs, the open transaction's age and the time; keeping that choice here, apart
//! from the loop that carries it out (`worker/run.rs`), makes the policy readable in one place and
//! testable with made-up situations instead of by timing a running worker. Times are given as
//! durations up to "now", so a test needs no clock.

use std::time::Duration;

use crate::worker::batch::Batch;
use crate::worker::handoff::QUEUE_POLL;

/// The longest small requests keep the worker to themselves while a long job waits: they go
/// first, but a steady stream of them cannot stall a long read forever (the job gets at least
/// a fifth of the worker). Counted in time, not requests: a count of 16 made every 17th
/// heartbeat of a back-to-back stream wait behind a job step (p95 0.5 ms with one 1-year
/// query loop), although the 16 before it had taken well under a millisecond.
pub(crate) const JOB_WAIT_LIMIT: Duration = Duration::from_millis(2);

/// How long the worker polls its queue after a quick request of a stream while a long job
/// waits, before its next step: shorter than [`QUEUE_POLL`], since the job is work waiting
/// too (and gets its turn after [`JOB_WAIT_LIMIT`] anyway).
pub(crate) const JOB_GAP_POLL: Duration = Duration::from_micros(100);

/// Whether requests arrive back to back: a stream (a script, a watcher's queue being
/// flushed, a dashboard's burst) sends its next request within [`QUEUE_POLL`] of the last
/// answer, and only then does polling the queue pay back (`worker/handoff.rs`). Two such gaps in a
/// row make a stream; one longer gap ends it, so watchers at one heartbeat a second never
/// make the worker poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StreamGuess {
    /// Gaps within [`QUEUE_POLL`] in a row, up to [`StreamGuess::ENOUGH`].
    short_gaps: u8,
}

impl StreamGuess {
    /// Short gaps in a row that make a stream.
    const ENOUGH: u8 = 2;

    /// Notes the time from answering a quick request to the next request's arrival.
    pub(crate) fn note_gap(&mut self, gap: Duration) {
        self.short_gaps = if gap <= QUEUE_POLL {
            (self.short_gaps + 1).min(Self::ENOUGH)
        } else {
            0
        };
    }

    /// Whether the next request is expected within [`QUEUE_POLL`].
    pub(crate) fn is_stream(&self) -> bool {
        self.short_gaps >= Self::ENOUGH
    }
}

/// Whether polling pays on this machine now, found by trying both ways on the stream
/// itself: an absolute rule cannot tell. On an idle machine a poll saves each request two
/// wake-ups (2-3.6x the reference's rate, at less CPU per request than sleeping, whose
/// futex calls cost more than a short poll); with one core kept busy by another program the
/// same poll takes the CPU the client and the async thread wait for (0.40-0.62x the
/// reference's rate at 2.0-2.3x its CPU per request), and how busy "busy" is, or how a
/// thread's CPU share shows it, depends on the machine and the scheduler.
///
/// So the worker measures: four counts of [`TRIAL_REQUESTS`] requests of a stream, with
/// polling, without, without and with ([`TRIAL_ORDER`]), and then uses whichever took less
/// time per request (polling only when it is at least a quarter faster: a count is noisy,
/// and on an idle machine polling is 2-3x faster) for the next [`TRIAL_REQUESTS`] ×
/// [`TRIAL_USES`] requests, then tries both again (every 8,704 requests: a quarter of a
/// second at 35,000 a second; the counts without polling then cost such a stream about 5%
/// of its rate). A stream's first
/// count is not used (it measured its start: a first choice made on it parked an idle
/// machine's stream at a third of its rate). A gap of [`TRIAL_GAP`] ends a count
/// unfinished: requests at a watcher's pace decide nothing. While the worker does not poll,
/// the stream guess is left as it was (`worker/run.rs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PollTrial {
    phase: TrialPhase,
    /// When the current count of requests began, how many came since, and for how many of
    /// them the worker was polling.
    counting: Option<(std::time::Instant, u32, u32)>,
    /// Whether the stream has had its first count, which is not used: it holds the start
    /// of a client's work (a connection, a bucket, cold caches), not its pace.
    warm: bool,
    /// The last request's arrival.
    last: Option<std::time::Instant>,
    /// For how many counts the next choice not to poll holds: [`FIRST_PARK_USES`], doubled
    /// by each such choice in a row up to [`TRIAL_USES`]. A stream's start can make the
    /// poll look slow (on an idle machine the first trials chose not to poll in two runs
    /// of three, at a third of the rate for the whole first minute's worth of requests);
    /// a machine that stays busy soon tries the poll rarely.
    park_uses: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum TrialPhase {
    /// Counting step `step` of [`TRIAL_ORDER`], with the time per request the steps before
    /// it measured with and without polling (summed).
    Trying {
        step: usize,
        polling: Duration,
        parking: Duration,
    },
    /// Using the choice (whether to poll) for this many more counts.
    Using { poll: bool, left: u32 },
}

/// Whether each count of a trial polls: with, without, without, with, so that a machine
/// getting busier or quieter during the trial weighs on both ways alike.
const TRIAL_ORDER: [bool; 4] = [true, false, false, true];

impl TrialPhase {
    const START: TrialPhase = TrialPhase::Trying {
        step: 0,
        polling: Duration::ZERO,
        parking: Duration::ZERO,
    };
}

/// Requests counted per measurement.
pub(crate) const TRIAL_REQUESTS: u32 = 128;

/// Counts of [`TRIAL_REQUESTS`] a choice is used for before both ways are tried again.
pub(crate) const TRIAL_USES: u32 = 64;

/// Counts a first choice not to poll holds for.
pub(crate) const FIRST_PARK_USES: u32 = 16;

/// A gap between two requests this long ends a count: they are not one stream.
pub(crate) const TRIAL_GAP: Duration = Duration::from_millis(5);

impl Default for PollTrial {
    fn default() -> Self {
        PollTrial {
            phase: TrialPhase::START,
            counting: None,
            warm: false,
            last: None,
            park_uses: FIRST_PARK_USES,
        }
    }
}

impl PollTrial {
    /// Whether the worker may poll its queue now (when the stream guess says so too).
    pub(crate) fn polls(&self) -> bool {
        match self.phase {
            TrialPhase::Trying { step, .. } => TRIAL_ORDER[step],
            TrialPhase::Using { poll, .. } => poll,
        }
    }

    /// Notes a request's arrival at `now`. `alone`: no other request was waiting for an
    /// answer when it was sent (requests of several clients at once are not the stream the
    /// trial measures, and start the count again). `polled`: the worker was polling when it
    /// came. A count that tries the poll is used only if the worker polled for at least
    /// three in four of its requests (the stream guess saw a stream); otherwise it is
    /// counted again, so a client too slow for the guess never finishes a trial, and costs
    /// none. (Counting only the requests polled for would keep the quick ones and choose
    /// the poll on a busy machine.)
    pub(crate) fn note_request(&mut self, now: std::time::Instant, alone: bool, polled: bool) {
        let gap = self.last.map(|last| now.saturating_duration_since(last));
        self.last = Some(now);
        let (began, count, polled_for) = match (self.counting, gap) {
            (Some((began, count, polled_for)), Some(gap)) if gap < TRIAL_GAP && alone => {
                (began, count + 1, polled_for + u32::from(polled))
            }
            // A new stream (or the first request): a new count starts at this request.
            _ => {
                self.counting = Some((now, 0, 0));
                self.warm = false;
                return;
            }
        };
        if count < TRIAL_REQUESTS {
            self.counting = Some((began, count, polled_for));
            return;
        }
        self.counting = Some((now, 0, 0));
        if !std::mem::replace(&mut self.warm, true) {
            return;
        }
        let trying_poll =
            matches!(self.phase, TrialPhase::Trying { step, .. } if TRIAL_ORDER[step]);
        if trying_poll && polled_for * 4 < count * 3 {
            return;
        }
        let per_request = now.saturating_duration_since(began) / count;
        self.phase = match self.phase {
            TrialPhase::Trying {
                step,
                polling,
                parking,
            } => {
                let (polling, parking) = if TRIAL_ORDER[step] {
                    (polling + per_request, parking)
                } else {
                    (polling, parking + per_request)
                };
                if step + 1 < TRIAL_ORDER.len() {
                    TrialPhase::Trying {
                        step: step + 1,
                        polling,
                        parking,
                    }
                } else {
                    let poll = polling * 4 <= parking * 3;
                    let left = if poll { TRIAL_USES } else { self.park_uses };
                    self.park_uses = if poll {
                        FIRST_PARK_USES
                    } else {
                        (self.park_uses * 2).min(TRIAL_USES)
                    };
                    TrialPhase::Using { poll, left }
                }
            }
            TrialPhase::Using { left: 0 | 1, .. } => TrialPhase::START,
            TrialPhase::Using { poll, left } => TrialPhase::Using {
                poll,
                left: left - 1,
            },
        };
    }
}

/// Quick requests this close together are a stream (a watcher's queue, a script): long jobs
/// then run in [`BUSY_STEP_TIME`] steps instead of [`STEP_TIME`] ones.
pub(crate) const QUICK_STREAM_GAP: Duration = Duration::from_millis(2);

/// The time one step of a long read may take: what a heartbeat may wait behind it.
pub(crate) const STEP_TIME: Duration = Duration::from_micros(500);

/// The same while small requests are streaming in: shorter steps cost a long read a few
/// percent more index seeks, and keep a back-to-back heartbeat that arrives during a step
/// from waiting a whole [`STEP_TIME`].
pub(crate) const BUSY_STEP_TIME: Duration = Duration::from_micros(200);

/// The longest a write waits for its commit while requests keep arriving.
pub const COMMIT_INTERVAL: Duration = Duration::from_secs(15);

/// How long the worker waits for more requests before committing pending writes.
pub const IDLE_COMMIT_DELAY: Duration = Duration::from_millis(1000);

/// Written events after which the transaction is committed.
pub const MAX_UNCOMMITTED_EVENTS: usize = 100;

/// Memory the batch of uncommitted changes may hold before it is committed (it keeps a copy
/// of every written event's data until then; an import of a year would otherwise keep them
/// all).
pub(crate) const MAX_BATCH_BYTES: usize = 8 << 20;

/// What the worker knows when it chooses its next step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Situation {
    /// How long the oldest waiting long job has waited for a step; `None` without jobs.
    pub job_waited: Option<Duration>,
    /// Whether the last turn answered a quick request of a stream ([`StreamGuess`]): its
    /// client likely sends another within [`QUEUE_POLL`].
    pub in_stream: bool,
    /// The open transaction's age, when it holds uncommitted writes.
    pub uncommitted_age: Option<Duration>,
    /// How long until a commit may be tried again after a failure (zero if it may now).
    pub retry_in: Duration,
}

/// How to look at the request queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Receive {
    /// Do not look: a job has waited long enough.
    Skip,
    /// Take a request if one is queued, else go on at once.
    Now,
    /// Poll the queue for up to this long without sleeping (`worker/handoff.rs`).
    Poll(Duration),
    /// Sleep on the queue for at most this long.
    Block(Duration),
    /// Sleep on the queue until a request comes.
    Forever,
}

/// What to do when no request came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Otherwise {
    /// Give the oldest job its next step.
    StepJob,
    /// Commit the open transaction.
    Commit,
    /// Choose again (the situation has changed: the poll after a quick request is over).
    Again,
}

/// The next step: how to receive, and what to do if nothing came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// How to look at the queue.
    pub receive: Receive,
    /// What to do when it gave nothing.
    pub otherwise: Otherwise,
}

/// Chooses the next step. Requests go first; a waiting job gets a step when the queue is
/// empty or after [`JOB_WAIT_LIMIT`]; after a quick request of a stream the worker polls
/// briefly instead of sleeping; with uncommitted writes it sleeps only until the idle
/// commit or the commit interval is due (not before a failed commit may be retried), and
/// without them until a request comes.
pub(crate) fn plan(s: &Situation) -> Plan {
    let (receive, otherwise) = match s.job_waited {
        Some(waited) if waited >= JOB_WAIT_LIMIT => (Receive::Skip, Otherwise::StepJob),
        // The next small request is probably microseconds away: do not start a step just
        // before it arrives.
        Some(_) if s.in_stream => (Receive::Poll(JOB_GAP_POLL), Otherwise::StepJob),
        Some(_) => (Receive::Now, Otherwise::StepJob),
        None if s.in_stream => (Receive::Poll(QUEUE_POLL), Otherwise::Again),
        None => match s.uncommitted_age {
            Some(age) => {
                let due = COMMIT_INTERVAL.saturating_sub(age).min(IDLE_COMMIT_DELAY);
                (Receive::Block(due.max(s.retry_in)), Otherwise::Commit)
            }
            None => (Receive::Forever, Otherwise::Again),
        },
    };
    Plan { receive, otherwise }
}

/// What a request's changes mean for the commit: the store's operations only record the
/// rows they changed (`worker/batch.rs`); which requests make a commit due is decided here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Commit {
    /// Its changes count towards [`MAX_UNCOMMITTED_EVENTS`]: heartbeats and inserts, the
    /// writes that arrive in streams.
    Counted,
    /// If it changed anything, commit after it: bucket creation and deletion (as the
    /// reference does) and an import's first step, which creates its buckets.
    Now,
    /// Its changes wait for the interval, the idle commit or the size bound: deletes of
    /// events and settings, which are rare and small; a long job's middle steps.
    Later,
    /// Commit after it even if it changed nothing itself: an import's last step, or a step
    /// that failed, whose earlier steps' writes are to be kept as they are.
    Finished,
}

/// Notes what the changes a request made since batch mark `mark` mean for the commit.
pub(crate) fn note_changes(batch: &mut Batch, commit: Commit, mark: usize) {
    let changes = batch.len().saturating_sub(mark);
    match commit {
        Commit::Counted => batch.count_events(changes),
        Commit::Now if changes > 0 => batch.request_commit(),
        Commit::Finished => batch.request_commit(),
        Commit::Now | Commit::Later => {}
    }
}

/// Whether the open transaction should be committed after a request or step: a change asked
/// for it (bucket create/delete, an import's end), or more than [`MAX_UNCOMMITTED_EVENTS`]
/// events or [`MAX_BATCH_BYTES`] were written, or its oldest write is [`COMMIT_INTERVAL`]
/// old; never while a failed commit's retry delay runs.
pub(crate) fn commit_due(batch: &Batch, age: Duration, may_retry: bool) -> bool {
    may_retry
        && (batch.commit_requested()
            || batch.counted_events() > MAX_UNCOMMITTED_EVENTS
            || batch.bytes() > MAX_BATCH_BYTES
            || (!batch.is_empty() && age >= COMMIT_INTERVAL))
}

/// The time budget of a long job's next step, given how long ago a quick request was last
/// answered.
pub(crate) fn step_time(since_quick: Option<Duration>) -> Duration {
    if since_quick.is_some_and(|d| d < QUICK_STREAM_GAP) {
        BUSY_STEP_TIME
    } else {
        STEP_TIME
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Change;
    use std::time::Instant;

    const MS: Duration = Duration::from_millis(1);

    fn with(f: impl FnOnce(&mut Situation)) -> Plan {
        let mut s = Situation::default();
        f(&mut s);
        plan(&s)
    }

    #[test]
    fn idle_with_nothing_to_commit_sleeps_until_a_request() {
        assert_eq!(
            with(|_| {}),
            Plan {
                receive: Receive::Forever,
                otherwise: Otherwise::Again
            }
        );
    }

    #[test]
    fn after_a_quick_request_of_a_stream_the_worker_polls_then_chooses_again() {
        assert_eq!(
            with(|s| s.in_stream = true),
            Plan {
                receive: Receive::Poll(QUEUE_POLL),
                otherwise: Otherwise::Again
            }
        );
        // Even with writes pending: the poll comes first, the commit wait after it.
        let p = with(|s| {
            s.in_stream = true;
            s.uncommitted_age = Some(COMMIT_INTERVAL);
        });
        assert_eq!(p.receive, Receive::Poll(QUEUE_POLL));
    }

    #[test]
    fn two_short_gaps_make_a_stream_and_one_long_gap_ends_it() {
        let mut guess = StreamGuess::default();
        assert!(!guess.is_stream());
        guess.note_gap(QUEUE_POLL / 10);
        assert!(!guess.is_stream(), "one short gap is chance");
        guess.note_gap(QUEUE_POLL);
        assert!(guess.is_stream());
        for _ in 0..100 {
            guess.note_gap(Duration::from_micros(20));
        }
        guess.note_gap(Duration::from_millis(333));
        assert!(!guess.is_stream(), "a watcher a second apart");
        guess.note_gap(Duration::from_micros(20));
        assert!(!guess.is_stream());
    }

    /// Feeds `n` requests `every` apart, starting at `t`; returns the time after them.
    fn feed(trial: &mut PollTrial, t: Instant, n: u32, every: Duration) -> Instant {
        let mut t = t;
        for _ in 0..n {
            t += every;
            trial.note_request(t, true, trial.polls());
        }
        t
    }

    #[test]
    fn the_trial_keeps_polling_only_where_it_is_faster() {
        let us = Duration::from_micros(1);
        let mut trial = PollTrial::default();
        assert!(trial.polls(), "it starts by trying the poll");
        // The stream's first count (after the request that starts it) decides nothing.
        let t = feed(&mut trial, Instant::now(), TRIAL_REQUESTS + 1, 500 * us);
        assert_eq!(trial.phase, TrialPhase::START);
        // With, without, without, with: 40 µs a request polling, 80 without.
        let t = feed(&mut trial, t, TRIAL_REQUESTS, 40 * us);
        assert!(!trial.polls(), "then tries without");
        let t = feed(&mut trial, t, TRIAL_REQUESTS, 80 * us);
        assert!(!trial.polls(), "twice");
        let t = feed(&mut trial, t, TRIAL_REQUESTS, 80 * us);
        assert!(trial.polls(), "and with again");
        let t = feed(&mut trial, t, TRIAL_REQUESTS, 40 * us);
        assert_eq!(
            trial.phase,
            TrialPhase::Using {
                poll: true,
                left: TRIAL_USES
            }
        );
        // It keeps the choice for its uses, then tries both again.
        let t = feed(&mut trial, t, TRIAL_REQUESTS * (TRIAL_USES - 1), 40 * us);
        assert!(trial.polls());
        let t = feed(&mut trial, t, TRIAL_REQUESTS, 40 * us);
        assert_eq!(trial.phase, TrialPhase::START);
        // A busy machine now: polling is slower, so it stops, and tries again sooner than
        // after a choice to poll, then later and later.
        let mut t = t;
        for uses in [FIRST_PARK_USES, FIRST_PARK_USES * 2, FIRST_PARK_USES * 4] {
            t = feed_each(&mut trial, t, [100, 50, 50, 100]);
            assert_eq!(
                trial.phase,
                TrialPhase::Using {
                    poll: false,
                    left: uses
                }
            );
            t = feed(&mut trial, t, TRIAL_REQUESTS * uses, 50 * us);
            assert_eq!(trial.phase, TrialPhase::START);
        }
        // Under a quarter faster is not enough to poll; and the order weighs a machine
        // that gets quieter during the trial on both ways alike.
        let mut close = PollTrial::default();
        let t = feed(&mut close, t, TRIAL_REQUESTS + 1, 500 * us);
        feed_each(&mut close, t, [80, 100, 100, 80]);
        assert!(matches!(close.phase, TrialPhase::Using { poll: false, .. }));
        let mut quieter = PollTrial::default();
        let t = feed(&mut quieter, t, TRIAL_REQUESTS + 1, 500 * us);
        feed_each(&mut quieter, t, [100, 70, 50, 60]);
        assert!(matches!(
            quieter.phase,
            TrialPhase::Using { poll: false, .. }
        ));
    }

    /// Feeds one count per entry, each with requests that many µs apart.
    fn feed_each(trial: &mut PollTrial, mut t: Instant, each: [u64; 4]) -> Instant {
        for us in each {
            t = feed(trial, t, TRIAL_REQUESTS, Duration::from_micros(us));
        }
        t
    }

    #[test]
    fn a_pause_in_the_stream_or_another_client_starts_the_count_again() {
        let us = Duration::from_micros(1);
        let mut trial = PollTrial::default();
        let t = feed(&mut trial, Instant::now(), TRIAL_REQUESTS / 2, 40 * us);
        // A watcher's pace: every gap ends the count, nothing is decided.
        let t = feed(&mut trial, t, TRIAL_REQUESTS * 4, TRIAL_GAP);
        assert_eq!(trial.phase, TrialPhase::START);
        // Nor do requests of several clients at once.
        let mut t = t;
        for _ in 0..TRIAL_REQUESTS * 4 {
            t += 40 * us;
            trial.note_request(t, false, true);
        }
        assert_eq!(trial.phase, TrialPhase::START);
        // Nor counts of requests the worker mostly did not poll for while it tries the
        // poll; one in five not polled for is counted, at its time.
        for i in 0..TRIAL_REQUESTS * 4 {
            t += 40 * us;
            trial.note_request(t, true, i % 2 == 0);
        }
        assert_eq!(trial.phase, TrialPhase::START);
        for i in 0..TRIAL_REQUESTS + 1 {
            t += if i % 5 == 0 { 200 * us } else { 40 * us };
            trial.note_request(t, true, i % 5 != 0);
        }
        match trial.phase {
            TrialPhase::Trying {
                step: 1, polling, ..
            } => {
                assert!(polling > 60 * us, "{polling:?}")
            }
            other => panic!("{other:?}"),
        }
        let mut trial = PollTrial::default();
        feed(&mut trial, t, TRIAL_REQUESTS * 2 + 1, 40 * us);
        assert!(
            !trial.polls(),
            "a whole count after the first moves the trial on"
        );
    }

    #[test]
    fn uncommitted_writes_are_committed_after_an_idle_second_or_the_interval() {
        // Fresh writes: sleep at most the idle delay, then commit.
        let p = with(|s| s.uncommitted_age = Some(MS));
        assert_eq!(
            p,
            Plan {
                receive: Receive::Block(IDLE_COMMIT_DELAY),
                otherwise: Otherwise::Commit
            }
        );
        // Near the interval: only what is left of it.
        let p = with(|s| s.uncommitted_age = Some(COMMIT_INTERVAL - 300 * MS));
        assert_eq!(p.receive, Receive::Block(300 * MS));
        // Past it: commit without sleeping.
        let p = with(|s| s.uncommitted_age = Some(COMMIT_INTERVAL + MS));
        assert_eq!(p.receive, Receive::Block(Duration::ZERO));
        // Not before a failed commit may be retried.
        let p = with(|s| {
            s.uncommitted_age = Some(COMMIT_INTERVAL + MS);
            s.retry_in = 700 * MS;
        });
        assert_eq!(p.receive, Receive::Block(700 * MS));
    }

    #[test]
    fn requests_go_before_a_job_until_it_has_waited_its_limit() {
        let p = with(|s| s.job_waited = Some(MS / 2));
        assert_eq!(
            p,
            Plan {
                receive: Receive::Now,
                otherwise: Otherwise::StepJob
            }
        );
        let p = with(|s| {
            s.job_waited = Some(MS / 2);
            s.in_stream = true;
        });
        assert_eq!(p.receive, Receive::Poll(JOB_GAP_POLL));
        for waited in [JOB_WAIT_LIMIT, JOB_WAIT_LIMIT * 10] {
            let p = with(|s| {
                s.job_waited = Some(waited);
                s.in_stream = true;
                s.uncommitted_age = Some(COMMIT_INTERVAL);
            });
            assert_eq!(
                p,
                Plan {
                    receive: Receive::Skip,
                    otherwise: Otherwise::StepJob
                }
            );
        }
    }

    #[test]
    fn commits_are_due_by_request_count_size_or_age() {
        let mut batch = Batch::default();
        assert!(!commit_due(&batch, COMMIT_INTERVAL * 2, true));
        batch.changes().record(Change::DeleteEvent {
            id: 1,
            bucketrow: 1,
        });
        assert!(!commit_due(&batch, MS, true));
        assert!(commit_due(&batch, COMMIT_INTERVAL, true));
        assert!(!commit_due(&batch, COMMIT_INTERVAL, false));
        batch.count_events(MAX_UNCOMMITTED_EVENTS + 1);
        assert!(commit_due(&batch, MS, true));
        let mut big = Batch::default();
        big.changes().record(Change::SetKeyValue {
            key: "k".into(),
            value: "x".repeat(MAX_BATCH_BYTES),
            modified: 0,
        });
        assert!(commit_due(&big, MS, true));
        let mut asked = Batch::default();
        asked.request_commit();
        assert!(commit_due(&asked, Duration::ZERO, true));
    }

    #[test]
    fn what_a_request_changed_decides_its_commit() {
        let change = || Change::DeleteEvent {
            id: 1,
            bucketrow: 1,
        };
        let mut batch = Batch::default();
        batch.changes().record(change());
        let mark = batch.len();
        // A request that changed nothing (a failed create, a filtered heartbeat).
        note_changes(&mut batch, Commit::Now, mark);
        note_changes(&mut batch, Commit::Counted, mark);
        assert!(!commit_due(&batch, MS, true));
        // Streamed writes count their rows; past the limit a commit is due.
        for _ in 0..MAX_UNCOMMITTED_EVENTS {
            let mark = batch.len();
            batch.changes().record(change());
            note_changes(&mut batch, Commit::Counted, mark);
        }
        assert!(!commit_due(&batch, MS, true));
        let mark = batch.len();
        batch.changes().record(change());
        note_changes(&mut batch, Commit::Later, mark);
        assert!(!commit_due(&batch, MS, true), "deletes wait");
        let mark = batch.len();
        batch.changes().record(change());
        note_changes(&mut batch, Commit::Counted, mark);
        assert!(commit_due(&batch, MS, true));
        // A bucket change commits at once.
        let mut bucket = Batch::default();
        let mark = bucket.len();
        bucket.changes().record(Change::DeleteBucket { row: 1 });
        note_changes(&mut bucket, Commit::Now, mark);
        assert!(commit_due(&bucket, Duration::ZERO, true));
        // An import's end commits its earlier steps' writes.
        let mut import = Batch::default();
        import.changes().record(change());
        note_changes(&mut import, Commit::Later, 0);
        assert!(!commit_due(&import, MS, true));
        let mark = import.len();
        note_changes(&mut import, Commit::Finished, mark);
        assert!(commit_due(&import, MS, true));
    }

    #[test]
    fn long_jobs_take_shorter_steps_while_quick_requests_stream() {
        assert_eq!(step_time(None), STEP_TIME);
        assert_eq!(step_time(Some(MS)), BUSY_STEP_TIME);
        assert_eq!(step_time(Some(QUICK_STREAM_GAP)), STEP_TIME);
    }
}
