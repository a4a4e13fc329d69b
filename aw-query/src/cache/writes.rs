//! Writes, as the cache sees them: which stored results a write reaches (they are
//! dropped), and what it notes on the evaluations in flight ([`Dirty`]), so a result read
//! before or during a write is not stored when the write reaches what it read.

use std::collections::HashMap;

use super::{Inner, ResultCache};
use crate::recording::Read;

impl ResultCache {
    /// The events of `bucket` overlapping or touching `[start, end]` (ns) changed: drops
    /// every result that read them.
    pub fn events_changed(&self, bucket: &str, start: i64, end: i64) {
        let mut inner = self.lock();
        for dirty in inner.in_flight.values_mut() {
            dirty.add(bucket, start, end);
        }
        let Some(reads) = inner.by_bucket.get(bucket) else {
            return;
        };
        let reached: Vec<u64> = reads
            .range((start, 0, i64::MIN)..)
            .filter(|&&(_, _, read_start)| read_start <= end)
            .map(|&(_, id, _)| id)
            .collect();
        inner.invalidate(reached);
    }

    /// The bucket was created or deleted: drops every result that read its events or the
    /// bucket list.
    pub fn bucket_changed(&self, bucket: &str) {
        let mut inner = self.lock();
        for dirty in inner.in_flight.values_mut() {
            dirty
                .events
                .insert(bucket.to_string(), vec![(i64::MIN, i64::MAX)]);
            dirty.bucket_list = true;
        }
        let mut reached: Vec<u64> = inner.list_readers.iter().copied().collect();
        if let Some(reads) = inner.by_bucket.get(bucket) {
            reached.extend(reads.iter().map(|&(_, id, _)| id));
        }
        inner.invalidate(reached);
    }

    /// Anything may have changed: drops every result.
    pub fn clear(&self) {
        let mut inner = self.lock();
        for dirty in inner.in_flight.values_mut() {
            dirty.everything = true;
        }
        let n = inner.entries.len() as u64;
        inner.clear_entries();
        inner.stats.invalidated += n;
    }
}

/// The writes seen while one evaluation was in flight (or since kept results were saved).
#[derive(Debug, Default)]
pub(super) struct Dirty {
    /// Per bucket, ranges covering every change to its events: apart where the changes
    /// were apart (a heartbeat today and an edit months ago do not reach the months in
    /// between), up to [`MAX_RANGES`].
    events: HashMap<String, Vec<(i64, i64)>>,
    bucket_list: bool,
    everything: bool,
}

/// More ranges than this in one bucket are kept as one covering them all.
const MAX_RANGES: usize = 64;

impl Dirty {
    /// Notes a change to the events of `bucket` within `[start, end]`.
    fn add(&mut self, bucket: &str, start: i64, end: i64) {
        let ranges = match self.events.get_mut(bucket) {
            Some(ranges) => ranges,
            None => self.events.entry(bucket.to_string()).or_default(),
        };
        if let Some(range) = ranges.iter_mut().find(|r| overlaps(r.0, r.1, start, end)) {
            *range = (range.0.min(start), range.1.max(end));
            return;
        }
        ranges.push((start, end));
        if ranges.len() > MAX_RANGES {
            let all = ranges
                .iter()
                .fold((start, end), |a, r| (a.0.min(r.0), a.1.max(r.1)));
            *ranges = vec![all];
        }
    }

    /// Whether these writes reach any of `reads`.
    pub(super) fn reaches(&self, reads: &[Read]) -> bool {
        self.everything
            || reads.iter().any(|r| match r {
                Read::BucketList => self.bucket_list,
                Read::Events { bucket, start, end } => {
                    self.events.get(bucket).is_some_and(|ranges| {
                        ranges.iter().any(|&(s, e)| overlaps(s, e, *start, *end))
                    })
                }
            })
    }
}

/// Whether `[a0, a1]` and `[b0, b1]` overlap or touch.
fn overlaps(a0: i64, a1: i64, b0: i64, b1: i64) -> bool {
    a0 <= b1 && b0 <= a1
}

impl Inner {
    /// Ends the watch of the ticket `id`: the writes it saw (all, if it is not known).
    pub(super) fn end_watch(&mut self, id: u64) -> Dirty {
        self.in_flight.remove(&id).unwrap_or(Dirty {
            everything: true,
            ..Dirty::default()
        })
    }

    /// Drops the entries `ids` (duplicates allowed) because a write reached them.
    fn invalidate(&mut self, ids: Vec<u64>) {
        for id in ids {
            if self.remove(id) {
                self.stats.invalidated += 1;
            }
        }
    }
}
