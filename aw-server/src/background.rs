//! A background thread of the server's (sync passes, backups): named, at the lower priority
//! of heavy work (`aw_platform::sched::lower_priority`), and joined when the server stops,
//! so its files are closed before the datastore is.

use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

/// The handle of one background thread, empty until it is started.
#[derive(Default)]
pub(crate) struct Background(Mutex<Option<JoinHandle<()>>>);

impl Background {
    /// Starts `run` on a thread named `name`. A thread that cannot be started is logged:
    /// the server goes on without it.
    pub(crate) fn start(&self, name: &str, run: impl FnOnce() + Send + 'static) {
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                aw_platform::sched::lower_priority();
                run();
            });
        match thread {
            Ok(handle) => *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle),
            Err(e) => log::error!("Cannot start the {name} thread: {e}"),
        }
    }

    /// Waits for the thread to end (the caller has told it to stop); at once if none runs.
    pub(crate) fn join(&self) {
        let handle = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}
