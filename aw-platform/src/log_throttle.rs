//! A log line written at most once per interval, for warnings that input can trigger at
//! any rate (a web page's requests, a privacy rule that fails on every title): the user
//! still sees each kind of problem, and the log cannot be flooded.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Lets one log line through per interval and counts the ones held back.
#[derive(Debug)]
pub struct LogThrottle {
    interval: Duration,
    last: Mutex<Option<Instant>>,
    held_back: AtomicU64,
}

impl LogThrottle {
    /// A throttle letting one line through per `interval`.
    pub const fn new(interval: Duration) -> LogThrottle {
        LogThrottle {
            interval,
            last: Mutex::new(None),
            held_back: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when the caller should log now, `n` being how many lines were held back
    /// since the last one; `None` (and one more held back) otherwise.
    pub fn allow(&self) -> Option<u64> {
        self.allow_at(Instant::now())
    }

    /// [`LogThrottle::allow`] at the time `now` (tests give their own times).
    fn allow_at(&self, now: Instant) -> Option<u64> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if last.is_some_and(|t| now.duration_since(t) < self.interval) {
            self.held_back.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(now);
        Some(self.held_back.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_and_the_rest_counted() {
        let throttle = LogThrottle::new(Duration::from_millis(200));
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(throttle.allow_at(at(0)), Some(0));
        assert_eq!(throttle.allow_at(at(1)), None);
        assert_eq!(throttle.allow_at(at(199)), None);
        assert_eq!(throttle.allow_at(at(250)), Some(2));
        assert_eq!(throttle.allow_at(at(300)), None);
    }
}
