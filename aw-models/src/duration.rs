//! Durations on the wire: float seconds in and out, integer nanoseconds inside.

use chrono::Duration;

/// Converts float seconds to a duration of `trunc(seconds × 1e9)` nanoseconds, the
/// reference's rounding (so `1.001` becomes 1000999999 ns). Returns `None` for NaN, infinity
/// and values beyond ±292 years, which cannot be stored as `i64` nanoseconds.
pub fn from_secs_f64(seconds: f64) -> Option<Duration> {
    let ns = (seconds * 1e9).trunc();
    // i64::MAX as f64 rounds up to 2^63, which itself does not fit: compare strictly.
    if !ns.is_finite() || ns >= i64::MAX as f64 || ns < i64::MIN as f64 {
        return None;
    }
    Some(Duration::nanoseconds(ns as i64))
}

/// Float seconds of a duration, always exact to the nanosecond for stored durations.
pub fn to_secs_f64(duration: &Duration) -> f64 {
    match duration.num_nanoseconds() {
        Some(ns) => ns as f64 / 1e9,
        None => duration.num_milliseconds() as f64 / 1e3,
    }
}

/// Nanoseconds of a duration, saturating (only reachable for durations not built here).
pub fn to_ns(duration: &Duration) -> i64 {
    duration
        .num_nanoseconds()
        .unwrap_or(if *duration < Duration::zero() {
            i64::MIN
        } else {
            i64::MAX
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_like_the_reference() {
        assert_eq!(
            from_secs_f64(1.001).and_then(|d| d.num_nanoseconds()),
            Some(1_000_999_999)
        );
        assert_eq!(
            to_secs_f64(&Duration::nanoseconds(1_000_999_999)),
            1.000999999
        );
    }

    #[test]
    fn rejects_unstorable_values() {
        assert!(from_secs_f64(f64::NAN).is_none());
        assert!(from_secs_f64(f64::INFINITY).is_none());
        assert!(from_secs_f64(1e12).is_none());
        assert!(from_secs_f64(-1e12).is_none());
        assert!(from_secs_f64(9.2e9).is_some());
    }
}
