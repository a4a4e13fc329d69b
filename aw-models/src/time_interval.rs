//! A half-open span of time written `start/end`.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

use crate::timestamp;

/// A span of time, written on the wire as `START/END` with both ends in strict RFC 3339.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeInterval {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

/// Why a `start/end` text is not a time interval.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TimeIntervalError {
    /// The text does not split into exactly two parts on `/`.
    #[error("time interval '{0}' must be two timestamps separated by '/'")]
    ParseError(String),
    /// One of the parts is not an RFC 3339 timestamp with an offset.
    #[error("time interval '{0}' has a timestamp that is not RFC 3339 with an offset")]
    BadTimestamp(String),
    /// A timestamp outside the 64-bit-nanosecond range (1677..2262).
    #[error("time interval '{0}' is outside the storable range (years 1677 to 2262)")]
    OutOfRange(String),
}

impl TimeInterval {
    /// The interval from `start` to `end`.
    pub fn new(start: DateTime<Utc>, end: DateTime<Utc>) -> Self {
        TimeInterval { start, end }
    }

    /// The start.
    pub fn start(&self) -> &DateTime<Utc> {
        &self.start
    }

    /// The end.
    pub fn end(&self) -> &DateTime<Utc> {
        &self.end
    }

    /// `end - start`.
    pub fn duration(&self) -> Duration {
        self.end - self.start
    }
}

impl FromStr for TimeInterval {
    type Err = TimeIntervalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split('/');
        let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(TimeIntervalError::ParseError(s.to_string()));
        };
        let parse = |t: &str| {
            timestamp::parse_rfc3339(t).map_err(|_| TimeIntervalError::BadTimestamp(s.to_string()))
        };
        let (start, end) = (parse(a)?, parse(b)?);
        if timestamp::to_ns(&start).is_none() || timestamp::to_ns(&end).is_none() {
            return Err(TimeIntervalError::OutOfRange(s.to_string()));
        }
        Ok(TimeInterval { start, end })
    }
}

/// `START/END` with `+00:00` offsets, the form the query language's `TIMEINTERVAL` has.
impl fmt::Display for TimeInterval {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}/{}", self.start.to_rfc3339(), self.end.to_rfc3339())
    }
}

impl Serialize for TimeInterval {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TimeInterval {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays_like_timeinterval() {
        let ti: TimeInterval = "2024-05-01T00:00:00+02:00/2024-05-02T00:00:00.5+02:00"
            .parse()
            .unwrap();
        assert_eq!(
            ti.to_string(),
            "2024-04-30T22:00:00+00:00/2024-05-01T22:00:00.500+00:00"
        );
    }

    #[test]
    fn rejects_malformed() {
        for s in [
            "2024-05-01T00:00:00Z",
            "a/b",
            "2024-05-01T00:00:00Z/2024-05-01T00:00:00Z/2024-05-01T00:00:00Z",
            "2024-05-01T00:00:00/2024-05-02T00:00:00Z",
            "1000-05-01T00:00:00Z/2024-05-02T00:00:00Z",
        ] {
            assert!(s.parse::<TimeInterval>().is_err(), "{s}");
        }
    }
}
