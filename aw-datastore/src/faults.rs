//! Faults a test switches on in a running datastore ([`crate::OpenOptions::faults`]),
//! where a real one cannot be made on demand: the disk filling up under the journal's
//! appends (on a copy-on-write file system even a preallocated journal needs new space
//! for every write). Off unless a test turns them on; a server never does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Switches shared between a test and the datastore it opened.
#[derive(Clone, Debug, Default)]
pub struct Faults(Arc<Switches>);

#[derive(Debug, Default)]
struct Switches {
    journal_full: AtomicBool,
}

impl Faults {
    /// While `full`, every append to the journal fails as a write on a full disk does
    /// (`ENOSPC`), before it writes anything.
    pub fn set_journal_full(&self, full: bool) {
        self.0.journal_full.store(full, Ordering::Release);
    }

    /// Whether the journal's appends fail now.
    pub(crate) fn journal_full(&self) -> bool {
        self.0.journal_full.load(Ordering::Acquire)
    }
}
