//! What is read from a peer file: its buckets, and its events page by page after a
//! cursor, each row that cannot be synced skipped and reported on its own.

use aw_models::{timestamp, Bucket, Event};
use serde_json::{Map, Value};

use rusqlite::OptionalExtension;

use super::file::PeerFile;
use super::{MAX_VALUE_BYTES, PAGE_BYTES};
use crate::error::Result;

/// A bucket of a peer file.
pub struct PeerBucket {
    /// Its row id in the file (the events' `bucketrow`).
    pub row: i64,
    /// The bucket, without events.
    pub bucket: Bucket,
}

/// Where a page read stopped: the last event's start, end and id, in the order events are
/// read (start ascending; at one start, end and id descending: the index's own order read
/// backwards, so pages never sort).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageCursor {
    /// The last event's start (ns).
    pub start: i64,
    /// Its end (ns).
    pub end: i64,
    /// Its row id in the peer file.
    pub id: i64,
}

impl PageCursor {
    /// Before every event that starts at `from` or later.
    pub fn at(from: i64) -> PageCursor {
        PageCursor {
            start: from,
            end: i64::MAX,
            id: i64::MAX,
        }
    }
}

/// A page of a bucket's events.
#[derive(Debug, Default)]
pub struct Page {
    /// The events that can be synced, in read order.
    pub events: Vec<Event>,
    /// Rows passed over, by row id, with the reason.
    pub skipped: Vec<(i64, String)>,
    /// Whether more rows may follow (the page stopped at its row or byte limit).
    pub more: bool,
}

/// `column` as text of at most [`MAX_VALUE_BYTES`] (bound as `?1`), else NULL; the value
/// itself is never loaded when it is not text or too long (`octet_length` reads only its
/// header).
pub(super) fn text_or_null(column: &str) -> String {
    format!(
        "CASE WHEN typeof({column}) = 'text' AND octet_length({column}) <= ?1 THEN {column} END"
    )
}

impl PeerFile {
    /// The row ids of the file's buckets after `after`, in order, at most `limit`: a file of
    /// millions of bucket rows is walked a page at a time, never held whole.
    pub fn bucket_rows_after(&self, after: Option<i64>, limit: usize) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id FROM buckets WHERE typeof(id) = 'integer' AND id > ?1 ORDER BY id \
                 LIMIT ?2",
            )
            .map_err(|e| self.sql_error("unreadable", e))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(rusqlite::params![after.unwrap_or(i64::MIN), limit], |r| {
                r.get::<_, i64>(0)
            })
            .map_err(|e| self.sql_error("unreadable", e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| self.sql_error("unreadable", e))
    }

    /// The bucket at row `row`; an error names what in it cannot be synced.
    pub fn bucket(&self, row: i64) -> Result<PeerBucket> {
        let columns = ["name", "type", "client", "hostname", "created", "data"];
        let sql = format!(
            "SELECT {}, typeof(data) FROM buckets WHERE id = ?2",
            columns.map(text_or_null).join(", ")
        );
        let max = i64::try_from(MAX_VALUE_BYTES).unwrap_or(i64::MAX);
        let values = self
            .conn
            .query_row(&sql, rusqlite::params![max, row], |r| {
                let mut values = Vec::with_capacity(columns.len());
                for i in 0..columns.len() {
                    values.push(r.get::<_, Option<String>>(i)?);
                }
                Ok((values, r.get::<_, String>(columns.len())?))
            })
            .map_err(|e| self.sql_error(&format!("bucket row {row} unreadable"), e))?;
        let (mut values, data_type) = values;
        let mut take = |i: usize| -> Result<String> {
            values[i].take().ok_or_else(|| {
                self.bad(format!(
                    "bucket row {row}: '{}' is not text of at most {MAX_VALUE_BYTES} bytes",
                    columns[i]
                ))
            })
        };
        let (id, kind, client, hostname, created) =
            (take(0)?, take(1)?, take(2)?, take(3)?, take(4)?);
        let data = match (take(5), data_type.as_str()) {
            (Ok(text), _) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => map,
                _ => {
                    return Err(
                        self.bad(format!("bucket '{id}' has data that is not a JSON object"))
                    )
                }
            },
            // Files of older versions may have none.
            (Err(_), "null") => Map::new(),
            (Err(e), _) => return Err(e),
        };
        let mut bucket = Bucket::new(&id, &kind, &client, &hostname);
        // Unreadable: none (the destination then uses its own time).
        bucket.created = aw_datastore::created_from_text(created.trim());
        bucket.data = data;
        Ok(PeerBucket { row, bucket })
    }

    /// Every bucket of the file; the first one that cannot be read fails the call (for
    /// listings and tests: a pass walks the rows a page at a time).
    pub fn buckets(&self) -> Result<Vec<PeerBucket>> {
        self.bucket_rows_after(None, usize::MAX)?
            .into_iter()
            .map(|row| self.bucket(row))
            .collect()
    }

    /// The next page of the bucket's events after `cursor`, unclipped: at most `limit`
    /// rows and about `PAGE_BYTES` of data. The cursor moves past every row read,
    /// skipped ones included.
    pub fn events_after(
        &self,
        bucket_row: i64,
        cursor: &mut PageCursor,
        limit: usize,
    ) -> Result<Page> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "{} AND starttime >= ?3
                   AND (starttime > ?3 OR endtime < ?4 OR (endtime = ?4 AND id < ?5))
                 ORDER BY starttime ASC, endtime DESC, id DESC LIMIT ?6",
                select_event_rows()
            ))
            .map_err(|e| self.sql_error("unreadable", e))?;
        let max = i64::try_from(MAX_VALUE_BYTES).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(
                rusqlite::params![
                    max,
                    bucket_row,
                    cursor.start,
                    cursor.end,
                    cursor.id,
                    i64::try_from(limit).unwrap_or(i64::MAX)
                ],
                event_row,
            )
            .map_err(|e| self.sql_error("unreadable", e))?;
        let mut page = Page::default();
        let (mut seen, mut bytes) = (0usize, 0usize);
        for row in rows {
            let row = row.map_err(|e| self.sql_error("unreadable", e))?;
            *cursor = PageCursor {
                start: row.start,
                end: row.end,
                id: row.id,
            };
            seen += 1;
            bytes += row.data.as_ref().map_or(0, String::len);
            let id = row.id;
            match row.into_event() {
                Ok(mut event) => {
                    event.id = None;
                    page.events.push(event)
                }
                Err(reason) => page.skipped.push((id, reason)),
            }
            if bytes >= PAGE_BYTES {
                page.more = true;
                return Ok(page);
            }
        }
        page.more = seen == limit;
        Ok(page)
    }

    /// The start and end of the bucket's event with row id `id`, if it is still there.
    pub fn extent_of(&self, bucket_row: i64, id: i64) -> Result<Option<(i64, i64)>> {
        self.conn
            .query_row(
                "SELECT starttime, endtime FROM events WHERE id = ?1 AND bucketrow = ?2
                   AND typeof(starttime) = 'integer' AND typeof(endtime) = 'integer'",
                [id, bucket_row],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
            )
            .optional()
            .map_err(|e| self.sql_error("unreadable", e))
    }

    /// Number of events of the bucket.
    pub fn count(&self, bucket_row: i64) -> Result<u64> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM events WHERE bucketrow = ?1",
                [bucket_row],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.sql_error("unreadable", e))
    }
}

/// The data of an event row, read as [`text_or_null`] reads it: a JSON object, or why the
/// event cannot be synced.
fn parse_data(
    data: Option<String>,
    data_type: &str,
    length: i64,
) -> std::result::Result<Map<String, Value>, String> {
    match data {
        None if data_type != "text" => Err(format!("data is {data_type}, not text")),
        None => Err(format!(
            "data is {length} bytes, more than the {MAX_VALUE_BYTES} a synced event may have"
        )),
        Some(text) => serde_json::from_str::<Map<String, Value>>(&text)
            .map_err(|e| format!("data is not a JSON object ({e})")),
    }
}

/// `SELECT` of the event rows of bucket row `?2` whose id and times are integers, with
/// the data as [`text_or_null`] reads it (bound as `?1`): what a page or a day reads,
/// followed by their own conditions and order.
pub(super) fn select_event_rows() -> String {
    format!(
        "SELECT id, starttime, endtime, {}, typeof(data), octet_length(data)
         FROM events
         WHERE bucketrow = ?2
           AND typeof(starttime) = 'integer' AND typeof(endtime) = 'integer'
           AND typeof(id) = 'integer'",
        text_or_null("data")
    )
}

/// One row of [`select_event_rows`].
pub(super) struct EventRow {
    pub(super) id: i64,
    pub(super) start: i64,
    pub(super) end: i64,
    /// The data text, or `None` when it is not text of at most `MAX_VALUE_BYTES`.
    pub(super) data: Option<String>,
    data_type: String,
    length: i64,
}

/// Reads a row of [`select_event_rows`].
pub(super) fn event_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<EventRow> {
    Ok(EventRow {
        id: r.get(0)?,
        start: r.get(1)?,
        end: r.get(2)?,
        data: r.get(3)?,
        data_type: r.get(4)?,
        length: r.get(5)?,
    })
}

impl EventRow {
    /// The event, with its id in the file; or why it cannot be synced.
    pub(super) fn into_event(self) -> std::result::Result<Event, String> {
        let data = parse_data(self.data, &self.data_type, self.length)?;
        let mut event = Event::new(
            timestamp::from_ns(self.start),
            chrono::Duration::nanoseconds(self.end.saturating_sub(self.start)),
            data,
        );
        event.id = Some(self.id);
        Ok(event)
    }
}
