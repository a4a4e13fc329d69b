//! Giving memory back to the system after heavy requests.
//!
//! A 10 MB event, a year-long query or a 90 MB export makes the process grow by hundreds of
//! megabytes for a moment; what the server should keep afterwards is its caches, not that
//! peak. Three things kept it (measured with one 10 MB event: idle RSS stayed at 55-105 MB
//! for the rest of the run against a 22 MB start):
//! * mimalloc hands freed pages back only after a delay, and only when some thread later
//!   allocates or frees again; the threads that did the work (query pool, datastore, the
//!   blocking pool) then sit idle, so nothing ever did;
//! * transparent huge pages: mimalloc asks for them, and a 2 MiB page stays resident as
//!   long as any of its bytes are used;
//! * SQLite allocates through glibc, which raises its mmap threshold after a large buffer is
//!   freed, so later large buffers come from the heap and are kept.
//!
//! [`configure`] (at startup) turns transparent huge pages off for the process and fixes
//! glibc's mmap threshold; [`ReturnMemory`] (a fairing) runs one forced allocator collection
//! shortly after a heavy request (a query, an import or export, any body over
//! [`HEAVY_BODY`]), debounced so a burst costs one. Nothing runs while the server is idle and
//! the cheap request paths do no extra work. (Purging at once on every free,
//! `MIMALLOC_PURGE_DELAY=0`, bounded memory as well but cost queries throughput.)

use rocket::fairing::{Fairing, Info, Kind};
use rocket::http::Method;
use rocket::{Request, Response};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Requests or responses with a body at least this large count as heavy.
pub(crate) const HEAVY_BODY: u64 = 256 << 10;

/// How long after a heavy request the collection runs: late enough that the request's own
/// memory is freed (the query threads free large results in the background), and that a
/// burst of heavy requests costs one collection.
const COLLECT_DELAY: Duration = Duration::from_secs(1);

/// Sets process-wide memory behaviour; call first thing in `main`.
pub(crate) fn configure() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and affects only this
    // process's page policy.
    unsafe {
        if libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0 {
            log::debug!("could not turn transparent huge pages off");
        }
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes glibc's allocation policy; called before other threads
    // allocate through glibc (SQLite is not opened yet).
    unsafe {
        // A fixed threshold also stops glibc from raising it after a large free: SQLite's
        // buffers over 128 KiB are then always mapped on their own and unmapped when freed.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// The fairing that schedules a collection after heavy requests.
#[derive(Clone, Default)]
pub(crate) struct ReturnMemory {
    /// A collection is scheduled and has not run yet.
    scheduled: Arc<AtomicBool>,
}

/// Whether the request did, or made the server allocate, a lot of work.
fn is_heavy(req: &Request<'_>, res: &Response<'_>) -> bool {
    let path = req.uri().path();
    let body_in = req
        .headers()
        .get_one("Content-Length")
        .and_then(|l| l.parse::<u64>().ok())
        .unwrap_or(0);
    let body_out = res.body().preset_size().unwrap_or(0) as u64;
    body_in >= HEAVY_BODY
        || body_out >= HEAVY_BODY
        || (req.method() == Method::Post && path.ends_with("/query"))
        || path.ends_with("/export")
        || path.ends_with("/import")
}

#[rocket::async_trait]
impl Fairing for ReturnMemory {
    fn info(&self) -> Info {
        Info {
            name: "Return memory after heavy requests",
            kind: Kind::Response,
        }
    }

    async fn on_response<'r>(&self, req: &'r Request<'_>, res: &mut Response<'r>) {
        if !is_heavy(req, res) || self.scheduled.swap(true, Ordering::SeqCst) {
            return;
        }
        let scheduled = self.scheduled.clone();
        rocket::tokio::spawn(async move {
            rocket::tokio::time::sleep(COLLECT_DELAY).await;
            scheduled.store(false, Ordering::SeqCst);
            // On a blocking thread: a forced collection of a large heap takes milliseconds,
            // which the one async thread must not spend (every connection waits on it).
            // SAFETY: mi_collect only frees and returns the allocator's unused memory.
            let _ = rocket::tokio::task::spawn_blocking(|| unsafe {
                libmimalloc_sys::mi_collect(true)
            })
            .await;
        });
    }
}
