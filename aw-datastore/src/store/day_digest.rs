//! A digest of each day of a bucket: how sync finds the days another device changed.
//!
//! A device that syncs publishes, beside its events, one digest per bucket and day (a day
//! in UTC, holding the events that *start* in it): their number and a hash of every
//! event's id, start, end and data. A device that pulls keeps the digest of each day it
//! applied; a day whose digest changed is applied again whole, whatever changed in it (an
//! event deleted, edited, added long after the fact). So deletions and edits of any age
//! travel, and what one pass carries is bounded by days.
//!
//! The hash is SHA-256 (stable across versions and machines, unlike Rust's own hashers)
//! over the events in `(start, end, id)` order, cut to 128 bits and written as hex. It is a
//! change detector, not a signature: whoever can write a device's file can write its
//! digests too, so nothing here is trusted further than the day it names.

use rusqlite::params;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Store;
use crate::error::Result;

/// Nanoseconds in a day.
pub const DAY_NS: i64 = 86_400_000_000_000;

/// The day (days since 1970-01-01, UTC) an event starting at `start` ns belongs to.
pub fn day_of(start: i64) -> i64 {
    start.div_euclid(DAY_NS)
}

/// The first and the last instant (ns, inclusive) of `day`, within `i64`.
pub fn day_span(day: i64) -> (i64, i64) {
    let first = day.saturating_mul(DAY_NS);
    (first, first.saturating_add(DAY_NS - 1))
}

/// One day of a bucket as a digest: see the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayDigest {
    /// Days since 1970-01-01 (UTC).
    pub day: i64,
    /// Events starting in the day.
    pub count: u64,
    /// 32 hex digits.
    pub digest: String,
}

/// The digests of a run of days, and where the next run starts if the read stopped early.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DayDigests {
    /// Days that have events, in order.
    pub days: Vec<DayDigest>,
    /// The first day not read yet, when the read stopped at its bound of events.
    pub next: Option<i64>,
}

/// The events of a bucket starting in `[?2, ?3]`, in digest order.
const EVENTS_OF_DAYS_SQL: &str = "SELECT id, starttime, endtime, data FROM events \
     WHERE bucketrow = ?1 AND starttime >= ?2 AND starttime <= ?3 \
     ORDER BY starttime, endtime, id";

/// Hashes events of one day in digest order.
#[derive(Default)]
pub(crate) struct DayHasher {
    hasher: Sha256,
    count: u64,
}

impl DayHasher {
    /// Adds the next event (in `(start, end, id)` order).
    pub(crate) fn add(&mut self, id: i64, start: i64, end: i64, data: &str) {
        self.hasher.update(id.to_le_bytes());
        self.hasher.update(start.to_le_bytes());
        self.hasher.update(end.to_le_bytes());
        self.hasher.update((data.len() as u64).to_le_bytes());
        self.hasher.update(data.as_bytes());
        self.count += 1;
    }

    /// The day's digest.
    pub(crate) fn finish(self, day: i64) -> DayDigest {
        let hash = self.hasher.finalize();
        let digest = hash[..16].iter().map(|b| format!("{b:02x}")).collect();
        DayDigest {
            day,
            count: self.count,
            digest,
        }
    }
}

/// A short hash of one event as a peer had it (start, end, data): how a pulled copy tells
/// which events of a day changed since it was last applied.
pub(crate) fn event_hash(start: i64, end: i64, data: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(start.to_le_bytes());
    hasher.update(end.to_le_bytes());
    hasher.update(data.as_bytes());
    let hash = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    u64::from_le_bytes(first)
}

impl Store {
    /// The digests of the days `from..=to` of bucket `name` that have events; stops after
    /// the day in which `max_events` events were passed (a day is never split), so the
    /// worker is never held long.
    pub(crate) fn day_digests(
        &self,
        name: &str,
        from: i64,
        to: i64,
        max_events: u64,
    ) -> Result<DayDigests> {
        let bid = self.bucketrow(name)?;
        let mut stmt = self.conn.prepare_cached(EVENTS_OF_DAYS_SQL)?;
        let mut rows = stmt.query(params![bid, day_span(from).0, day_span(to).1])?;
        let mut out = DayDigests::default();
        let mut current: Option<(i64, DayHasher)> = None;
        let mut seen = 0u64;
        while let Some(row) = rows.next()? {
            let (id, start, end): (i64, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
            let data = row.get_ref(3)?.as_str().unwrap_or("");
            let day = day_of(start);
            if current.as_ref().is_some_and(|(d, _)| *d != day) {
                if let Some((d, hasher)) = current.take() {
                    out.days.push(hasher.finish(d));
                }
                if seen >= max_events {
                    out.next = Some(day);
                    return Ok(out);
                }
            }
            current
                .get_or_insert_with(|| (day, DayHasher::default()))
                .1
                .add(id, start, end, data);
            seen += 1;
        }
        if let Some((d, hasher)) = current {
            out.days.push(hasher.finish(d));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_hold_the_events_that_start_in_them() {
        assert_eq!(day_of(0), 0);
        assert_eq!(day_of(DAY_NS - 1), 0);
        assert_eq!(day_of(DAY_NS), 1);
        assert_eq!(day_of(-1), -1);
        assert_eq!(day_span(1), (DAY_NS, 2 * DAY_NS - 1));
        // The extreme days stay within i64.
        let (lo, hi) = day_span(day_of(i64::MIN));
        assert!(lo <= i64::MIN + DAY_NS && hi > lo);
        assert_eq!(day_span(day_of(i64::MAX)).1, i64::MAX);
    }

    #[test]
    fn a_digest_changes_with_any_field_and_not_with_nothing() {
        let digest = |events: &[(i64, i64, i64, &str)]| {
            let mut h = DayHasher::default();
            for (id, s, e, d) in events {
                h.add(*id, *s, *e, d);
            }
            h.finish(0)
        };
        let base = digest(&[(1, 10, 20, "{}"), (2, 30, 40, "{\"a\":1}")]);
        assert_eq!(base, digest(&[(1, 10, 20, "{}"), (2, 30, 40, "{\"a\":1}")]));
        assert_eq!(base.count, 2);
        assert_eq!(base.digest.len(), 32);
        for other in [
            digest(&[(1, 10, 20, "{}")]),
            digest(&[(3, 10, 20, "{}"), (2, 30, 40, "{\"a\":1}")]),
            digest(&[(1, 11, 20, "{}"), (2, 30, 40, "{\"a\":1}")]),
            digest(&[(1, 10, 21, "{}"), (2, 30, 40, "{\"a\":1}")]),
            digest(&[(1, 10, 20, "{}"), (2, 30, 40, "{\"a\":2}")]),
        ] {
            assert_ne!(base.digest, other.digest);
        }
        assert_ne!(event_hash(1, 2, "{}"), event_hash(1, 3, "{}"));
    }
}
