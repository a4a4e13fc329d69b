//! Time zones for the summary's days and hours (`GET /api/0/summary?tz=…`): the server's own,
//! a fixed offset, or an IANA zone.
//!
//! IANA zones come from `jiff`: the system's time zone database where there is one
//! (`/usr/share/zoneinfo`, kept current by the system's updates), else the copy jiff carries
//! (Windows, a container without tzdata). Not chrono-tz: its zone tables are Rust data full
//! of string pointers, 30,000 relocations that the loader applied at every start whether a
//! zone was ever asked for or not — 1 MB of memory and a tenth of the server's start time
//! (BENCHMARKS.md); jiff's copy is one block of bytes, read only when used.

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, Timelike, Utc};
use jiff::tz::{Offset, TimeZone};

/// A time zone asked for by a request; all three are jiff zones, so one rule serves
/// daylight-saving gaps and repeated hours everywhere.
#[derive(Clone)]
pub(crate) enum Zone {
    /// The server's local zone.
    Local(TimeZone),
    /// A fixed offset from UTC (`+01:00`, `Z`).
    Fixed(TimeZone),
    /// An IANA zone (`Europe/Berlin`).
    Named(TimeZone),
}

impl Zone {
    /// Reads `text`: an IANA name or an offset (`+01:00`, `-0530`, `Z`); `None`: the server's
    /// zone. `Err` says what a zone may be.
    pub(crate) fn parse(text: Option<&str>) -> Result<Zone, String> {
        let Some(text) = text else {
            return Ok(Zone::Local(TimeZone::system()));
        };
        let offset = if text == "Z" { "+00:00" } else { text };
        if let Ok(fixed) = offset.parse::<chrono::FixedOffset>() {
            let offset =
                Offset::from_seconds(fixed.local_minus_utc()).map_err(|e| e.to_string())?;
            return Ok(Zone::Fixed(TimeZone::fixed(offset)));
        }
        // jiff only opens names it found in the database; this also keeps a request's text
        // from reaching it as a path at all (no `..`, no absolute path).
        let plausible = !text.is_empty()
            && text.len() <= 64
            && !text.starts_with('/')
            && text
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..")
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_-+".contains(c));
        match plausible.then(|| TimeZone::get(text)) {
            Some(Ok(tz)) => Ok(Zone::Named(tz)),
            _ => Err(format!(
                "Unknown time zone '{text}': an IANA name (Europe/Berlin) or an offset (+01:00)"
            )),
        }
    }

    fn tz(&self) -> &TimeZone {
        match self {
            Zone::Local(tz) | Zone::Fixed(tz) | Zone::Named(tz) => tz,
        }
    }

    /// The local (wall-clock) time at the instant `at`.
    pub(crate) fn local(&self, at: DateTime<Utc>) -> NaiveDateTime {
        let seconds = jiff::Timestamp::new(at.timestamp(), 0)
            .map(|t| self.tz().to_offset(t).seconds())
            .unwrap_or(0);
        at.naive_utc() + Duration::seconds(i64::from(seconds))
    }

    /// The instant of the local time `local`: a time a daylight-saving change skips is
    /// taken at the end of the gap (as if the clock had not been put forward yet), a
    /// repeated one at its first occurrence (jiff's "compatible" rule). `None` only where
    /// none can be found (a time out of range).
    pub(crate) fn instant(&self, local: NaiveDateTime) -> Option<DateTime<Utc>> {
        let civil = jiff::civil::DateTime::new(
            i16::try_from(local.year()).ok()?,
            i8::try_from(local.month()).ok()?,
            i8::try_from(local.day()).ok()?,
            i8::try_from(local.hour()).ok()?,
            i8::try_from(local.minute()).ok()?,
            i8::try_from(local.second()).ok()?,
            0,
        )
        .ok()?;
        let instant = self.tz().to_ambiguous_timestamp(civil).compatible().ok()?;
        DateTime::from_timestamp(instant.as_second(), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn naive(text: &str) -> NaiveDateTime {
        text.parse().unwrap()
    }

    #[test]
    fn berlin_across_both_changes_of_2026() {
        let berlin = Zone::parse(Some("Europe/Berlin")).unwrap();
        assert_eq!(
            berlin.local(utc("2026-03-29T00:30:00Z")),
            naive("2026-03-29T01:30:00")
        );
        assert_eq!(
            berlin.local(utc("2026-03-29T01:30:00Z")),
            naive("2026-03-29T03:30:00")
        );
        // 02:30 does not exist that night: the end of the gap, as for 03:30 CEST.
        assert_eq!(
            berlin.instant(naive("2026-03-29T02:30:00")),
            Some(utc("2026-03-29T01:30:00Z"))
        );
        assert_eq!(
            berlin.instant(naive("2026-03-29T04:00:00")),
            Some(utc("2026-03-29T02:00:00Z"))
        );
        // 02:30 happens twice on 25 October: the first time, in summer time.
        assert_eq!(
            berlin.instant(naive("2026-10-25T02:30:00")),
            Some(utc("2026-10-25T00:30:00Z"))
        );
    }

    #[test]
    fn offsets_names_and_refusals() {
        let fixed = Zone::parse(Some("+05:30")).unwrap();
        assert_eq!(
            fixed.local(utc("2026-01-01T00:00:00Z")),
            naive("2026-01-01T05:30:00")
        );
        assert!(matches!(Zone::parse(Some("Z")), Ok(Zone::Fixed(_))));
        assert!(matches!(Zone::parse(Some("UTC")), Ok(Zone::Named(_))));
        assert!(matches!(Zone::parse(None), Ok(Zone::Local(_))));
        for bad in [
            "Mars/Olympus",
            "../../etc/passwd",
            "/etc/localtime",
            "",
            "Europe//Berlin",
        ] {
            assert!(Zone::parse(Some(bad)).is_err(), "{bad}");
        }
    }
}
