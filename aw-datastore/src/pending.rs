//! The answer to a request, awaited in async code or waited for on a thread.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

use crate::error::{DatastoreError, Result};

/// The answer to one request: `.await` it in async code, or [`Pending::wait`] on a thread.
#[must_use = "a request's answer must be awaited or waited for"]
pub struct Pending<T> {
    state: PendingState<T>,
}

enum PendingState<T> {
    /// The worker will answer on this channel; `Quick` if the answer is expected within
    /// microseconds (see [`ANSWER_SPIN`]).
    Asked(oneshot::Receiver<Result<T>>, Wait),
    /// Answered without the worker (a failed conversion, or a read of published state).
    Done(Option<Result<T>>),
}

impl<T> Pending<T> {
    /// The answer of a request sent to the worker, which polls for it first if `quick`.
    pub(crate) fn asked(rx: oneshot::Receiver<Result<T>>, quick: bool) -> Self {
        let wait = if quick { Wait::Quick } else { Wait::Park };
        Pending {
            state: PendingState::Asked(rx, wait),
        }
    }

    pub(crate) fn ready(error: DatastoreError) -> Self {
        Pending::done(Err(error))
    }

    pub(crate) fn done(result: Result<T>) -> Self {
        Pending {
            state: PendingState::Done(Some(result)),
        }
    }

    /// Blocks the current thread until the worker answers. Must not be called from inside an
    /// async runtime (use `.await` there).
    pub fn wait(self) -> Result<T> {
        match self.state {
            PendingState::Asked(rx, _) => rx
                .blocking_recv()
                .unwrap_or(Err(DatastoreError::WorkerGone)),
            PendingState::Done(result) => result.unwrap_or(Err(DatastoreError::WorkerGone)),
        }
    }
}

/// How an async caller waits for the worker's answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Poll the channel for up to [`ANSWER_SPIN`] first, then park ([`Request::is_quick`]).
    Quick,
    /// Park the task at once (long requests, and quick ones after their spin).
    Park,
}

/// How long the first poll of a quick request's answer keeps polling before the task parks.
///
/// A heartbeat or a small read takes the worker microseconds, while parking the async worker
/// thread and waking it again costs a futex sleep and a cross-CPU wake-up: tens of
/// microseconds on a virtual machine, where they dominated a small request's time. The worker
/// thread polls its queue the same way after a quick request (`schedule::IDLE_SPIN`), so a
/// back-to-back small request crosses threads without either side sleeping. Bounded, so a
/// worker busy with a long step costs the caller at most this much CPU before it parks.
const ANSWER_SPIN: Duration = Duration::from_micros(100);

/// Polls `rx` without registering a waker for up to [`ANSWER_SPIN`]; `None` if no answer came.
fn spin_for_answer<T>(rx: &mut oneshot::Receiver<Result<T>>) -> Option<Result<T>> {
    let until = Instant::now() + ANSWER_SPIN;
    loop {
        match rx.try_recv() {
            Ok(answer) => return Some(answer),
            Err(oneshot::error::TryRecvError::Closed) => {
                return Some(Err(DatastoreError::WorkerGone))
            }
            Err(oneshot::error::TryRecvError::Empty) => {}
        }
        if Instant::now() >= until {
            return None;
        }
        std::hint::spin_loop();
    }
}

/// The future behind `Pending`'s `IntoFuture`.
pub struct PendingFuture<T>(Pending<T>);

// The answer is only ever moved out, never pinned, so the future can move freely.
impl<T> Unpin for PendingFuture<T> {}

impl<T> Future for PendingFuture<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0.state {
            PendingState::Asked(rx, wait) => {
                if *wait == Wait::Quick {
                    *wait = Wait::Park;
                    if let Some(answer) = spin_for_answer(rx) {
                        return Poll::Ready(answer);
                    }
                }
                Pin::new(rx)
                    .poll(cx)
                    .map(|r| r.unwrap_or(Err(DatastoreError::WorkerGone)))
            }
            PendingState::Done(result) => {
                Poll::Ready(result.take().unwrap_or(Err(DatastoreError::WorkerGone)))
            }
        }
    }
}

impl<T> IntoFuture for Pending<T> {
    type Output = Result<T>;
    type IntoFuture = PendingFuture<T>;

    fn into_future(self) -> Self::IntoFuture {
        PendingFuture(self)
    }
}
