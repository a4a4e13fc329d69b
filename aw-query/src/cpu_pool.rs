//! The process's one pool of CPU threads: query evaluation, a query's periods, interning
//! large bucket reads, and the server's large JSON parsing and writing all run here.
//!
//! One bounded pool makes "at most one heavy task per core" true: before it, five places
//! started threads of their own (a query's periods, interning, JSON writing, the query
//! pool, tokio's blocking pool), so two dashboards and an export could run many more
//! threads than cores, all competing with the threads that answer heartbeats.
//!
//! * One thread per core, each with [`EVAL_STACK`](crate::EVAL_STACK) (evaluation recurses
//!   as deep as a query nests), named `aw-cpu-N`.
//! * At a lower priority (`nice` +[`NICE_INCREMENT`]): the kernel prefers the async thread
//!   and the datastore thread when they have work, so a heartbeat is answered promptly
//!   however many dashboards are open; heavy work still gets every idle cycle and a share
//!   of a busy machine.
//! * Work stealing (rayon): a task that splits into parts (a week's seven periods) waits
//!   for them by running queued work itself, so parts never deadlock a fixed set of
//!   threads. Tasks beyond the number of cores wait in line; none is refused.
//!
//! If the pool cannot be started, work runs on the calling thread.

use std::sync::OnceLock;

/// How much lower than the server's own threads the pool's threads are scheduled. Low
/// enough that the async thread and the datastore thread win the CPU when they wake (a
/// heartbeat is answered promptly however many dashboards are open), high enough that a
/// dashboard is not starved on a busy machine. `aw-soak --compare` (20 s, 30 days, the
/// reference beside it in the same run), while the write loops kept the cores busy: week
/// queries at 1.53x the reference's rate with p99 1.33x its p99 at 19 (weight 15 against
/// a normal thread's 1024), 1.89x with p99 0.76x at 10 (weight 110); heartbeat p95 under
/// one-year query loops stays within 2 ms at 10 (BENCHMARKS.md).
pub const NICE_INCREMENT: i32 = 10;

static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();

/// The pool, started on first use (`None` if it could not be started).
fn pool() -> Option<&'static rayon::ThreadPool> {
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("aw-cpu-{i}"))
            .stack_size(crate::EVAL_STACK)
            .start_handler(|_| lower_priority())
            .build()
            .map_err(|e| log::error!("Cannot start the CPU pool ({e}); working inline"))
            .ok()
    })
    .as_ref()
}

/// Runs `f` in the pool and waits for it (directly, if called from a pool thread). Parallel
/// iterators inside `f` use the pool's threads.
pub fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Queues `f` on the pool without waiting (the caller learns the result through whatever
/// `f` sends). Without a pool, runs it now.
pub fn spawn(f: impl FnOnce() + Send + 'static) {
    match pool() {
        Some(pool) => pool.spawn(f),
        None => f(),
    }
}

/// The number of threads parallel work is split over.
pub fn threads() -> usize {
    pool().map_or(1, rayon::ThreadPool::current_num_threads)
}

/// Raises the calling thread's nice value to the pool's (Linux: `setpriority` on a thread
/// id applies to that thread only) and gives it the kernel's default time slice
/// (`aw_models::sched`), for other background work that must yield to requests as the pool
/// does. Failure only costs the priority, so it is logged and ignored.
pub fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take plain integers and have no memory effects.
        let result = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, NICE_INCREMENT)
        };
        if result != 0 {
            log::debug!("could not lower a background thread's priority");
        }
    }
    // A thread inherits its creator's time slice; heavy work switches less with the
    // default one.
    aw_models::sched::default_slices();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More parts than threads, each waiting for parts of its own: finishes (work stealing)
    /// on the pool's threads, which run at the lowered priority.
    #[test]
    fn nested_parallel_work_finishes_on_the_pool_at_low_priority() {
        use rayon::prelude::*;
        let sums: Vec<u64> = install(|| {
            (0..16u64)
                .into_par_iter()
                .map(|i| (0..1000u64).into_par_iter().map(|j| i * j).sum())
                .collect()
        });
        assert_eq!(sums[3], 3 * 499_500);
        let (name, nice) = install(|| {
            let name = std::thread::current().name().map(str::to_string);
            #[cfg(target_os = "linux")]
            // SAFETY: getpriority takes plain integers.
            let nice = unsafe {
                libc::getpriority(libc::PRIO_PROCESS, libc::syscall(libc::SYS_gettid) as _)
            };
            #[cfg(not(target_os = "linux"))]
            let nice = NICE_INCREMENT;
            (name, nice)
        });
        assert!(name.unwrap_or_default().starts_with("aw-cpu-"));
        assert!(nice >= NICE_INCREMENT, "nice {nice}");
    }
}
