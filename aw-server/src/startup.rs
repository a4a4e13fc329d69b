//! How long each phase of a start took, for the line the server logs once it listens
//! ("started in 9.1 ms: config 0.4, database 5.2, routes 0.6, listener 2.9").
//!
//! A start is measured from the first line of `main` (what comes before it, the kernel's
//! exec and the dynamic loader, is measured from outside: `tests/python/startup_probe.py`,
//! BENCHMARKS.md). The marks are few and come from one thread at a time (main, then the
//! runtime's liftoff), so a mutex is all the bookkeeping there is.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// The phases so far: each name with the time since the previous mark.
static MARKS: Mutex<Vec<(&'static str, Duration)>> = Mutex::new(Vec::new());

/// When the start began (the first line of `main`), and the last mark.
static BEGAN: OnceLock<Instant> = OnceLock::new();
static LAST: Mutex<Option<Instant>> = Mutex::new(None);

/// Starts the clock; called first thing in `main`.
pub(crate) fn begin() {
    let now = Instant::now();
    let _ = BEGAN.set(now);
    *LAST.lock().unwrap_or_else(PoisonError::into_inner) = Some(now);
}

/// Ends the phase `name` now.
pub(crate) fn mark(name: &'static str) {
    let now = Instant::now();
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(previous) = last.replace(now) {
        MARKS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((name, now - previous));
    }
}

/// "started in 9.1 ms: config 0.4, database 5.2, …", or nothing when the clock never ran.
pub(crate) fn summary() -> Option<String> {
    let began = BEGAN.get()?;
    let marks = MARKS.lock().unwrap_or_else(PoisonError::into_inner);
    let phases: Vec<String> = marks
        .iter()
        .map(|(name, took)| format!("{name} {:.1}", took.as_secs_f64() * 1e3))
        .collect();
    Some(format!(
        "started in {:.1} ms: {}",
        began.elapsed().as_secs_f64() * 1e3,
        phases.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_every_phase_in_order() {
        begin();
        mark("config");
        mark("database");
        let text = summary().unwrap_or_default();
        assert!(text.starts_with("started in "), "{text}");
        let config = text.find("config ").unwrap_or(usize::MAX);
        let database = text.find("database ").unwrap_or(0);
        assert!(config < database, "{text}");
    }
}
