//! Conversions between `DateTime<Utc>`, integer nanoseconds and the wire text format.
//!
//! The database stores instants as nanoseconds since the Unix epoch in an `i64`, which covers
//! the years 1677 to 2262. Every instant accepted from a client goes through [`to_ns`] so that
//! out-of-range values are refused at the edge instead of overflowing deeper down.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

/// Nanoseconds since the Unix epoch, or `None` when the instant does not fit in an `i64`.
pub fn to_ns(dt: &DateTime<Utc>) -> Option<i64> {
    dt.timestamp_nanos_opt()
}

/// Nanoseconds since the Unix epoch, clamped to the `i64` range: an instant before 1677 or
/// after 2262 becomes the range's end on its side. For bounds of reads, where such an instant
/// selects the same events as the extreme.
pub fn to_ns_saturating(dt: &DateTime<Utc>) -> i64 {
    to_ns(dt).unwrap_or(if dt.timestamp() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

/// The instant `ns` nanoseconds after the Unix epoch. Every `i64` is representable.
pub fn from_ns(ns: i64) -> DateTime<Utc> {
    Utc.timestamp_nanos(ns)
}

/// RFC 3339 in UTC with `Z` and a 0/3/6/9-digit fraction: the reference's output format.
pub fn format(dt: &DateTime<Utc>) -> String {
    dt.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Appends [`format()`] of `ns` to `out`.
///
/// Hand-written because it runs once or twice per event on every fetch and export: going
/// through chrono's formatting machinery cost several times the rest of writing an event.
/// `tests::write_ns_matches_chrono` checks it against [`format()`] across the whole range.
pub fn write_ns(out: &mut String, ns: i64) {
    const NS_PER_DAY: i64 = 86_400 * 1_000_000_000;
    let days = ns.div_euclid(NS_PER_DAY);
    let in_day = ns.rem_euclid(NS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let secs = in_day / 1_000_000_000;
    let nanos = in_day % 1_000_000_000;
    let mut buf = *b"0000-00-00T00:00:00.000000000Z";
    put_digits(&mut buf[0..4], year);
    put_digits(&mut buf[5..7], month);
    put_digits(&mut buf[8..10], day);
    put_digits(&mut buf[11..13], secs / 3600);
    put_digits(&mut buf[14..16], secs / 60 % 60);
    put_digits(&mut buf[17..19], secs % 60);
    // chrono's `AutoSi`: no fraction, or 3, 6 or 9 digits, whichever is exact.
    let len = if nanos == 0 {
        19
    } else if nanos % 1_000_000 == 0 {
        put_digits(&mut buf[20..23], nanos / 1_000_000);
        23
    } else if nanos % 1_000 == 0 {
        put_digits(&mut buf[20..26], nanos / 1_000);
        26
    } else {
        put_digits(&mut buf[20..29], nanos);
        29
    };
    // Every byte written is ASCII.
    out.push_str(std::str::from_utf8(&buf[..len]).unwrap_or_default());
    out.push('Z');
}

/// Writes the low `dst.len()` decimal digits of `n` (non-negative) into `dst`, zero-padded.
fn put_digits(dst: &mut [u8], mut n: i64) {
    for d in dst.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// The proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`). Years of `i64` nanoseconds (1677–2262) are always positive.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Parses an event's `timestamp` as the reference does (chrono's lenient RFC 3339 reading:
/// any offset, `T` or space, optional fraction); the error names the text, so a refused
/// event can be found in the client's data.
pub fn parse_event_timestamp(text: &str) -> Result<DateTime<Utc>, String> {
    text.parse::<DateTime<Utc>>()
        .map_err(|e| format!("invalid timestamp {text:?}: {e}"))
}

/// Serde form of [`parse_event_timestamp`], for `#[serde(deserialize_with)]`.
pub fn deserialize_event_timestamp<'de, D>(deserializer: D) -> Result<DateTime<Utc>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
    parse_event_timestamp(&text).map_err(serde::de::Error::custom)
}

/// Parses strict RFC 3339 (offset required; `T`, `t` or space separator), as the reference
/// does for the `start`/`end` query-string parameters and query time periods.
pub fn parse_rfc3339(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(text).map(|dt| dt.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturating_ns_clamps_to_the_range_on_each_side() {
        let at = |y| Utc.with_ymd_and_hms(y, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(to_ns_saturating(&at(1000)), i64::MIN);
        assert_eq!(to_ns_saturating(&at(3000)), i64::MAX);
        assert_eq!(to_ns_saturating(&at(1970)), 0);
    }

    #[test]
    fn output_fraction_has_0_3_6_or_9_digits() {
        for (ns, text) in [
            (1_514_768_461_000_000_000, "2018-01-01T01:01:01Z"),
            (1_514_764_865_500_000_000, "2018-01-01T00:01:05.500Z"),
            (1_514_764_865_000_001_000, "2018-01-01T00:01:05.000001Z"),
            (1_514_764_865_000_000_001, "2018-01-01T00:01:05.000000001Z"),
        ] {
            assert_eq!(format(&from_ns(ns)), text);
            let mut s = String::new();
            write_ns(&mut s, ns);
            assert_eq!(s, text);
        }
    }

    #[test]
    fn write_ns_matches_chrono() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut values = vec![i64::MIN, i64::MAX, 0, -1, 1, 951_782_400_000_000_000];
        for _ in 0..200_000 {
            // xorshift: values spread over the whole range, and rounded ones for each fraction
            // width.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x as i64;
            values.extend([v, v - v % 1_000, v - v % 1_000_000, v - v % 1_000_000_000]);
        }
        for ns in values {
            let mut s = String::new();
            write_ns(&mut s, ns);
            assert_eq!(s, format(&from_ns(ns)), "{ns}");
        }
    }

    #[test]
    fn negative_ns_formats_before_1970() {
        assert_eq!(format(&from_ns(-1_000_000_000)), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn strict_parse_needs_offset() {
        assert!(parse_rfc3339("2020-01-01T00:00:00").is_err());
        assert!(parse_rfc3339("2020-01-01 00:00:00Z").is_ok());
        assert!(parse_rfc3339("2020-01-01t00:00:00+02:00").is_ok());
    }
}
