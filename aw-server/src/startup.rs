//! How long each phase of a start took, for the line the server logs once it listens
//! ("started in 3.6 ms: logging 0.3, config 0.2, runtime 0.1, routes 0.7, database 2.0,
//! background 0.1, listener 0.3"). The database opens while the routes are built, so
//! "database" is what its open took beyond them.
//!
//! A start is measured from the first line of `main` (what comes before it, the kernel's
//! exec and the dynamic loader, is measured from outside: `tests/python/startup_probe.py`,
//! BENCHMARKS.md). The marks are few and come from one thread at a time (main, then the
//! runtime's liftoff), so one mutex over the marks is all the bookkeeping there is.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// When the start began (the first line of `main`), and when each phase ended, in order.
/// A phase's length is the time since the mark before it.
struct Clock {
    began: Instant,
    marks: Vec<(&'static str, Instant)>,
}

static CLOCK: Mutex<Option<Clock>> = Mutex::new(None);

/// Starts the clock; called first thing in `main`.
pub(crate) fn begin() {
    *CLOCK.lock().unwrap_or_else(PoisonError::into_inner) = Some(Clock {
        began: Instant::now(),
        marks: Vec::new(),
    });
}

/// Ends the phase `name` now (nothing when the clock never ran).
pub(crate) fn mark(name: &'static str) {
    if let Some(clock) = CLOCK
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
    {
        clock.marks.push((name, Instant::now()));
    }
}

/// "started in 9.1 ms: config 0.4, database 5.2, …", or nothing when the clock never ran.
pub(crate) fn summary() -> Option<String> {
    let clock = CLOCK.lock().unwrap_or_else(PoisonError::into_inner);
    let Clock { began, marks } = clock.as_ref()?;
    let ms = |from: Instant, to: Instant| (to - from).as_secs_f64() * 1e3;
    let mut previous = *began;
    let phases: Vec<String> = marks
        .iter()
        .map(|&(name, at)| {
            let took = ms(previous, at);
            previous = at;
            format!("{name} {took:.1}")
        })
        .collect();
    // The total ends at the last mark (the listener), as the phases do.
    Some(format!(
        "started in {:.1} ms: {}",
        ms(*began, previous),
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
