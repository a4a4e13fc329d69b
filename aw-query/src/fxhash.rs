//! The hash maps of the query engine's per-event hot paths (interning, merging,
//! categorising, URL splitting), where the standard SipHash dominates the run time: the Fx
//! hash of rustc (`rustc-hash`), fast on the short strings and integers these maps hold.
//!
//! Hash flooding is not a concern: the keys are the user's own event data, hashed only for
//! the duration of one read or query.

use std::hash::BuildHasher;

pub(crate) use rustc_hash::{FxBuildHasher, FxHashMap, FxHasher};

/// The Fx hash of a string. Maps of many long strings are keyed by it (with the string
/// beside it to confirm a match): growing such a map then re-hashes integers, not every
/// string again.
pub(crate) fn hash_str(s: &str) -> u64 {
    FxBuildHasher.hash_one(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_suffixes_still_spread_low_bits() {
        let b = FxBuildHasher;
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
