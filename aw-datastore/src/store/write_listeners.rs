//! What each write changed, told to caches outside the datastore as it happens.
//!
//! A cache of answers computed from the events (the server's query-result cache) is only
//! correct if it hears of every write that could change what it answered: not just inserts
//! and heartbeats, but replaced and deleted events, imports, buckets created and deleted,
//! and the rare rebuild after SQLite rolled a transaction back. Deriving that from outside
//! (from HTTP routes) would miss writes; so the store reports each one here itself.
//!
//! The worker tells the listeners *synchronously*, in the same step that made the write and
//! before it answers the request: a write is never acknowledged, and no later read is
//! served, before every listener knows of it. A listener therefore runs on the worker
//! thread and must be quick (a lock and a map look-up, no I/O).

use std::sync::{Arc, RwLock};

/// A region of the stored data that a write may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touched<'a> {
    /// Events of `bucket` overlapping or touching `[start, end]` (ns) were written,
    /// replaced, resized or deleted. The range covers an event's extent before and after
    /// the write (a heartbeat that extends an event covers its old and its new end).
    Events {
        /// The bucket's id.
        bucket: &'a str,
        /// Earliest instant the change reaches, in ns.
        start: i64,
        /// Latest instant the change reaches, in ns.
        end: i64,
    },
    /// The bucket was created or deleted: the bucket list and all of its events changed.
    Bucket(&'a str),
    /// Anything may have changed: the caches were rebuilt from the database (after SQLite
    /// rolled back the open transaction).
    Everything,
}

/// Something that must hear of every write; see the module docs for when it is called.
pub trait WriteListener: Send + Sync {
    /// Called on the worker thread for every change, before the write is answered.
    fn touched(&self, change: Touched<'_>);
}

/// The registered listeners (shared by the handles and the worker).
#[derive(Default)]
pub(crate) struct Listeners(RwLock<Vec<Arc<dyn WriteListener>>>);

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.read().map_or(0, |l| l.len());
        write!(f, "Listeners({n})")
    }
}

impl Listeners {
    /// Adds a listener; it hears of every write made from now on.
    pub(crate) fn add(&self, listener: Arc<dyn WriteListener>) {
        // A poisoned lock only means a listener panicked while the list was read; the list
        // itself is intact.
        let mut list = self.0.write().unwrap_or_else(|e| e.into_inner());
        list.push(listener);
    }

    /// Tells every listener of `change`.
    pub(crate) fn tell(&self, change: Touched<'_>) {
        let list = self.0.read().unwrap_or_else(|e| e.into_inner());
        for listener in list.iter() {
            listener.touched(change);
        }
    }
}

/// The smallest range covering every `[start, end]` added (either order): what one request
/// changed in one bucket, told once instead of once per row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Extent(Option<(i64, i64)>);

impl Extent {
    /// Nothing yet.
    pub(crate) fn new() -> Extent {
        Extent(None)
    }

    /// The extent of one event.
    pub(crate) fn of(start: i64, end: i64) -> Extent {
        let mut e = Extent::new();
        e.add(start, end);
        e
    }

    /// Widens the extent to cover an event from `start` to `end` (a negative duration, which
    /// imports can carry, counts from its end to its start).
    pub(crate) fn add(&mut self, start: i64, end: i64) {
        let (lo, hi) = (start.min(end), start.max(end));
        self.0 = Some(match self.0 {
            None => (lo, hi),
            Some((a, b)) => (a.min(lo), b.max(hi)),
        });
    }

    /// The smallest and largest instant added, if anything was.
    pub(crate) fn bounds(self) -> Option<(i64, i64)> {
        self.0
    }

    /// The change to tell for `bucket`, if anything was added.
    pub(crate) fn touched(self, bucket: &str) -> Option<Touched<'_>> {
        self.0
            .map(|(start, end)| Touched::Events { bucket, start, end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Mutex<Vec<String>>);

    impl WriteListener for Log {
        fn touched(&self, change: Touched<'_>) {
            self.0.lock().unwrap().push(format!("{change:?}"));
        }
    }

    #[test]
    fn an_extent_covers_every_event_in_either_order() {
        let mut e = Extent::new();
        assert_eq!(e.touched("b"), None);
        e.add(10, 20);
        e.add(5, 3);
        e.add(12, 30);
        assert_eq!(
            e.touched("b"),
            Some(Touched::Events {
                bucket: "b",
                start: 3,
                end: 30
            })
        );
    }

    #[test]
    fn every_listener_hears_every_change() {
        let listeners = Listeners::default();
        let (a, b) = (Arc::new(Log::default()), Arc::new(Log::default()));
        listeners.add(a.clone());
        listeners.tell(Touched::Everything);
        listeners.add(b.clone());
        listeners.tell(Touched::Bucket("x"));
        assert_eq!(*a.0.lock().unwrap(), ["Everything", "Bucket(\"x\")"]);
        assert_eq!(*b.0.lock().unwrap(), ["Bucket(\"x\")"]);
    }
}
