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
        let now = Instant::now();
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
        assert_eq!(throttle.allow(), Some(0));
        assert_eq!(throttle.allow(), None);
        assert_eq!(throttle.allow(), None);
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(throttle.allow(), Some(2));
        assert_eq!(throttle.allow(), None);
    }
}
