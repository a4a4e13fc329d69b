//! Faults a test switches on in a running datastore ([`crate::OpenOptions::faults`]),
//! where a real one cannot be made on demand: the disk filling up under the journal's
//! appends (on a copy-on-write file system even a preallocated journal needs new space
//! for every write), and commits failing as SQLite's do on a full disk (the whole open
//! transaction rolled back) at the instant a test chooses. Off unless a test turns them
//! on; a server never does.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// Switches shared between a test and the datastore it opened.
#[derive(Clone, Debug, Default)]
pub struct Faults(Arc<Switches>);

#[derive(Debug, Default)]
struct Switches {
    journal_full: AtomicBool,
    failing_commits: AtomicU32,
}

impl Faults {
    /// While `full`, every append to the journal fails as a write on a full disk does
    /// (`ENOSPC`), before it writes anything.
    pub fn set_journal_full(&self, full: bool) {
        self.0.journal_full.store(full, Ordering::Release);
    }

    /// The next `n` commits fail as on a full disk: the transaction is rolled back and
    /// `COMMIT` reports `SQLITE_FULL`.
    pub fn fail_commits(&self, n: u32) {
        self.0.failing_commits.store(n, Ordering::Release);
    }

    /// Whether this commit is to fail (counts it off).
    pub(crate) fn commit_fails(&self) -> bool {
        self.0
            .failing_commits
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Whether the journal's appends fail now.
    pub(crate) fn journal_full(&self) -> bool {
        self.0.journal_full.load(Ordering::Acquire)
    }
}
