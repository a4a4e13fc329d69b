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

/// The instant `ns` nanoseconds after the Unix epoch. Every `i64` is representable.
pub fn from_ns(ns: i64) -> DateTime<Utc> {
    Utc.timestamp_nanos(ns)
}

/// RFC 3339 in UTC with `Z` and a 0/3/6/9-digit fraction: the reference's output format.
pub fn format(dt: &DateTime<Utc>) -> String {
    dt.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Appends [`format`] of `ns` to `out` without an intermediate allocation per call site.
pub fn write_ns(out: &mut String, ns: i64) {
    use std::fmt::Write;
    // `DateTime`'s `Display` with the `AutoSi` format is what `format` produces; writing it
    // through `fmt::Write` avoids allocating a temporary string per event on hot paths.
    let _ = write!(out, "{}", from_ns(ns).format_with_items(AUTO_SI_Z.iter()));
}

use chrono::format::{Fixed, Item, Numeric, Pad};

/// The item list equivalent to `to_rfc3339_opts(SecondsFormat::AutoSi, true)`.
const AUTO_SI_Z: [Item<'static>; 13] = [
    Item::Numeric(Numeric::Year, Pad::Zero),
    Item::Literal("-"),
    Item::Numeric(Numeric::Month, Pad::Zero),
    Item::Literal("-"),
    Item::Numeric(Numeric::Day, Pad::Zero),
    Item::Literal("T"),
    Item::Numeric(Numeric::Hour, Pad::Zero),
    Item::Literal(":"),
    Item::Numeric(Numeric::Minute, Pad::Zero),
    Item::Literal(":"),
    Item::Numeric(Numeric::Second, Pad::Zero),
    Item::Fixed(Fixed::Nanosecond),
    Item::Literal("Z"),
];

/// Parses strict RFC 3339 (offset required; `T`, `t` or space separator), as the reference
/// does for the `start`/`end` query-string parameters and query time periods.
pub fn parse_rfc3339(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(text).map(|dt| dt.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

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
