//! The process's one pool of CPU threads, and heavy request work handed to it: query
//! evaluation (with a query's periods and long lists in parallel inside it), large JSON
//! parsing and writing, imports and exports.
//!
//! A year-long dashboard query is seconds of CPU; parsing a 100 MB import or writing a
//! month of events is a good fraction of one. Run on the async workers such work would block
//! every other request; run on tokio's blocking pool (as imports, exports and large fetches
//! once were), several at once would take every core from the threads that answer
//! heartbeats. [`run`] queues it on the CPU pool instead, and the awaiting handler does not
//! hold a thread meanwhile:
//!
//! * one thread per core, named `aw-cpu-N`, each with [`aw_query::EVAL_STACK`] (evaluation
//!   recurses as deep as a query nests);
//! * at a lower priority ([`aw_platform::sched::lower_priority`]): the kernel prefers the
//!   async thread and the datastore thread when they have work, so a heartbeat is answered
//!   promptly however many dashboards are open; heavy work still gets every idle cycle;
//! * work stealing (rayon): a task that splits into parts (a week's seven periods) waits
//!   for them by running queued work itself, so parts never deadlock a fixed set of
//!   threads. aw-query and aw-models split their work over the pool they are called on, so
//!   running a task here is all it takes. Tasks beyond the number of cores wait in line;
//!   none is refused.
//!
//! If the pool cannot be started, work runs on the calling thread.

use std::sync::OnceLock;

use rocket::tokio::sync::oneshot;

use crate::error::ApiError;

static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();

/// The pool, started on first use (`None` if it could not be started).
fn pool() -> Option<&'static rayon::ThreadPool> {
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("aw-cpu-{i}"))
            .stack_size(aw_query::EVAL_STACK)
            .start_handler(|_| aw_platform::sched::lower_priority())
            .build()
            .map_err(|e| log::error!("Cannot start the CPU pool ({e}); working inline"))
            .ok()
    })
    .as_ref()
}

/// Queues `f` on the pool without waiting (the caller learns the result through whatever
/// `f` sends). Without a pool, runs it now.
fn spawn(f: impl FnOnce() + Send + 'static) {
    match pool() {
        Some(pool) => pool.spawn(f),
        None => f(),
    }
}

/// The number of threads parallel work is split over.
#[cfg(test)]
fn threads() -> usize {
    pool().map_or(1, rayon::ThreadPool::current_num_threads)
}

/// Runs `f` on the CPU pool and waits (asynchronously) for its result. A panic in `f` is
/// caught on the pool thread, which goes on serving (the pool keeps its size), and is
/// answered as a 500 with the panic's message.
pub(crate) async fn run<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    spawn(move || {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log::error!("A task on the CPU pool panicked: {message}");
            ApiError::internal(format!("evaluation failed: {message}"))
        });
        let _ = tx.send(result);
    });
    rx.await
        .map_err(|_| ApiError::internal("the CPU pool has stopped"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More panicking tasks than threads, then normal tasks: every panic is a 500 and every
    /// thread still serves (a thread lost per panic would leave none after two).
    #[rocket::async_test]
    async fn a_panicking_task_is_an_error_and_the_pool_keeps_its_threads() {
        for i in 0..5 {
            let err = run(move || -> i32 { panic!("boom {i}") })
                .await
                .unwrap_err();
            assert_eq!(err.status.code, 500);
            assert!(
                err.message.contains(&format!("boom {i}")),
                "{}",
                err.message
            );
        }
        let threads = threads();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(threads));
        // Tasks that wait for each other can only finish if every thread is alive.
        let tasks: Vec<_> = (0..threads)
            .map(|_| {
                let (seen, barrier) = (seen.clone(), barrier.clone());
                // Spawned, so every task is queued at once (a future runs only when polled).
                rocket::tokio::spawn(run(move || {
                    barrier.wait();
                    seen.lock().unwrap().insert(std::thread::current().id());
                }))
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(seen.lock().unwrap().len(), threads);
    }

    /// More parts than threads, each waiting for parts of its own: finishes (work stealing)
    /// on the pool's threads, which run at the lowered priority; parallel work inside a
    /// task (as aw-query's) runs on the same pool.
    #[rocket::async_test]
    async fn nested_parallel_work_finishes_on_the_pool_at_low_priority() {
        use rayon::prelude::*;
        let sums: Vec<u64> = run(|| {
            (0..16u64)
                .into_par_iter()
                .map(|i| (0..1000u64).into_par_iter().map(|j| i * j).sum())
                .collect()
        })
        .await
        .unwrap();
        assert_eq!(sums[3], 3 * 499_500);
        let (name, nice, pool_threads) = run(|| {
            let name = std::thread::current().name().map(str::to_string);
            #[cfg(target_os = "linux")]
            // SAFETY: getpriority takes plain integers.
            let nice = unsafe {
                libc::getpriority(libc::PRIO_PROCESS, libc::syscall(libc::SYS_gettid) as _)
            };
            #[cfg(not(target_os = "linux"))]
            let nice = aw_platform::sched::NICE_INCREMENT;
            (name, nice, rayon::current_num_threads())
        })
        .await
        .unwrap();
        assert!(name.unwrap_or_default().starts_with("aw-cpu-"));
        assert!(nice >= aw_platform::sched::NICE_INCREMENT, "nice {nice}");
        assert_eq!(pool_threads, threads());
    }

    #[rocket::async_test]
    async fn runs_tasks_and_returns_results() {
        let mut out = Vec::new();
        for i in 0..4 {
            out.push(run(move || i * i).await.unwrap());
        }
        assert_eq!(out, vec![0, 1, 4, 9]);
    }
}
