//! A small process-wide table of what is worth keeping from one query to the next (compiled
//! regexes, one-pass rule sets), bounded in entries: when it is full, a new entry empties it
//! first. A client that sends ever-new keys so costs only the work it would have cost with
//! no table, and the entries that matter (the dashboard's, sent with every query) are back
//! after their next use.

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::Mutex;

use crate::fxhash::FxHashMap;

/// A map of at most `max` entries behind a lock held only to look up or insert (never while
/// computing a value: two queries may compute the same new value at once, and keep either).
pub(crate) struct BoundedTable<K, V> {
    max: usize,
    map: Mutex<FxHashMap<K, V>>,
}

impl<K: Eq + Hash, V: Clone> BoundedTable<K, V> {
    /// An empty table of at most `max` entries.
    pub(crate) fn new(max: usize) -> Self {
        BoundedTable {
            max,
            map: Mutex::new(FxHashMap::default()),
        }
    }

    /// A copy of the value kept for `key`.
    pub(crate) fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.map.lock().ok()?.get(key).cloned()
    }

    /// Keeps `value` for `key`, emptying the table first if it is full and `key` is new.
    pub(crate) fn insert(&self, key: K, value: V) {
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= self.max && !map.contains_key(&key) {
                map.clear();
            }
            map.insert(key, value);
        }
    }

    /// Number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.lock().map_or(0, |m| m.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_holds_more_than_its_bound_and_keeps_replacing_known_keys() {
        let t = BoundedTable::new(3);
        for i in 0..3 {
            t.insert(i, i * 10);
        }
        t.insert(1, 11);
        assert_eq!((t.len(), t.get(&1)), (3, Some(11)));
        t.insert(7, 70);
        assert_eq!((t.len(), t.get(&7), t.get(&0)), (1, Some(70), None));
    }
}
