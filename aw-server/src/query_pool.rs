//! The pool that evaluates queries: a few threads at lowered scheduling priority.
//!
//! A year-long dashboard query is seconds of CPU. Run on the async workers it would block
//! every other request; run on the general blocking pool, several at once would take every
//! core from the threads that answer heartbeats. Here at most one query per core runs at a
//! time (more wait in line; none is refused), on threads whose `nice` value is raised, so the
//! kernel always prefers the async workers and the datastore thread when they have work: a
//! heartbeat is answered promptly however many dashboards are open.

use crossbeam_channel::{Receiver, Sender};
use rocket::tokio::sync::oneshot;

use crate::error::ApiError;

type Task = Box<dyn FnOnce() + Send>;

/// How much lower than the server's own threads the query threads are scheduled: the
/// largest `nice` increment, so a heartbeat's threads preempt a running query at once. Queries
/// lose nothing when the server is otherwise idle (they still get every idle cycle). With 10
/// instead, heartbeat p95 under 2-4 query loops was bimodal, 0.7-3.5 ms; with 19, 0.55 ms.
const NICE_INCREMENT: i32 = 19;

/// A fixed set of low-priority threads fed by a queue.
pub struct QueryPool {
    tasks: Sender<Task>,
}

impl QueryPool {
    /// Starts `threads` worker threads.
    pub fn new(threads: usize) -> std::io::Result<QueryPool> {
        let (tasks, queue) = crossbeam_channel::unbounded::<Task>();
        for i in 0..threads.max(1) {
            let queue: Receiver<Task> = queue.clone();
            std::thread::Builder::new()
                .name(format!("aw-query-{i}"))
                .spawn(move || {
                    lower_priority();
                    for task in queue {
                        task();
                    }
                })?;
        }
        Ok(QueryPool { tasks })
    }

    /// Runs `f` on the pool and waits (asynchronously) for its result.
    pub async fn run<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.tasks
            .send(Box::new(move || {
                let _ = tx.send(f());
            }))
            .map_err(|_| ApiError::internal("the query pool has stopped"))?;
        rx.await
            .map_err(|_| ApiError::internal("query evaluation failed"))
    }
}

/// Raises the calling thread's nice value (Linux: `setpriority` on a thread id applies to
/// that thread only). Failure only costs the priority, so it is logged and ignored.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take plain integers and have no memory effects.
        let result = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, NICE_INCREMENT)
        };
        if result != 0 {
            log::debug!("could not lower the query thread's priority");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rocket::async_test]
    async fn runs_tasks_and_returns_results() {
        let pool = QueryPool::new(2).unwrap();
        let results: Vec<i32> = futures_join(&pool).await;
        assert_eq!(results, vec![0, 1, 4, 9]);
    }

    async fn futures_join(pool: &QueryPool) -> Vec<i32> {
        let mut out = Vec::new();
        for i in 0..4 {
            out.push(pool.run(move || i * i).await.unwrap());
        }
        out
    }
}
