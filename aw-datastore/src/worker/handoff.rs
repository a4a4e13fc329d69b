//! Handing a request to the worker and its answer back: when a thread polls instead of
//! sleeping.
//!
//! A thread that sleeps on a channel must be woken by the other side: a futex call for the
//! waker and, for the sleeper, a wake-up on a CPU whose caches went cold (tens of
//! microseconds on a virtual machine, more than a heartbeat's own work). Polling for a few
//! microseconds avoids both, but only pays back when the other side really answers within
//! the poll; otherwise it is CPU taken from the machine (a laptop's battery, the other
//! programs) and, under load, from the server's own threads. So each side polls only when
//! the situation says it pays:
//!
//! * **The worker** polls its queue after answering a quick request only while requests
//!   have lately been arriving within [`QUEUE_POLL`] of the previous answer
//!   (`schedule::StreamGuess`) from one client at a time: a script or a watcher's queue
//!   sending back to back. Watchers at one heartbeat a second never make it poll, and
//!   neither do many connections at once: the async thread is then the bottleneck, and a
//!   polling worker would only take a CPU from it (and from the clients). And only while
//!   polling has lately proven faster than sleeping on this machine, for this stream
//!   (`schedule::PollTrial`): with one core kept busy by another program, the poll takes
//!   the CPU the client and the async thread wait for.
//! * **A caller** polls for its answer only when the worker is polling its queue as the
//!   request is sent (so it starts on it at once) and no other request is waiting for an
//!   answer: the async thread then has nothing else to do, while with other requests in
//!   flight it has other connections to serve, and polling would hold them up.
//!
//! What each poll costs at one request a second and under full load is in BENCHMARKS.md.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long the worker polls its queue after a quick request when requests stream in; also
/// the gap between an answer and the next request below which a request counts as part of a
/// stream (`schedule::StreamGuess`).
pub(crate) const QUEUE_POLL: Duration = Duration::from_micros(200);

/// How long a caller polls for its answer (when it does: see the module docs) before it
/// parks. The worker, already polling, answers a heartbeat well within it.
pub(crate) const ANSWER_POLL: Duration = Duration::from_micros(100);

/// After polling this long, a poll gives its CPU to any other runnable thread between
/// attempts (the load generator of a benchmark, the async thread, another program), so a
/// poll never delays work that is ready to run. (At 20 µs, a poll that shared its core with
/// the async thread held each answer back that long: the trial then measured polling at 90
/// µs a request, slower than sleeping, on an idle machine.)
const YIELD_AFTER: Duration = Duration::from_micros(5);

/// What the two sides of the hand-off tell each other (shared by the handles and the worker).
#[derive(Debug, Default)]
pub(crate) struct Handoff {
    /// The worker is polling its queue right now.
    polling: AtomicBool,
    /// Requests sent to the worker whose callers have not had their answer yet.
    waiting: AtomicUsize,
    /// Whether the last request sent found no other request waiting.
    last_alone: AtomicBool,
}

impl Handoff {
    /// Counts a request about to be sent; returns whether its caller should poll for the
    /// answer (see the module docs). [`Handoff::answered`] must follow, once.
    pub(crate) fn sending(&self, quick: bool) -> bool {
        let alone = self.waiting.fetch_add(1, Ordering::AcqRel) == 0;
        self.last_alone.store(alone, Ordering::Relaxed);
        quick && alone && self.polling.load(Ordering::Acquire)
    }

    /// Whether the last request sent found no other request waiting: requests come from one
    /// client at a time, the only case where the worker's poll pays back.
    pub(crate) fn one_client(&self) -> bool {
        self.last_alone.load(Ordering::Relaxed)
    }

    /// The caller of a counted request has its answer (or gave up on it).
    pub(crate) fn answered(&self) {
        self.waiting.fetch_sub(1, Ordering::AcqRel);
    }

    /// The worker polls its queue for up to `window`, saying so while it does.
    pub(crate) fn worker_polls<T>(
        &self,
        window: Duration,
        attempt: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        self.polling.store(true, Ordering::Release);
        let got = poll_for(window, attempt);
        self.polling.store(false, Ordering::Release);
        got
    }
}

/// Calls `attempt` until it gives a value or `window` has passed (at least once); gives the
/// CPU away between attempts after [`YIELD_AFTER`].
pub(crate) fn poll_for<T>(window: Duration, mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = attempt() {
            return Some(value);
        }
        let polled = started.elapsed();
        if polled >= window {
            return None;
        }
        if polled >= YIELD_AFTER {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_polls_only_when_alone_and_the_worker_polls() {
        let h = Handoff::default();
        assert!(!h.sending(true), "the worker is asleep");
        h.answered();
        h.polling.store(true, Ordering::Release);
        assert!(!h.sending(false), "a long request");
        h.answered();
        assert!(h.sending(true));
        assert!(h.one_client());
        assert!(!h.sending(true), "another request is waiting");
        assert!(!h.one_client());
        h.answered();
        h.answered();
        assert!(h.sending(true));
        h.answered();
    }

    #[test]
    fn a_poll_ends_with_the_value_or_after_its_window() {
        let mut n = 0;
        assert_eq!(
            poll_for(Duration::from_secs(5), || {
                n += 1;
                (n == 3).then_some(n)
            }),
            Some(3)
        );
        let t = Instant::now();
        assert_eq!(poll_for(Duration::from_millis(2), || None::<()>), None);
        assert!(t.elapsed() >= Duration::from_millis(2));
        let mut tried = 0;
        assert_eq!(
            poll_for(Duration::ZERO, || {
                tried += 1;
                None::<()>
            }),
            None
        );
        assert_eq!(tried, 1, "tried once even with no window");
    }
}
