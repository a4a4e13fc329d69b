//! Durations on the wire: float seconds in and out, integer nanoseconds inside.

use chrono::Duration;

/// Converts float seconds to the nearest whole nanosecond. Returns `None` for NaN, infinity
/// and values beyond ±292 years, which cannot be stored as `i64` nanoseconds.
///
/// The reference truncates (`1.001` became 1000999999 ns and came back as `1.000999999`),
/// so a duration it exported did not always import as the same duration, and re-importing an
/// export duplicated such events. Rounding makes every duration this server writes read back
/// exactly; for durations the reference stored, both rules agree.
pub fn from_secs_f64(seconds: f64) -> Option<Duration> {
    let ns = (seconds * 1e9).round();
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
    fn rounds_to_the_nearest_nanosecond() {
        let ns = |s: f64| from_secs_f64(s).and_then(|d| d.num_nanoseconds());
        assert_eq!(ns(1.001), Some(1_001_000_000));
        assert_eq!(ns(1.000999999), Some(1_000_999_999));
        assert_eq!(
            to_secs_f64(&Duration::nanoseconds(1_000_999_999)),
            1.000999999
        );
    }

    #[test]
    fn written_durations_read_back_exactly() {
        // Every duration below 2^53 ns (~104 days, where f64 stops holding whole ns) written
        // as `ns / 1e9` parses back to the same ns.
        let mut ns: i64 = 1;
        while ns * 1_000 + 999 < (1 << 53) {
            for d in [ns, ns + 1, ns * 3 + 7, ns * 1_000 + 999] {
                let text = serde_json::to_string(&to_secs_f64(&Duration::nanoseconds(d))).unwrap();
                let back: f64 = serde_json::from_str(&text).unwrap();
                let got = from_secs_f64(back).and_then(|x| x.num_nanoseconds());
                assert_eq!(got, Some(d), "{d} via {text}");
            }
            ns = ns * 7 / 3 + 1;
        }
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
