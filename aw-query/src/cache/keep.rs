//! Results kept across restarts: [`ResultCache::export`] writes the entries with their
//! reads (`cache_file.rs`), and a [`RestoreTicket`], taken before anything could write,
//! adds them to the next run's cache, except those a write since then reached.

use std::collections::HashMap;
use std::sync::Arc;

use super::writes::Dirty;
use super::{Key, ResultCache, Stored};
use crate::cache_file;

impl ResultCache {
    /// The results as bytes for [`RestoreTicket::restore`] (`cache_file.rs`), most recently
    /// used first, compressed to at most `allowance` bytes (the least recently used that do
    /// not fit are left out); `identity` names the engine's build beyond this crate's
    /// version (results of another build are not read back). Empty when none fits.
    pub fn export(&self, identity: &str, allowance: usize) -> Vec<u8> {
        // How much plain text fits is known only once compressed: start from what a
        // fifth-size compression would fit, and shrink the plain budget until it fits.
        let mut plain_budget = allowance.saturating_mul(5);
        for _ in 0..6 {
            let Some(plain) = self.export_plain(identity, plain_budget) else {
                return Vec::new();
            };
            let packed = cache_file::pack(&plain);
            if packed.len() <= allowance {
                return packed;
            }
            // As much plain text as this compression ratio fits, less 5 %.
            let fits = plain.len() as u128 * allowance as u128 * 95 / (packed.len() as u128 * 100);
            plain_budget = usize::try_from(fits)
                .unwrap_or(0)
                .min(plain.len().saturating_sub(1));
        }
        Vec::new()
    }

    /// The most recently used results that fit in `budget` bytes, not compressed; `None`
    /// when none does. The cache is locked only to take its entries (shared, not copied):
    /// queries go on while they are written out.
    fn export_plain(&self, identity: &str, budget: usize) -> Option<Vec<u8>> {
        let taken: Vec<(Arc<Key>, Vec<crate::recording::Read>, Stored)> = {
            let inner = self.lock();
            inner
                .lru
                .values()
                .rev()
                .filter_map(|id| inner.entries.get(id))
                .map(|e| (e.key.clone(), e.reads.clone(), e.value.clone()))
                .collect()
        };
        let mut writer = cache_file::Writer::new(identity);
        let mut programs: HashMap<&str, u32> = HashMap::new();
        let mut kept = 0;
        for (key, reads, value) in &taken {
            let code = &*key.code;
            let more = writer.entry_len(reads, value)
                + if programs.contains_key(code) {
                    0
                } else {
                    4 + code.len()
                };
            if writer.len() + more > budget {
                continue;
            }
            let program = match programs.get(code) {
                Some(&p) => p,
                None => {
                    let p = writer.program(code);
                    programs.insert(code, p);
                    p
                }
            };
            writer.entry(program, &key.start, &key.end, reads, value);
            kept += 1;
        }
        (kept > 0).then(|| writer.finish())
    }

    /// Starts watching writes for a [`RestoreTicket::restore`]: take it before anything
    /// could write to the data the saved results were computed from (when the datastore is
    /// open, before it serves anyone), so a write before the restore still reaches them.
    pub fn restore_ticket(self: &Arc<Self>) -> RestoreTicket {
        let mut inner = self.lock();
        inner.clock += 1;
        let id = inner.clock;
        inner.in_flight.insert(id, Dirty::default());
        inner.restoring += 1;
        RestoreTicket {
            cache: self.clone(),
            id,
        }
    }
}

/// Leave to add saved results to the cache it was taken from ([`RestoreTicket::restore`]).
/// Dropping it unused ends the watch.
#[derive(Debug)]
pub struct RestoreTicket {
    cache: Arc<ResultCache>,
    id: u64,
}

impl RestoreTicket {
    /// The cache the results go to: what it is told of writes from now on (or of writes
    /// made since the results were saved) keeps the results they reach out.
    pub fn cache(&self) -> &ResultCache {
        &self.cache
    }

    /// Adds the results saved by [`ResultCache::export`] of the same engine `identity`
    /// (computed from the data as it was when this ticket was taken) to its cache, except
    /// those a write since then reached; returns how many were added. Bytes of another
    /// identity, or not whole, add nothing. The watch (and `restoring`) ends with it.
    pub fn restore(self, bytes: &[u8], identity: &str) -> usize {
        let stored = cache_file::read(bytes, identity);
        let cache = &*self.cache;
        let mut inner = cache.lock();
        let dirty = inner.end_watch(self.id);
        let mut added = 0;
        // Oldest first, so the last added (the most recently used at the save) are the
        // last to be evicted.
        for s in stored.into_iter().flatten().rev() {
            let key = match &s.value {
                Stored::Text(_) => Key::new(&s.code, s.start, s.end),
                Stored::Summed(_) => Key::summed(&s.code, s.start, s.end),
            };
            if !cache.accepts(&dirty, &key, &s.reads, s.value.bytes()) {
                continue;
            }
            let mut value = s.value;
            if let Stored::Summed(summed) = &mut value {
                inner.share_texts(summed);
            }
            cache.store(&mut inner, key, s.reads, value);
            added += 1;
        }
        inner.stats.restored += added as u64;
        drop(inner);
        added
    }
}

impl Drop for RestoreTicket {
    fn drop(&mut self) {
        let mut inner = self.cache.lock();
        inner.in_flight.remove(&self.id);
        inner.restoring -= 1;
    }
}
