//! The answer to a request, awaited in async code or waited for on a thread.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::oneshot;

use crate::error::{DatastoreError, Result};
use crate::worker::handoff::{poll_for, ANSWER_POLL};
use crate::worker::Shared;

/// The answer to one request: `.await` it in async code, or [`Answer::wait`] on a thread.
#[must_use = "a request's answer must be awaited or waited for"]
pub struct Answer<T> {
    state: PendingState<T>,
    /// Held (for its `Drop`) while a request sent to the worker waits for its answer.
    _waiting: Option<Waiting>,
}

enum PendingState<T> {
    /// The worker will answer on this channel; `Poll` if the caller should poll for it
    /// first (`worker/handoff.rs`).
    Asked(oneshot::Receiver<Result<T>>, Wait),
    /// Answered without the worker (a failed conversion, or a read of published state).
    Done(Option<Result<T>>),
}

/// A request counted as waiting for its answer (`Handoff::sending`); uncounted when dropped.
pub(crate) struct Waiting(pub(crate) Arc<Shared>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.handoff.answered();
    }
}

impl<T> Answer<T> {
    /// The answer of a request sent to the worker; the caller polls for it first if `poll`.
    pub(crate) fn asked(rx: oneshot::Receiver<Result<T>>, poll: bool, waiting: Waiting) -> Self {
        let wait = if poll { Wait::Poll } else { Wait::Park };
        Answer {
            state: PendingState::Asked(rx, wait),
            _waiting: Some(waiting),
        }
    }

    pub(crate) fn ready(error: DatastoreError) -> Self {
        Answer::done(Err(error))
    }

    pub(crate) fn done(result: Result<T>) -> Self {
        Answer {
            state: PendingState::Done(Some(result)),
            _waiting: None,
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
    /// Poll the channel for up to [`ANSWER_POLL`] first, then park (`worker/handoff.rs`).
    Poll,
    /// Park the task at once.
    Park,
}

/// The future behind `Answer`'s `IntoFuture`.
pub struct AnswerFuture<T>(Answer<T>);

// The answer is only ever moved out, never pinned, so the future can move freely.
impl<T> Unpin for AnswerFuture<T> {}

impl<T> Future for AnswerFuture<T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0.state {
            PendingState::Asked(rx, wait) => {
                if *wait == Wait::Poll {
                    *wait = Wait::Park;
                    let answer = poll_for(ANSWER_POLL, || match rx.try_recv() {
                        Ok(answer) => Some(answer),
                        Err(oneshot::error::TryRecvError::Closed) => {
                            Some(Err(DatastoreError::WorkerGone))
                        }
                        Err(oneshot::error::TryRecvError::Empty) => None,
                    });
                    if let Some(answer) = answer {
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

impl<T> IntoFuture for Answer<T> {
    type Output = Result<T>;
    type IntoFuture = AnswerFuture<T>;

    fn into_future(self) -> Self::IntoFuture {
        AnswerFuture(self)
    }
}
