//! The server's day digests (`aw_datastore::DayDigest`), kept between passes and
//! corrected by every write: so a pass after a change recomputes only the days that
//! change reached, and a pass after none recomputes nothing.
//!
//! The datastore tells its write listeners the extent of every write before answering it
//! (`aw_datastore::WriteListener`): events of a bucket between two instants, a whole
//! bucket, or everything. Each told extent marks its days stale; a bucket not seen yet (or
//! dropped by a whole-bucket change) is read whole once. Digests are computed by the
//! worker in steps of [`STEP_EVENTS`] events, so writes wait at most a step.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use aw_datastore::{day_of, Datastore, DayDigest, Touched, WriteListener};

use crate::error::Result;

/// Events whose digests one request to the worker computes at most.
const STEP_EVENTS: u64 = 20_000;

/// Stale day ranges kept per bucket before they are merged into one.
const MAX_STALE_RANGES: usize = 256;

/// The whole range of days an `i64` of nanoseconds can name.
fn all_days() -> (i64, i64) {
    (day_of(i64::MIN), day_of(i64::MAX))
}

/// One bucket's digests as last computed, and the day ranges written since.
#[derive(Default)]
struct Known {
    days: BTreeMap<i64, DayDigest>,
    stale: Vec<(i64, i64)>,
}

/// The day digests of a server's buckets, kept current (see the module docs). Register it
/// with `Datastore::add_write_listener` before asking it.
#[derive(Default)]
pub struct DayDigestCache {
    known: Mutex<HashMap<String, Known>>,
    /// Held while digests are computed: two callers never fill one bucket at once.
    computing: Mutex<()>,
}

impl WriteListener for DayDigestCache {
    fn touched(&self, change: Touched<'_>) {
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        match change {
            Touched::Events { bucket, start, end } => {
                if let Some(k) = known.get_mut(bucket) {
                    k.stale
                        .push((day_of(start.min(end)), day_of(start.max(end))));
                    if k.stale.len() > MAX_STALE_RANGES {
                        let lo = k.stale.iter().map(|r| r.0).min().unwrap_or(0);
                        let hi = k.stale.iter().map(|r| r.1).max().unwrap_or(0);
                        k.stale = vec![(lo, hi)];
                    }
                }
            }
            Touched::Bucket(bucket) => {
                known.remove(bucket);
            }
            Touched::Everything => known.clear(),
        }
    }
}

impl DayDigestCache {
    /// The digest of each day of `bucket` that has events, as the store has it now.
    pub fn digests(&self, store: &Datastore, bucket: &str) -> Result<BTreeMap<i64, DayDigest>> {
        let _computing = self
            .computing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let stale = {
            let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
            match known.get_mut(bucket) {
                Some(k) => std::mem::take(&mut k.stale),
                None => {
                    known.insert(bucket.to_string(), Known::default());
                    vec![all_days()]
                }
            }
        };
        let computed = match compute(store, bucket, merged(stale)) {
            Ok(computed) => computed,
            Err(e) => {
                self.forget(bucket);
                return Err(e);
            }
        };
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(k) = known.get_mut(bucket) else {
            // Dropped while computed (the bucket was deleted or created): read anew.
            drop(known);
            return compute_all(store, bucket);
        };
        for (from, to, days) in computed {
            let old: Vec<i64> = k.days.range(from..=to).map(|(d, _)| *d).collect();
            for day in old {
                k.days.remove(&day);
            }
            k.days.extend(days.into_iter().map(|d| (d.day, d)));
        }
        Ok(k.days.clone())
    }

    fn forget(&self, bucket: &str) {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(bucket);
    }
}

/// Every day digest of `bucket`, computed now (no cache).
pub(crate) fn compute_all(store: &Datastore, bucket: &str) -> Result<BTreeMap<i64, DayDigest>> {
    let mut days = BTreeMap::new();
    for (_, _, part) in compute(store, bucket, vec![all_days()])? {
        days.extend(part.into_iter().map(|d| (d.day, d)));
    }
    Ok(days)
}

/// The digests of each range of days, as `(first day, last day, digests)`: a range read in
/// steps comes back as one part per step.
fn compute(
    store: &Datastore,
    bucket: &str,
    ranges: Vec<(i64, i64)>,
) -> Result<Vec<(i64, i64, Vec<DayDigest>)>> {
    let mut parts = Vec::new();
    for (from, to) in ranges {
        let mut at = from;
        loop {
            let step = store.day_digests(bucket, at, to, STEP_EVENTS).wait()?;
            match step.next {
                Some(next) if next > at && next <= to => {
                    parts.push((at, next - 1, step.days));
                    at = next;
                }
                _ => {
                    parts.push((at, to, step.days));
                    break;
                }
            }
        }
    }
    Ok(parts)
}

/// The ranges sorted, with overlapping and adjacent ones joined.
fn merged(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    ranges.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::merged;

    #[test]
    fn ranges_are_joined_where_they_meet() {
        assert_eq!(
            merged(vec![(5, 6), (1, 2), (3, 3), (10, 12), (11, 20)]),
            [(1, 3), (5, 6), (10, 20)]
        );
        assert!(merged(Vec::new()).is_empty());
    }
}
