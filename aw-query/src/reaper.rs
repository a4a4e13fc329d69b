//! Deferred freeing of large values on a background thread.
//!
//! A year-long query ends up freeing millions of small allocations (the data source's event
//! objects after conversion, the events consumed by the last transform, the variables of a
//! finished run). Doing that on the query's thread adds a large fraction to the response time,
//! while on a typical two-core machine the other core is often idle. Values handed to
//! [`drop_later`] are dropped by one long-lived background thread instead; if that thread
//! cannot be started, they are dropped immediately.

use std::sync::mpsc::{channel, Sender};
use std::sync::OnceLock;

/// Something to be dropped.
type Garbage = Box<dyn Send>;

/// Below this many elements, dropping inline is cheaper than handing over.
pub(crate) const DEFER_THRESHOLD: usize = 4096;

static REAPER: OnceLock<Option<Sender<Garbage>>> = OnceLock::new();

fn reaper() -> Option<&'static Sender<Garbage>> {
    REAPER
        .get_or_init(|| {
            let (tx, rx) = channel::<Garbage>();
            std::thread::Builder::new()
                .name("aw-query-reaper".to_string())
                // Deeply nested values are dropped recursively.
                .stack_size(crate::EVAL_STACK)
                .spawn(move || {
                    for garbage in rx {
                        drop(garbage);
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// Drops `value` on the background thread (or right here if there is none).
pub(crate) fn drop_later<T: Send + 'static>(value: T) {
    if let Some(tx) = reaper() {
        // A send only fails if the thread is gone; the value then drops here.
        let _ = tx.send(Box::new(value));
    }
}

/// [`drop_later`] for vectors large enough to be worth it; small ones drop inline.
pub(crate) fn drop_vec_later<T: Send + 'static>(v: Vec<T>) {
    if v.len() >= DEFER_THRESHOLD {
        drop_later(v);
    }
}
