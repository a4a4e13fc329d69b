//! The query-result cache: one result per (program text, period), kept while no write
//! could have changed it.
//!
//! Dashboards ask the same questions again and again: every page load re-runs the same
//! program for the same past days. A result depends only on the program text (which holds
//! the categories and filters), the period, and the data the evaluation read: the events of
//! the buckets it queried in the ranges it queried them (`TIMEINTERVAL` may be reassigned,
//! so the ranges are recorded as read, not assumed), and the bucket list when it called
//! `find_bucket` or `query_bucket_names`. So each entry keeps the list of its reads
//! ([`Read`]), and the owner of the data tells the cache of every write
//! ([`ResultCache::events_changed`], [`ResultCache::bucket_changed`],
//! [`ResultCache::clear`]) before the write is acknowledged; every entry a write could
//! reach is dropped. A heartbeat into today drops today's entries only.
//!
//! **Writes during an evaluation.** An evaluation that started before a write may have read
//! the data before or after it. It holds a [`Ticket`] from before its first read; every
//! write while the ticket is out is noted on it (per bucket, as one covering range), and
//! the result is stored only if none of those writes reaches what it read.
//!
//! **Bounded.** Entries are charged by the bytes of their JSON text, key and read list;
//! past the budget the least recently used go. [`ResultCache::stats`] tells the size and
//! hit rate.
//!
//! **Kept across restarts.** [`ResultCache::export`] writes the entries with their reads
//! (`cache_file.rs`), and [`RestoreTicket::restore`] adds them to the next run's cache under a
//! [`RestoreTicket`] taken before anything could write, so a write in between still
//! reaches them. Whether the data is still what they were computed from is the caller's to
//! know: the server keeps them beside the database, which hands them back only for the
//! very file they were saved with.
//!
//! **Two forms.** A result is kept as the JSON text `POST /api/0/query` answers, or, for
//! [`crate::query_sum`], in the form periods are added up in (`summed.rs`), whose event
//! data texts the cache holds once for all its entries ([`crate::summed::Texts`]).
//!
//! Here: the entries, their lookup and storing; `writes.rs`: what a write reaches;
//! `keep.rs`: export and restore.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::recording::Read;
use crate::summed::{Summed, Texts};
use writes::Dirty;

mod keep;
mod writes;

pub use keep::RestoreTicket;

/// The default memory budget of the server's cache: room for thousands of day results and
/// dozens of year results, small next to what one year-long query holds while it runs.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// What one cached result was computed for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    /// The program text as sent (lines joined with `\n`).
    code: Arc<str>,
    /// The period's start.
    start: DateTime<Utc>,
    /// The period's end.
    end: DateTime<Utc>,
    /// Kept in the summed form (`query_sum`), not as text.
    summed: bool,
}

impl Key {
    /// The key of `code`'s result text over `[start, end]`.
    pub(crate) fn new(code: &Arc<str>, start: DateTime<Utc>, end: DateTime<Utc>) -> Key {
        Key {
            code: code.clone(),
            start,
            end,
            summed: false,
        }
    }

    /// The key of `code`'s result over `[start, end]` in the summed form.
    pub(crate) fn summed(code: &Arc<str>, start: DateTime<Utc>, end: DateTime<Utc>) -> Key {
        Key {
            summed: true,
            ..Key::new(code, start, end)
        }
    }
}

/// A cached result: the JSON text, or the summed form (see the module docs).
#[derive(Debug, Clone)]
pub(crate) enum Stored {
    Text(Arc<str>),
    Summed(Arc<Summed>),
}

impl Stored {
    /// The JSON text, if it is one.
    pub(crate) fn into_text(self) -> Option<Arc<str>> {
        match self {
            Stored::Text(text) => Some(text),
            Stored::Summed(_) => None,
        }
    }

    /// The summed form, if it is one.
    pub(crate) fn into_summed(self) -> Option<Arc<Summed>> {
        match self {
            Stored::Summed(summed) => Some(summed),
            Stored::Text(_) => None,
        }
    }

    /// Bytes it is charged (a summed result's data texts are charged once, by `Texts`).
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Stored::Text(text) => text.len(),
            Stored::Summed(summed) => summed.bytes(),
        }
    }
}

/// How big and how useful the cache is, for the stats route.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Results held.
    pub entries: usize,
    /// Bytes they are charged.
    pub bytes: usize,
    /// The memory budget in bytes.
    pub budget: usize,
    /// Periods answered from the cache.
    pub hits: u64,
    /// Periods not found in the cache (then evaluated, unless the program does not parse).
    pub misses: u64,
    /// Results dropped because a write reached what they read.
    pub invalidated: u64,
    /// Results dropped to stay within the budget (least recently used first).
    pub evicted: u64,
    /// Results not stored: a write during their evaluation reached what they read, or they
    /// were larger than a quarter of the budget.
    pub not_stored: u64,
    /// Results read back from the last run (`RestoreTicket::restore`).
    pub restored: u64,
    /// Whether the results kept from the last run are still being read back.
    pub restoring: bool,
}

/// A cache of query results per (program, period); see the module docs.
#[derive(Debug)]
pub struct ResultCache {
    budget: usize,
    inner: Mutex<Inner>,
}

/// One cached result.
#[derive(Debug)]
struct Entry {
    key: Arc<Key>,
    /// The period's result.
    value: Stored,
    reads: Vec<Read>,
    bytes: usize,
    /// When it was last used, on the cache's own clock (the LRU order).
    used: u64,
}

#[derive(Debug, Default)]
struct Inner {
    /// Entry ids and ticket ids, and the LRU clock.
    clock: u64,
    entries: HashMap<u64, Entry>,
    by_key: HashMap<Arc<Key>, u64>,
    /// Each distinct program text once, shared by its entries' keys.
    codes: HashSet<Arc<str>>,
    /// Entry ids by last use: the first is the least recently used.
    lru: BTreeMap<u64, u64>,
    /// Per bucket, the entries that read its events: `(read end, entry, read start)`, so a
    /// write finds the entries whose reads end at or after its start by a range walk.
    by_bucket: HashMap<String, BTreeSet<(i64, u64, i64)>>,
    /// Entries that read the bucket list.
    list_readers: HashSet<u64>,
    in_flight: HashMap<u64, Dirty>,
    /// The data texts of the summed results (their bytes are in `bytes`).
    texts: Texts,
    /// Summed results dropped so far ([`ResultCache::sums_dropped`]).
    sums_dropped: u64,
    /// Summed results stored so far ([`ResultCache::sums_stored`]).
    sums_stored: u64,
    /// The restore tickets out.
    restoring: usize,
    bytes: usize,
    stats: CacheStats,
}

/// Leave for one evaluation to store its result; see the module docs. Dropping it unused
/// (the evaluation failed) just forgets it.
#[derive(Debug)]
pub(crate) struct Ticket<'a> {
    cache: &'a ResultCache,
    id: u64,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.cache.lock().in_flight.remove(&self.id);
    }
}

impl ResultCache {
    /// A cache holding at most `budget` bytes of results (0 stores nothing).
    pub fn new(budget: usize) -> ResultCache {
        ResultCache {
            budget,
            inner: Mutex::new(Inner {
                stats: CacheStats {
                    budget,
                    ..CacheStats::default()
                },
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing here panics while holding the lock; if something did, the maps are still
        // consistent enough to drop: start over rather than fail every query.
        self.inner.lock().unwrap_or_else(|poisoned| {
            let mut inner = poisoned.into_inner();
            inner.clear_entries();
            inner
        })
    }

    /// Size and hit rate.
    pub fn stats(&self) -> CacheStats {
        let inner = self.lock();
        CacheStats {
            entries: inner.entries.len(),
            bytes: inner.bytes,
            restoring: inner.restoring > 0,
            ..inner.stats
        }
    }

    /// Whether the cache holds a result for `key` (not counted as a hit or a miss).
    pub(crate) fn holds(&self, key: &Key) -> bool {
        self.lock().by_key.contains_key(key)
    }

    /// How many summed results (`query_sum`'s) the cache has dropped so far (by writes,
    /// for room, or all at once): a change tells whoever keeps them ready to look again.
    pub fn sums_dropped(&self) -> u64 {
        self.lock().sums_dropped
    }

    /// Waits, at most `max`, until the results the last run kept are read back (a
    /// [`RestoreTicket`] out): a look that comes meanwhile is answered from them.
    pub fn wait_restored(&self, max: std::time::Duration) {
        let deadline = std::time::Instant::now() + max;
        while self.lock().restoring > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// How many summed results the cache has stored so far: a change tells whoever keeps
    /// them beside the database that there is something new to keep.
    pub fn sums_stored(&self) -> u64 {
        self.lock().sums_stored
    }

    /// The cached result for `key`, if any (counted as a hit or a miss).
    pub(crate) fn get(&self, key: &Key) -> Option<Stored> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let Some(&id) = inner.by_key.get(key) else {
            inner.stats.misses += 1;
            return None;
        };
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.entries.get_mut(&id)?;
        let old = std::mem::replace(&mut entry.used, now);
        let value = entry.value.clone();
        inner.lru.remove(&old);
        inner.lru.insert(now, id);
        inner.stats.hits += 1;
        Some(value)
    }

    /// Starts watching writes for one evaluation: take it before the evaluation reads
    /// anything.
    pub(crate) fn ticket(&self) -> Ticket<'_> {
        let mut inner = self.lock();
        inner.clock += 1;
        let id = inner.clock;
        inner.in_flight.insert(id, Dirty::default());
        Ticket { cache: self, id }
    }

    /// Stores `value`, the result for `key` computed from `reads` by the evaluation that
    /// holds `ticket`, unless a write since the ticket was taken reaches those reads. Ends
    /// the ticket's watch (dropping it afterwards is a no-op).
    pub(crate) fn insert(&self, ticket: &Ticket<'_>, key: Key, reads: Vec<Read>, value: Arc<str>) {
        let mut inner = self.lock();
        let dirty = inner.end_watch(ticket.id);
        if !self.accepts(&dirty, &key, &reads, value.len()) {
            inner.stats.not_stored += 1;
            return;
        }
        self.store(&mut inner, key, reads, Stored::Text(value));
    }

    /// [`ResultCache::insert`] of a summed result; returns it, with its data texts shared
    /// with the cache's when it was stored.
    pub(crate) fn insert_summed(
        &self,
        ticket: &Ticket<'_>,
        key: Key,
        reads: Vec<Read>,
        mut value: Arc<Summed>,
    ) -> Arc<Summed> {
        let mut inner = self.lock();
        let dirty = inner.end_watch(ticket.id);
        if !self.accepts(&dirty, &key, &reads, value.bytes()) {
            inner.stats.not_stored += 1;
            return value;
        }
        inner.share_texts(&mut value);
        self.store(&mut inner, key, reads, Stored::Summed(value.clone()));
        value
    }

    /// Whether a result of `bytes` for `key` computed from `reads` may be stored: no write
    /// since its data was read (`dirty`) reaches its reads, and it is no larger than a
    /// quarter of the budget.
    fn accepts(&self, dirty: &Dirty, key: &Key, reads: &[Read], bytes: usize) -> bool {
        !dirty.reaches(reads) && charge(key, reads, bytes) <= self.budget / 4
    }

    /// Stores one result that [`ResultCache::accepts`] let in (a summed one sharing the
    /// cache's texts already: `Inner::share_texts`), evicting the least recently used
    /// past the budget.
    fn store(&self, inner: &mut Inner, key: Key, reads: Vec<Read>, value: Stored) {
        let bytes = charge(&key, &reads, value.bytes());
        // Two evaluations of the same key at once: the later result replaces the earlier.
        if let Some(&old) = inner.by_key.get(&key) {
            inner.remove(old);
        }
        inner.clock += 1;
        let (id, used) = (inner.clock, inner.clock);
        // The cache's own copy: the request's text may outlive the entry (other periods of
        // the same request), and `remove` counts references to know the program's last entry.
        let code = match inner.codes.get(&key.code) {
            Some(code) => code.clone(),
            None => {
                let own: Arc<str> = Arc::from(&*key.code);
                inner.codes.insert(own.clone());
                own
            }
        };
        let key = Arc::new(Key { code, ..key });
        for read in &reads {
            match read {
                Read::Events { bucket, start, end } => {
                    inner
                        .by_bucket
                        .entry(bucket.clone())
                        .or_default()
                        .insert((*end, id, *start));
                }
                Read::BucketList => {
                    inner.list_readers.insert(id);
                }
            }
        }
        if matches!(value, Stored::Summed(_)) {
            inner.sums_stored += 1;
        }
        inner.by_key.insert(key.clone(), id);
        inner.lru.insert(used, id);
        inner.bytes += bytes;
        inner.entries.insert(
            id,
            Entry {
                key,
                value,
                reads,
                bytes,
                used,
            },
        );
        while inner.bytes > self.budget {
            let Some((_, oldest)) = inner.lru.pop_first() else {
                break;
            };
            inner.remove(oldest);
            inner.stats.evicted += 1;
        }
    }
}

/// Bytes an entry is charged: its value's, its key's and its reads'.
fn charge(key: &Key, reads: &[Read], value_bytes: usize) -> usize {
    value_bytes
        + key.code.len()
        + reads
            .iter()
            .map(|r| match r {
                Read::Events { bucket, .. } => bucket.len() + 64,
                Read::BucketList => 16,
            })
            .sum::<usize>()
        + 256
}

impl Inner {
    /// Makes `summed` share the cache's data texts and charges the new ones (a value
    /// shared already, which a new result never is, is left as it is).
    fn share_texts(&mut self, summed: &mut Arc<Summed>) {
        if let Some(summed) = Arc::get_mut(summed) {
            let before = self.texts.bytes;
            self.texts.intern(summed);
            self.bytes += self.texts.bytes - before;
        }
    }

    /// Drops one entry from every map; false if it was not there.
    fn remove(&mut self, id: u64) -> bool {
        let Some(entry) = self.entries.remove(&id) else {
            return false;
        };
        self.by_key.remove(&entry.key);
        // The last entry of its program (the set holds one more reference).
        if Arc::strong_count(&entry.key.code) <= 2 {
            self.codes.remove(&entry.key.code);
        }
        self.lru.remove(&entry.used);
        for read in &entry.reads {
            match read {
                Read::Events { bucket, start, end } => {
                    if let Some(set) = self.by_bucket.get_mut(bucket) {
                        set.remove(&(*end, id, *start));
                        if set.is_empty() {
                            self.by_bucket.remove(bucket);
                        }
                    }
                }
                Read::BucketList => {
                    self.list_readers.remove(&id);
                }
            }
        }
        self.bytes -= entry.bytes;
        if let Stored::Summed(summed) = &entry.value {
            let before = self.texts.bytes;
            self.texts.release(summed);
            self.bytes -= before - self.texts.bytes;
            self.sums_dropped += 1;
        }
        true
    }

    /// Drops every entry (in-flight tickets stay).
    fn clear_entries(&mut self) {
        self.codes.clear();
        self.entries.clear();
        self.by_key.clear();
        self.lru.clear();
        self.by_bucket.clear();
        self.list_readers.clear();
        if self.texts.bytes > 0 {
            self.sums_dropped += 1;
        }
        self.texts.clear();
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(s, 0).unwrap()
    }

    fn key(code: &str, s: i64, e: i64) -> Key {
        Key::new(&Arc::from(code), at(s), at(e))
    }

    fn events(bucket: &str, s: i64, e: i64) -> Read {
        Read::Events {
            bucket: bucket.into(),
            start: s * 1_000_000_000,
            end: e * 1_000_000_000,
        }
    }

    fn text(v: &str) -> Arc<str> {
        Arc::from(v)
    }

    /// The cached text for `k`.
    fn got(c: &ResultCache, k: &Key) -> Option<String> {
        c.get(k)?.into_text().map(|t| t.to_string())
    }

    fn store(c: &ResultCache, k: Key, reads: Vec<Read>, v: &str) {
        let t = c.ticket();
        c.insert(&t, k, reads, text(v));
    }

    const S: i64 = 1_000_000_000;

    #[test]
    fn a_write_drops_only_the_results_whose_reads_it_reaches() {
        let c = ResultCache::new(1 << 20);
        store(&c, key("q", 0, 10), vec![events("w", 0, 10)], "a");
        store(&c, key("q", 10, 20), vec![events("w", 10, 20)], "b");
        store(&c, key("q", 20, 30), vec![events("afk", 20, 30)], "c");
        // Another bucket, and a range after every read: nothing.
        c.events_changed("x", 0, 100 * S);
        c.events_changed("w", 21 * S, 25 * S);
        assert_eq!(c.stats().entries, 3);
        // Touching the end of the first period reaches the first two (they share 10 s).
        c.events_changed("w", 10 * S, 10 * S);
        assert!(c.get(&key("q", 0, 10)).is_none());
        assert!(c.get(&key("q", 10, 20)).is_none());
        assert_eq!(got(&c, &key("q", 20, 30)).as_deref(), Some("c"));
        assert_eq!(c.stats().invalidated, 2);
    }

    #[test]
    fn a_write_during_the_evaluation_keeps_its_result_out() {
        let c = ResultCache::new(1 << 20);
        let t = c.ticket();
        c.events_changed("w", 5 * S, 6 * S);
        c.insert(&t, key("q", 0, 10), vec![events("w", 0, 10)], text("x"));
        assert!(c.get(&key("q", 0, 10)).is_none());
        // A write elsewhere does not.
        let t = c.ticket();
        c.events_changed("w", 50 * S, 60 * S);
        c.events_changed("afk", 5 * S, 6 * S);
        c.insert(&t, key("q", 0, 10), vec![events("w", 0, 10)], text("x"));
        assert_eq!(got(&c, &key("q", 0, 10)).as_deref(), Some("x"));
        // Bucket list changes reach list readers in flight; `clear` reaches everyone.
        let t = c.ticket();
        c.bucket_changed("new");
        c.insert(&t, key("l", 0, 1), vec![Read::BucketList], text("y"));
        let t = c.ticket();
        c.clear();
        c.insert(&t, key("m", 0, 1), vec![], text("z"));
        assert!(c.get(&key("l", 0, 1)).is_none());
        assert!(c.get(&key("m", 0, 1)).is_none());
        assert_eq!(c.stats().not_stored, 3);
        // A dropped ticket leaves nothing behind.
        drop(c.ticket());
        assert!(c.lock().in_flight.is_empty());
    }

    #[test]
    fn bucket_create_and_delete_reach_its_readers_and_list_readers() {
        let c = ResultCache::new(1 << 20);
        store(&c, key("q", 0, 10), vec![events("w", 0, 10)], "a");
        store(&c, key("l", 0, 10), vec![Read::BucketList], "b");
        store(&c, key("o", 0, 10), vec![events("afk", 0, 10)], "c");
        c.bucket_changed("w");
        assert!(c.get(&key("q", 0, 10)).is_none());
        assert!(c.get(&key("l", 0, 10)).is_none());
        assert!(c.get(&key("o", 0, 10)).is_some());
        c.clear();
        assert_eq!(c.stats().entries, 0);
        assert_eq!(c.stats().bytes, 0);
    }

    #[test]
    fn the_least_recently_used_go_first_and_the_budget_holds() {
        let big = "x".repeat(1000);
        let c = ResultCache::new(6 * 1400);
        for i in 0..8 {
            store(&c, key("q", i, i + 1), vec![events("w", i, i + 1)], &big);
            // Keep the first one in use.
            assert!(c.get(&key("q", 0, 1)).is_some());
        }
        let s = c.stats();
        assert!(s.bytes <= s.budget, "{s:?}");
        assert!(s.evicted > 0);
        assert!(c.get(&key("q", 0, 1)).is_some());
        assert!(c.get(&key("q", 1, 2)).is_none());
        // Too large for the budget: not stored at all.
        store(&c, key("huge", 0, 1), vec![], &"y".repeat(4000));
        assert!(c.get(&key("huge", 0, 1)).is_none());
        // The index follows evictions: a write finds nothing stale.
        c.events_changed("w", 0, i64::MAX);
        let inner = c.lock();
        assert!(inner.entries.is_empty() && inner.by_bucket.is_empty() && inner.lru.is_empty());
        assert!(inner.codes.is_empty());
    }

    #[test]
    fn entries_of_one_program_share_its_text() {
        let c = ResultCache::new(1 << 20);
        // Each request brings its own copy of the text.
        store(&c, key("program", 0, 1), vec![events("w", 0, 1)], "a");
        store(&c, key("program", 1, 2), vec![events("w", 1, 2)], "b");
        store(&c, key("other", 1, 2), vec![events("w", 1, 2)], "c");
        assert_eq!(c.lock().codes.len(), 2);
        c.events_changed("w", 0, 0);
        assert_eq!(c.lock().codes.len(), 2);
        c.events_changed("w", S, S);
        assert!(c.lock().codes.is_empty());
        // The request still holds its text (its other periods run on) when its entry goes:
        // the program is still forgotten with its last entry.
        let held: Arc<str> = Arc::from("held");
        store(
            &c,
            Key::new(&held, at(0), at(1)),
            vec![events("w", 0, 1)],
            "d",
        );
        c.events_changed("w", 0, 0);
        assert!(c.lock().codes.is_empty());
        drop(held);
    }

    #[test]
    fn saved_results_come_back_except_those_a_write_reached_since() {
        let c = ResultCache::new(1 << 20);
        store(&c, key("q", 0, 10), vec![events("w", 0, 10)], "a");
        store(&c, key("q", 10, 20), vec![events("w", 10, 20)], "b");
        store(&c, key("l", 0, 10), vec![Read::BucketList], "c");
        let bytes = c.export("build", usize::MAX);
        // A later run: its cache is new; a write lands before the restore.
        let next = Arc::new(ResultCache::new(1 << 20));
        let ticket = next.restore_ticket();
        next.events_changed("w", 15 * S, 16 * S);
        assert_eq!(ticket.restore(&bytes, "build"), 2);
        assert_eq!(got(&next, &key("q", 0, 10)).as_deref(), Some("a"));
        assert!(next.get(&key("q", 10, 20)).is_none());
        assert_eq!(got(&next, &key("l", 0, 10)).as_deref(), Some("c"));
        assert_eq!(next.stats().restored, 2);
        // Restored entries are invalidated like any other.
        next.bucket_changed("x");
        assert!(next.get(&key("l", 0, 10)).is_none());
        // Another build's results, or damaged bytes, add nothing; the watch ends either way.
        let other = Arc::new(ResultCache::new(1 << 20));
        assert_eq!(other.restore_ticket().restore(&bytes, "build 2"), 0);
        assert_eq!(other.restore_ticket().restore(&bytes[1..], "build"), 0);
        drop(other.restore_ticket());
        assert!(other.lock().in_flight.is_empty());
    }

    #[test]
    fn an_export_keeps_the_most_recently_used_within_its_allowance() {
        let c = ResultCache::new(1 << 20);
        for i in 0..10 {
            store(
                &c,
                key("q", i, i + 1),
                vec![events("w", i, i + 1)],
                &"x".repeat(100),
            );
        }
        assert!(c.get(&key("q", 3, 4)).is_some());
        let all = c.export("b", usize::MAX);
        let some = c.export("b", all.len() / 3);
        assert!(
            some.len() <= all.len() / 3,
            "{} of {}",
            some.len(),
            all.len()
        );
        let next = Arc::new(ResultCache::new(1 << 20));
        let n = next.restore_ticket().restore(&some, "b");
        assert!((1..10).contains(&n), "{n}");
        assert!(next.get(&key("q", 3, 4)).is_some());
        assert!(c.export("b", 10).is_empty());
    }

    #[test]
    fn a_zero_budget_stores_nothing() {
        let c = ResultCache::new(0);
        store(&c, key("q", 0, 1), vec![], "a");
        assert!(c.get(&key("q", 0, 1)).is_none());
    }
}
