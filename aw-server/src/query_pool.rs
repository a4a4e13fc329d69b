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
                // Parsing, evaluating and serialising recurse as deep as the query nests.
                .stack_size(aw_query::EVAL_STACK)
                .spawn(move || {
                    lower_priority();
                    for task in queue {
                        task();
                    }
                })?;
        }
        Ok(QueryPool { tasks })
    }

    /// Runs `f` on the pool and waits (asynchronously) for its result. A panic in `f` is
    /// caught on the pool thread, which goes on serving (the pool keeps its size), and is
    /// answered as a 500 with the panic's message.
    pub async fn run<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.tasks
            .send(Box::new(move || {
                let result =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
                        let message = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        log::error!("A query panicked: {message}");
                        ApiError::internal(format!("query evaluation failed: {message}"))
                    });
                let _ = tx.send(result);
            }))
            .map_err(|_| ApiError::internal("the query pool has stopped"))?;
        rx.await
            .map_err(|_| ApiError::internal("query evaluation failed"))?
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

    /// More panicking tasks than threads, then normal tasks: every panic is a 500 and every
    /// thread still serves (a thread lost per panic would leave none after two).
    #[rocket::async_test]
    async fn a_panicking_task_is_an_error_and_the_pool_keeps_its_threads() {
        let pool = QueryPool::new(2).unwrap();
        for i in 0..5 {
            let err = pool
                .run(move || -> i32 { panic!("boom {i}") })
                .await
                .unwrap_err();
            assert_eq!(err.status.code, 500);
            assert!(
                err.message.contains(&format!("boom {i}")),
                "{}",
                err.message
            );
        }
        let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (a, b) = (seen.clone(), barrier.clone());
        let (c, d) = (seen.clone(), barrier.clone());
        // Two tasks that wait for each other can only finish if both threads are alive.
        let (x, y) = rocket::tokio::join!(
            pool.run(move || {
                b.wait();
                a.lock().unwrap().insert(std::thread::current().id());
            }),
            pool.run(move || {
                d.wait();
                c.lock().unwrap().insert(std::thread::current().id());
            })
        );
        x.unwrap();
        y.unwrap();
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

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
