//! Time zones for the summary's days and hours (`GET /api/0/summary?tz=…`): the server's own,
//! a fixed offset, or an IANA zone.
//!
//! IANA zones come from `jiff`: the system's time zone database where there is one
//! (`/usr/share/zoneinfo`, kept current by the system's updates), else the copy jiff carries
//! (Windows, a container without tzdata). Not chrono-tz: its zone tables are Rust data full
//! of string pointers, 30,000 relocations that the loader applied at every start whether a
//! zone was ever asked for or not — 1 MB of memory and a tenth of the server's start time
//! (BENCHMARKS.md); jiff's copy is one block of bytes, read only when used.

use chrono::{DateTime, Datelike, Duration, NaiveDateTime, TimeZone, Timelike, Utc};

/// A time zone asked for by a request.
#[derive(Clone)]
pub(crate) enum Zone {
    /// The server's local zone.
    Local,
    /// A fixed offset from UTC (`+01:00`, `Z`).
    Fixed(chrono::FixedOffset),
    /// An IANA zone (`Europe/Berlin`).
    Named(jiff::tz::TimeZone),
}

impl Zone {
    /// Reads `text`: an IANA name or an offset (`+01:00`, `-0530`, `Z`); `None`: the server's
    /// zone. `Err` says what a zone may be.
    pub(crate) fn parse(text: Option<&str>) -> Result<Zone, String> {
        let Some(text) = text else {
            return Ok(Zone::Local);
        };
        let offset = if text == "Z" { "+00:00" } else { text };
        if let Ok(fixed) = offset.parse::<chrono::FixedOffset>() {
            return Ok(Zone::Fixed(fixed));
        }
        // A name is a path into the database: no `..`, no absolute path.
        let plausible = !text.is_empty()
            && text.len() <= 64
            && !text.starts_with('/')
            && text
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != "..")
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_-+".contains(c));
        match plausible.then(|| jiff::tz::TimeZone::get(text)) {
            Some(Ok(tz)) => Ok(Zone::Named(tz)),
            _ => Err(format!(
                "Unknown time zone '{text}': an IANA name (Europe/Berlin) or an offset (+01:00)"
            )),
        }
    }

    /// The local (wall-clock) time at the instant `at`.
    pub(crate) fn local(&self, at: DateTime<Utc>) -> NaiveDateTime {
        match self {
            Zone::Local => at.with_timezone(&chrono::Local).naive_local(),
            Zone::Fixed(z) => at.with_timezone(z).naive_local(),
            Zone::Named(tz) => {
                let seconds = jiff::Timestamp::new(at.timestamp(), 0)
                    .map(|t| tz.to_offset(t).seconds())
                    .unwrap_or(0);
                at.naive_utc() + Duration::seconds(i64::from(seconds))
            }
        }
    }

    /// The instant of the local time `local`: a time a daylight-saving change skips is
    /// taken at the end of the gap (as if the clock had not been put forward yet), a
    /// repeated one at its first occurrence. `None` only where none can be found (a whole
    /// day skipped when a zone moved across the date line, or a time out of range).
    pub(crate) fn instant(&self, local: NaiveDateTime) -> Option<DateTime<Utc>> {
        match self {
            Zone::Local => chrono_instant(&chrono::Local, local),
            Zone::Fixed(z) => chrono_instant(z, local),
            Zone::Named(tz) => {
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
                let offset = match tz.to_ambiguous_timestamp(civil).offset() {
                    jiff::tz::AmbiguousOffset::Unambiguous { offset } => offset,
                    // In a gap, the offset before it: the wall-clock time read with the
                    // clock not yet put forward, which lands at the end of the gap.
                    jiff::tz::AmbiguousOffset::Gap { before, .. } => before,
                    // A repeated time: its first occurrence, under the offset before.
                    jiff::tz::AmbiguousOffset::Fold { before, .. } => before,
                };
                let seconds = local.and_utc().timestamp() - i64::from(offset.seconds());
                DateTime::from_timestamp(seconds, 0)
            }
        }
    }
}

/// [`Zone::instant`] for a chrono zone: the earliest instant of `local`, else (in a gap)
/// that of an hour later, the length of every gap of the server's zones but a few.
fn chrono_instant<Z: TimeZone>(zone: &Z, local: NaiveDateTime) -> Option<DateTime<Utc>> {
    zone.from_local_datetime(&local)
        .earliest()
        .or_else(|| {
            zone.from_local_datetime(&(local + Duration::hours(1)))
                .earliest()
        })
        .map(|t| t.with_timezone(&Utc))
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
        assert!(matches!(Zone::parse(None), Ok(Zone::Local)));
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
