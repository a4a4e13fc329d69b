//! Heavy request work, handed to the process's one CPU pool (`aw_query::cpu_pool`).
//!
//! A year-long dashboard query is seconds of CPU; parsing a 100 MB import or writing a
//! month of events is a good fraction of one. Run on the async workers such work would block
//! every other request; run on tokio's blocking pool (as imports, exports and large fetches
//! once were), several at once would take every core from the threads that answer
//! heartbeats. [`run`] queues it on the CPU pool instead: one low-priority thread per core,
//! more work waits in line (none is refused), and the awaiting handler does not hold a
//! thread meanwhile. A heartbeat is answered promptly however many dashboards are open.

use rocket::tokio::sync::oneshot;

use crate::error::ApiError;

/// Runs `f` on the CPU pool and waits (asynchronously) for its result. A panic in `f` is
/// caught on the pool thread, which goes on serving (the pool keeps its size), and is
/// answered as a 500 with the panic's message.
pub async fn run<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    aw_query::cpu_pool::spawn(move || {
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
        let threads = aw_query::cpu_pool::threads();
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

    #[rocket::async_test]
    async fn runs_tasks_and_returns_results() {
        let mut out = Vec::new();
        for i in 0..4 {
            out.push(run(move || i * i).await.unwrap());
        }
        assert_eq!(out, vec![0, 1, 4, 9]);
    }
}
