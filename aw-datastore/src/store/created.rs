//! The text form of `buckets.created`: written as the reference writes it, read in any
//! form a server of the ecosystem wrote.

use chrono::{DateTime, NaiveDateTime, Utc};

/// The text form of `buckets.created`: `YYYY-MM-DD HH:MM:SS[.fraction]+00:00`, as the
/// reference writes it.
pub(super) fn created_to_text(dt: &DateTime<Utc>) -> String {
    dt.format("%Y-%m-%d %H:%M:%S%.f+00:00").to_string()
}

/// Reads `buckets.created` (ours, the reference's, or the Python server's forms); also what
/// `aw-sync` reads from other devices' files, which are in the same format.
pub fn created_from_text(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(dt) = DateTime::parse_from_rfc3339(text) {
        return Some(dt.with_timezone(&Utc));
    }
    if let Ok(dt) = DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z") {
        return Some(dt.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(text, fmt) {
            return Some(naive.and_utc());
        }
    }
    None
}
