//! How the server's threads ask the kernel for the CPU: the datastore thread, which every
//! write and read waits on, takes short time slices, so it gets a core back quickly; heavy
//! background work (the CPU pool, sync, backups) runs at a lower priority
//! ([`lower_priority`]).
//!
//! Linux's scheduler (EEVDF) lets a thread with a shorter time slice than the one running
//! preempt it when it wakes, and time-slices it more finely (6.12 and later;
//! `sched_setattr(2)`'s `sched_runtime` for a normal thread). While queries kept both cores
//! busy, the datastore thread otherwise waited out a query thread's default slice (about
//! 1.4 ms here) now and then, and a heartbeat with it: with 16 one-year query loops, 6% of
//! heartbeats waited over 2 ms (p95 3.8 ms); with 0.1 ms slices for the datastore thread,
//! 2.8% did (p95 0.24 ms; BENCHMARKS.md). The async thread keeps the default slice: with
//! short slices it cost 15% more CPU per request at one request a second (every watcher's
//! load) for no further gain. Heavy threads keep the default too (fewer switches). On other
//! systems, or older kernels, nothing changes.

/// How much lower than the server's own threads background threads are scheduled. Low
/// enough that the async thread and the datastore thread win the CPU when they wake (a
/// heartbeat is answered promptly however many dashboards are open), high enough that a
/// dashboard is not starved on a busy machine. `aw-soak --compare` (20 s, 30 days, the
/// reference beside it in the same run), while the write loops kept the cores busy: week
/// queries at 1.53x the reference's rate with p99 1.33x its p99 at 19 (weight 15 against
/// a normal thread's 1024), 1.89x with p99 0.76x at 10 (weight 110); heartbeat p95 under
/// one-year query loops stays within 2 ms at 10 (BENCHMARKS.md).
pub const NICE_INCREMENT: i32 = 10;

/// Raises the calling thread's nice value by [`NICE_INCREMENT`] (Linux: `setpriority` on a
/// thread id applies to that thread only) and gives it the kernel's default time slice,
/// for heavy work that must yield to requests: the server's CPU pool, sync passes,
/// backups. Failure only costs the priority, so it is logged and ignored.
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
    default_slices();
}

/// The nice value [`idle_priority`] sets: the lowest priority there is.
pub const IDLE_NICE: i32 = 19;

/// Sets the calling thread's nice value to [`IDLE_NICE`], for work done only while nothing
/// else wants the CPU (the server's days kept ready): below the CPU pool, whose queries a
/// user waits for. Failure only costs the priority (logged at debug level).
pub fn idle_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and setpriority take plain integers and have no memory effects.
        let result = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, IDLE_NICE)
        };
        if result != 0 {
            log::debug!("could not give a background thread the idle priority");
        }
    }
}

/// The slice [`short_slices`] asks for: the shortest the kernel allows.
pub const SHORT_SLICE_NS: u64 = 100_000;

/// Makes the calling thread take [`SHORT_SLICE_NS`] slices (its nice value unchanged): for
/// the datastore thread, which requests wait on. Failure only costs the latency (logged at
/// debug level).
pub fn short_slices() {
    set_slice(SHORT_SLICE_NS);
}

/// Gives the calling thread the kernel's default slice again (threads inherit their
/// creator's slice): for heavy background threads, whoever started them.
pub fn default_slices() {
    set_slice(0);
}

/// `struct sched_attr` of `sched_setattr(2)`, its first version (48 bytes).
#[cfg(target_os = "linux")]
#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Sets the calling thread's slice (0: the default), keeping the normal policy and its
/// nice value.
#[cfg(target_os = "linux")]
fn set_slice(runtime_ns: u64) {
    // SAFETY: getpriority takes plain integers; with PRIO_PROCESS and 0 Linux reads the
    // calling thread's nice value. It returns -1 both for nice -1 and for an error, so errno
    // is cleared first and checked after.
    let nice = unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        if nice == -1 && *libc::__errno_location() != 0 {
            log::debug!("could not read a thread's nice value; its slice is left as it is");
            return;
        }
        nice
    };
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: nice,
        sched_priority: 0,
        sched_runtime: runtime_ns,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: sched_setattr reads `attr`, a fully initialised struct of the size it states,
    // for the calling thread (pid 0), and writes nothing.
    let result = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if result != 0 {
        log::debug!("could not set a thread's time slice (kernel before 6.12?)");
    }
}

#[cfg(not(target_os = "linux"))]
fn set_slice(_runtime_ns: u64) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The slice this thread has, from `/proc/thread-self/sched` (ns), if the kernel shows it.
    fn slice() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
        let line = text.lines().find(|l| l.starts_with("se.slice"))?;
        line.split(':').nth(1)?.trim().parse().ok()
    }

    /// Whether the running kernel's version is at least `major.minor`.
    fn kernel_at_least(major: u32, minor: u32) -> bool {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut parts = release.split(|c: char| !c.is_ascii_digit());
        let mut next = || {
            parts
                .next()
                .and_then(|p| p.parse::<u32>().ok())
                .unwrap_or(0)
        };
        (next(), next()) >= (major, minor)
    }

    #[test]
    fn a_thread_takes_short_slices_and_gives_them_back() {
        std::thread::spawn(|| {
            let before = slice();
            short_slices();
            // Kernels before 6.12 ignore the request; later ones take it and show it.
            if before.is_some() && kernel_at_least(6, 12) {
                assert_eq!(slice(), Some(SHORT_SLICE_NS));
            } else {
                // The test command's switch (aw_tests::REQUIRE_PREREQUISITES; this crate
                // cannot depend on aw-tests).
                assert!(
                    std::env::var_os("AW_REQUIRE_PREREQUISITES").is_none_or(|v| v != "1"),
                    "AW_REQUIRE_PREREQUISITES=1 and this kernel does not take or show time slices (6.12+)"
                );
                eprintln!("SKIPPED: this kernel does not take or show time slices (6.12+)");
            }
            default_slices();
            assert_eq!(slice(), before);
        })
        .join()
        .unwrap();
    }
}
