//! Reading a peer's day digests and the events of one of its days (see `day_table.rs`).

use std::collections::BTreeMap;

use aw_datastore::day_span;
use aw_models::Event;

use super::contents::{event_row, select_event_rows};
use super::file::PeerFile;
use super::MAX_VALUE_BYTES;
use crate::day_table::{DAY_COLUMNS, DAY_TABLE, MAX_BYTES_PER_DAY, MAX_EVENTS_PER_DAY};
use crate::error::Result;

/// Longest digest text read (ours have 32 hex digits).
const MAX_DIGEST_LEN: i64 = 64;

/// One day of a peer's bucket, read whole.
#[derive(Debug, Default)]
pub(crate) struct PeerDay {
    /// Each event with its id in the peer's file.
    pub events: Vec<(i64, Event)>,
    /// Events that cannot be synced: id and reason.
    pub skipped: Vec<(i64, String)>,
}

impl PeerFile {
    /// Whether the file has a day table this crate can read: present, a plain table with
    /// its columns. A table that is there but not so is reported as the error.
    pub(crate) fn has_days(&self) -> Result<bool> {
        let present: bool = self
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = ?1 COLLATE NOCASE",
                [DAY_TABLE],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| self.sql_error("unreadable schema", e))?;
        if present {
            self.check_table(DAY_TABLE, &DAY_COLUMNS)?;
        }
        Ok(present)
    }

    /// The count and digest of each day of bucket `bucket_id`, at most `limit` days (rows
    /// that are not an integer day and count and a short text digest are not read).
    pub(crate) fn day_digests(
        &self,
        bucket_id: &str,
        limit: usize,
    ) -> Result<BTreeMap<i64, (u64, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT day, count, digest FROM aw_sync_day WHERE bucket = ?1
                   AND typeof(day) = 'integer' AND typeof(count) = 'integer' AND count >= 0
                   AND typeof(digest) = 'text' AND length(digest) <= ?2
                 ORDER BY day LIMIT ?3",
            )
            .map_err(|e| self.sql_error("unreadable day table", e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(rusqlite::params![bucket_id, MAX_DIGEST_LEN, limit], |r| {
                let count = r.get::<_, i64>(1)?.max(0) as u64;
                Ok((r.get::<_, i64>(0)?, (count, r.get::<_, String>(2)?)))
            })
            .map_err(|e| self.sql_error("unreadable day table", e))?;
        rows.collect::<rusqlite::Result<BTreeMap<_, _>>>()
            .map_err(|e| self.sql_error("unreadable day table", e))
    }

    /// The events of the bucket that start in `day`, unclipped, with their ids; `None`
    /// when the day holds more than [`MAX_EVENTS_PER_DAY`] events or [`MAX_BYTES_PER_DAY`]
    /// of data (a pass cannot apply it whole, and a day is never applied half).
    pub(crate) fn day_events(&self, bucket_row: i64, day: i64) -> Result<Option<PeerDay>> {
        let (lo, hi) = day_span(day);
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "{} AND starttime >= ?3 AND starttime <= ?4
                 ORDER BY starttime, endtime, id LIMIT ?5",
                select_event_rows()
            ))
            .map_err(|e| self.sql_error("unreadable", e))?;
        let max = i64::try_from(MAX_VALUE_BYTES).unwrap_or(i64::MAX);
        let limit = i64::try_from(MAX_EVENTS_PER_DAY + 1).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(rusqlite::params![max, bucket_row, lo, hi, limit], event_row)
            .map_err(|e| self.sql_error("unreadable", e))?;
        let mut day_read = PeerDay::default();
        let (mut seen, mut bytes) = (0usize, 0usize);
        for row in rows {
            let row = row.map_err(|e| self.sql_error("unreadable", e))?;
            seen += 1;
            bytes += row.data.as_ref().map_or(0, String::len);
            if seen > MAX_EVENTS_PER_DAY || bytes > MAX_BYTES_PER_DAY {
                return Ok(None);
            }
            let id = row.id;
            match row.into_event() {
                Ok(event) => day_read.events.push((id, event)),
                Err(reason) => day_read.skipped.push((id, reason)),
            }
        }
        Ok(Some(day_read))
    }
}
