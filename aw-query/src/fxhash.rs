//! A small, fast non-cryptographic hasher (the "Fx" hash used by rustc) for the hash maps
//! on the query engine's per-event hot paths (interning, merging, categorising, URL
//! splitting), where the standard SipHash dominates the run time.
//!
//! Hash flooding is not a concern: the keys are the user's own event data, hashed only for
//! the duration of one read or query.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// The Fx hasher state.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The Fx step leaves the low bits depending only on the low bits of the last word,
        // so keys sharing a suffix (window titles ending in " - Mozilla Firefox") would
        // cluster in hashbrown's bucket index. A murmur3-style finaliser spreads every bit.
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

/// A `HashMap` using [`FxHasher`].
pub(crate) type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The [`FxHasher`] hash of a string. Maps of many long strings are keyed by it (with the
/// string beside it to confirm a match): growing such a map then re-hashes integers, not
/// every string again.
pub(crate) fn hash_str(s: &str) -> u64 {
    use std::hash::BuildHasher;
    BuildHasherDefault::<FxHasher>::default().hash_one(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, BuildHasherDefault};

    #[test]
    fn common_suffixes_still_spread_low_bits() {
        let b = BuildHasherDefault::<FxHasher>::default();
        let mut low: Vec<u64> = (0..1000)
            .map(|i| b.hash_one(format!("Page {i} of a site - Mozilla Firefox")) & 0x3ff)
            .collect();
        low.sort_unstable();
        low.dedup();
        assert!(
            low.len() > 500,
            "only {} distinct low-bit patterns",
            low.len()
        );
    }
}
