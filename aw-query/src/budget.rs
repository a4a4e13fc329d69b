//! The time budget of the evaluation running on this thread, checked inside long loops.
//!
//! The interpreter checks its deadline before every statement and call, but one built-in
//! call over a year of events (categorising, flooding, merging, intersecting) can itself take
//! a long time. The per-event loops of the transforms therefore call [`expired`], which
//! compares the clock every [`CHECK_EVERY`] calls; once the deadline has passed the loop stops
//! early, and the interpreter, right after the call returns, discards its partial result and
//! answers `Timeout`. A thread-local keeps the transforms' signatures free of a budget
//! argument; the interpreter sets it for its thread for the time of a run ([`enter`]).

use std::cell::Cell;
use std::time::Instant;

/// Calls of [`expired`] between two looks at the clock (about a microsecond of work each).
const CHECK_EVERY: u32 = 1024;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static EXPIRED: Cell<bool> = const { Cell::new(false) };
    static TICKS: Cell<u32> = const { Cell::new(0) };
}

/// Restores the previous budget of the thread when dropped.
pub(crate) struct Guard {
    previous: Option<Instant>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        DEADLINE.set(self.previous);
        EXPIRED.set(false);
    }
}

/// Sets the deadline of evaluations on this thread until the guard is dropped.
pub(crate) fn enter(deadline: Option<Instant>) -> Guard {
    EXPIRED.set(false);
    Guard {
        previous: DEADLINE.replace(deadline),
    }
}

/// Called once per item of a long loop: whether the deadline has passed (the clock is read
/// every [`CHECK_EVERY`] calls; once it has, every later call says so at once).
#[inline]
pub(crate) fn expired() -> bool {
    if EXPIRED.get() {
        return true;
    }
    let ticks = TICKS.get().wrapping_add(1);
    TICKS.set(ticks);
    if !ticks.is_multiple_of(CHECK_EVERY) {
        return false;
    }
    let passed = DEADLINE.get().is_some_and(|d| Instant::now() >= d);
    EXPIRED.set(passed);
    passed
}

/// The deadline of the evaluation on this thread (to give parts of its work run on other
/// threads the same one).
pub(crate) fn deadline() -> Option<Instant> {
    DEADLINE.get()
}

/// Records that the deadline has passed (found by work done for this thread elsewhere).
pub(crate) fn mark_expired() {
    EXPIRED.set(true);
}

/// Whether a loop on this thread found the deadline passed.
pub(crate) fn has_expired() -> bool {
    EXPIRED.get()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn expires_only_past_the_deadline_and_resets_after_the_run() {
        {
            let _g = enter(Some(Instant::now() + Duration::from_secs(3600)));
            assert!(!(0..10_000).any(|_| expired()));
        }
        {
            let _g = enter(Some(Instant::now()));
            let calls = (0..10_000).take_while(|_| !expired()).count();
            assert!(calls < 2 * CHECK_EVERY as usize, "{calls}");
            assert!(has_expired());
        }
        assert!(!has_expired());
        let _g = enter(None);
        assert!(!(0..10_000).any(|_| expired()));
    }
}
