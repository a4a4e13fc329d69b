//! What callers may read about buckets without a round trip to the worker: the store
//! publishes it as it changes the buckets.
//!
//! Bucket lists, single buckets and total event counts are asked for constantly (every
//! dashboard load, every client start) and are pure cache reads. The worker publishes an
//! immutable map of buckets whenever buckets are created, deleted or reloaded (an
//! `ArcSwap`: lock-free for readers), and keeps each bucket's event count and time span in
//! atomics that it updates before it answers the write that changed them. So these reads
//! never queue behind other requests, and a caller still reads its own writes.
//!
//! The count is not known at startup (counting a bucket walks all its index entries, and
//! startup must not grow with the history): the first total count asked for a bucket goes to
//! the worker, which counts once and publishes it.

use arc_swap::ArcSwap;
use aw_models::{timestamp, Bucket, BucketMetadata};

use crate::store::write_listeners::Listeners;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// [`BucketShared`]'s count while it is not known.
const UNKNOWN: u64 = u64::MAX;

/// One bucket as readers see it.
#[derive(Debug)]
pub(crate) struct BucketShared {
    bucket: Bucket,
    /// Number of events, or [`UNKNOWN`].
    count: AtomicU64,
    /// Earliest start (ns); `i64::MAX` while the bucket has no events.
    start: AtomicI64,
    /// Latest end (ns); `i64::MIN` while the bucket has no events.
    end: AtomicI64,
}

impl BucketShared {
    /// A bucket whose events are not counted yet.
    pub(crate) fn new(mut bucket: Bucket) -> BucketShared {
        bucket.metadata = BucketMetadata::default();
        bucket.events = None;
        BucketShared {
            bucket,
            count: AtomicU64::new(UNKNOWN),
            start: AtomicI64::new(i64::MAX),
            end: AtomicI64::new(i64::MIN),
        }
    }

    /// The bucket's fixed fields (row id, name, type, …).
    pub(crate) fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// Number of events; `None` until it was counted (see the module docs).
    pub(crate) fn count(&self) -> Option<u64> {
        Some(self.count.load(Ordering::Acquire)).filter(|&n| n != UNKNOWN)
    }

    /// Sets the number of events (worker only).
    pub(crate) fn set_count(&self, n: u64) {
        self.count.store(n, Ordering::Release);
    }

    /// Adds `n` to the number of events, if it is known (worker only).
    pub(crate) fn add_count(&self, n: u64) {
        let _ = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                (c != UNKNOWN).then(|| c.saturating_add(n).min(UNKNOWN - 1))
            });
    }

    /// Subtracts `n` from the number of events, not below zero, if it is known (worker only).
    pub(crate) fn sub_count(&self, n: u64) {
        let _ = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                (c != UNKNOWN).then(|| c.saturating_sub(n))
            });
    }

    /// Widens the time span to include `[start, end]` (worker only). Like the reference, the
    /// span never shrinks when events are deleted, until the next start.
    pub(crate) fn widen(&self, start: i64, end: i64) {
        self.start.fetch_min(start, Ordering::AcqRel);
        self.end.fetch_max(end, Ordering::AcqRel);
    }

    /// The same bucket under a new id and host, with its count and span.
    pub(crate) fn renamed(&self, name: &str, hostname: &str) -> BucketShared {
        let mut bucket = self.bucket.clone();
        bucket.id = name.to_string();
        bucket.hostname = hostname.to_string();
        BucketShared {
            bucket,
            count: AtomicU64::new(self.count.load(Ordering::Acquire)),
            start: AtomicI64::new(self.start.load(Ordering::Acquire)),
            end: AtomicI64::new(self.end.load(Ordering::Acquire)),
        }
    }

    /// The earliest start and latest end (ns), while the bucket has events.
    pub(crate) fn span(&self) -> Option<(i64, i64)> {
        let (start, end) = (
            self.start.load(Ordering::Acquire),
            self.end.load(Ordering::Acquire),
        );
        (start != i64::MAX && end != i64::MIN).then_some((start, end))
    }

    /// The bucket with its metadata as the API shows it.
    pub(crate) fn to_bucket(&self) -> Bucket {
        let mut b = self.bucket.clone();
        let (start, end) = (
            self.start.load(Ordering::Acquire),
            self.end.load(Ordering::Acquire),
        );
        if start != i64::MAX || end != i64::MIN {
            b.metadata = BucketMetadata {
                start: Some(timestamp::from_ns(start)),
                end: Some(timestamp::from_ns(end)),
            };
        }
        b
    }
}

/// The published buckets by name.
pub(crate) type BucketMap = HashMap<String, Arc<BucketShared>>;

/// What the store publishes as it writes: the buckets for readers, and the news of each
/// write for the listeners (`write_listeners.rs`).
#[derive(Debug, Default)]
pub(crate) struct Published {
    /// The current buckets.
    pub buckets: ArcSwap<BucketMap>,
    /// Who hears of every write.
    pub listeners: Listeners,
    /// Whether state derived from the data is kept beside the file: each commit then
    /// leaves a stamp of the files as it left them (`file/derived.rs`).
    pub derived_kept: std::sync::atomic::AtomicBool,
    /// The journal number the last state kept beside the file names (0: none yet): what
    /// each commit changed up to it is no longer needed (`store/touch_log.rs`).
    pub derived_saved: AtomicU64,
}
