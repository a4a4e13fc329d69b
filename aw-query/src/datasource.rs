//! Where the query functions `query_bucket`, `query_bucket_names` and `find_bucket` get
//! their data, plus an in-memory implementation for tests, benchmarks and tools.

use std::collections::HashMap;
use std::fmt;

use aw_models::raw_event::data_to_text;
use aw_models::timestamp::to_ns_saturating;
use aw_models::{Bucket, Event, TextRows};
use chrono::{DateTime, Utc};

/// The storage the interpreter reads buckets and events from.
///
/// The server implements this over its database; keeping it a trait lets the query engine be
/// tested and benchmarked without one. It must be `Send + Sync` because several time periods
/// of one query are evaluated in parallel threads sharing the same source.
pub trait DataSource: Send + Sync {
    /// The events of the bucket overlapping or touching [start, end], clipped to it, newest
    /// first, as rows whose data is still JSON text: the engine parses each distinct text
    /// once instead of every event's data (a year of window events repeats a few thousand
    /// texts hundreds of thousands of times). The rows may come in parts, in order, as the
    /// source reads them, so the engine works on the first while the source reads the rest;
    /// an error ends them.
    fn query_bucket_rows(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> RowChunks<'_>;

    /// All buckets (id -> Bucket), for find_bucket and query_bucket_names.
    fn buckets(&self) -> Result<HashMap<String, Bucket>, DataSourceError>;
}

/// The rows of [`DataSource::query_bucket_rows`], a part at a time, with their data texts
/// (see [`TextRows`]).
pub type RowChunks<'a> = Box<dyn Iterator<Item = Result<TextRows, DataSourceError>> + 'a>;

/// Why a [`DataSource`] could not answer. Its `Debug` rendering is part of the query error
/// message (`Failed to query bucket: NoSuchBucket("x")`), as in the reference server.
#[derive(Clone, PartialEq)]
pub enum DataSourceError {
    /// The bucket does not exist.
    NoSuchBucket(String),
    /// Any other storage failure, described.
    Other(String),
    /// A storage failure of a kind the client is told (the server's answer carries it as
    /// its `reason`); its message renders as [`DataSourceError::Other`]'s, so the text
    /// clients see is the reference's.
    Trouble(StorageTrouble, String),
}

/// A storage failure a client can act on, kept through a query's error up to the HTTP
/// answer: a damaged file (salvaged while the server runs), a full disk, or a database
/// that cannot take requests for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageTrouble {
    /// The database file is damaged where the query read.
    Damaged,
    /// The disk (or quota) is full.
    DiskFull,
    /// The database cannot serve for now (being replaced, its worker busy recovering).
    Unavailable,
}

impl DataSourceError {
    /// The kind of storage failure, when it is one a client is told.
    pub fn trouble(&self) -> Option<StorageTrouble> {
        match self {
            DataSourceError::Trouble(trouble, _) => Some(*trouble),
            DataSourceError::NoSuchBucket(_) | DataSourceError::Other(_) => None,
        }
    }
}

impl fmt::Debug for DataSourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataSourceError::NoSuchBucket(id) => f.debug_tuple("NoSuchBucket").field(id).finish(),
            DataSourceError::Other(text) | DataSourceError::Trouble(_, text) => {
                f.debug_tuple("Other").field(text).finish()
            }
        }
    }
}

impl fmt::Display for DataSourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for DataSourceError {}

/// How many rows a [`MemoryDataSource`] hands over per part: as many as the datastore reads
/// in one step, so the engine meets parts of the same size as in the server.
const PART_ROWS: usize = 4_000;

/// An event of a [`MemoryDataSource`], stored as the datastore stores it: nanosecond
/// bounds and the data's stored text.
#[derive(Debug, Clone)]
struct MemoryRow {
    id: i64,
    start: i64,
    end: i64,
    text: Box<str>,
}

/// One bucket of a [`MemoryDataSource`]: the bucket and its rows sorted by start.
#[derive(Debug, Clone)]
struct MemoryBucket {
    bucket: Bucket,
    /// Sorted ascending by start.
    rows: Vec<MemoryRow>,
    /// The longest event (ns), to bound the search for overlapping rows.
    max_duration: i64,
}

/// A [`DataSource`] holding everything in memory.
///
/// Exists so the query engine can be tested and benchmarked without a database. It keeps
/// events as the datastore does (nanosecond bounds, the data as its stored text, an id for
/// each) and hands them over as the datastore does (the same overlap, clip and order, in
/// parts of the same size), so every engine test runs the code the server runs: the
/// interning of [`TextRows`].
#[derive(Debug, Clone, Default)]
pub struct MemoryDataSource {
    buckets: HashMap<String, MemoryBucket>,
}

impl MemoryDataSource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a bucket with its events; the bucket's `id` names it. Events
    /// without an id get one after the largest given, as the datastore gives them.
    pub fn insert_bucket(&mut self, bucket: Bucket, events: Vec<Event>) {
        let mut next = events.iter().filter_map(|e| e.id).max().unwrap_or(0);
        let mut rows: Vec<MemoryRow> = events
            .iter()
            .map(|e| MemoryRow {
                id: e.id.unwrap_or_else(|| {
                    next = next.saturating_add(1);
                    next
                }),
                start: e.start_ns(),
                end: e.end_ns(),
                text: data_to_text(&e.data).into(),
            })
            .collect();
        rows.sort_by_key(|r| r.start);
        let max_duration = rows
            .iter()
            .map(|r| r.end.saturating_sub(r.start))
            .max()
            .unwrap_or(0)
            .max(0);
        self.buckets.insert(
            bucket.id.clone(),
            MemoryBucket {
                bucket,
                rows,
                max_duration,
            },
        );
    }

    /// Convenience for tests: adds a bucket built from an id, type and hostname.
    pub fn add_bucket(&mut self, id: &str, bucket_type: &str, hostname: &str, events: Vec<Event>) {
        let bucket = Bucket::new(id, bucket_type, "aw-query-test", hostname);
        self.insert_bucket(bucket, events);
    }
}

impl DataSource for MemoryDataSource {
    fn query_bucket_rows(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> RowChunks<'_> {
        let Some(b) = self.buckets.get(bucket_id) else {
            let missing = DataSourceError::NoSuchBucket(bucket_id.to_string());
            return Box::new(std::iter::once(Err(missing)));
        };
        let (lo, hi) = (to_ns_saturating(&start), to_ns_saturating(&end));
        // Rows starting before `lo - max_duration` cannot reach `lo`.
        let from = b
            .rows
            .partition_point(|r| r.start < lo.saturating_sub(b.max_duration));
        let to = b.rows.partition_point(|r| r.start <= hi).max(from);
        let mut hits: Vec<&MemoryRow> = b
            .rows
            .get(from..to)
            .unwrap_or(&[])
            .iter()
            .filter(|r| r.end >= lo)
            .collect();
        // The datastore's order: newest first, then shorter first, then by id.
        hits.sort_by_key(|r| (std::cmp::Reverse(r.start), r.end, r.id));
        let parts: Vec<Result<TextRows, DataSourceError>> = hits
            .chunks(PART_ROWS)
            .map(|chunk| {
                let mut part = TextRows::default();
                for r in chunk {
                    part.push(r.id, r.start, r.end, r.text.as_bytes());
                }
                part.clip(lo, hi);
                Ok(part)
            })
            .collect();
        Box::new(parts.into_iter())
    }

    fn buckets(&self) -> Result<HashMap<String, Bucket>, DataSourceError> {
        Ok(self
            .buckets
            .iter()
            .map(|(k, v)| (k.clone(), v.bucket.clone()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};
    use serde_json::Map;

    fn ev(s: i64, d: i64) -> Event {
        Event::new(
            Utc.timestamp_opt(s, 0).unwrap(),
            Duration::seconds(d),
            Map::new(),
        )
    }

    #[test]
    fn clips_touches_and_orders_newest_first() {
        let mut ds = MemoryDataSource::new();
        ds.add_bucket(
            "b",
            "t",
            "h",
            vec![ev(0, 10), ev(20, 5), ev(30, 1), ev(40, 1)],
        );
        let at = |s| Utc.timestamp_opt(s, 0).unwrap();
        assert_eq!(
            rows(&ds, "b", at(10), at(30)),
            vec![(30, 0), (20, 5), (10, 0)]
        );
        let missing: Vec<_> = ds.query_bucket_rows("nob", at(0), at(1)).collect();
        assert_eq!(
            missing,
            vec![Err(DataSourceError::NoSuchBucket("nob".into()))]
        );
    }

    /// The rows read, as (start, duration) in seconds, with the parts' sizes.
    fn rows_and_parts(
        ds: &MemoryDataSource,
        id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> (Vec<(i64, i64)>, Vec<usize>) {
        let mut out = Vec::new();
        let mut sizes = Vec::new();
        for part in ds.query_bucket_rows(id, start, end) {
            let part = part.unwrap();
            sizes.push(part.len());
            for (row, _) in part.rows() {
                out.push((
                    row.start / 1_000_000_000,
                    (row.end - row.start) / 1_000_000_000,
                ));
            }
        }
        (out, sizes)
    }

    fn rows(
        ds: &MemoryDataSource,
        id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Vec<(i64, i64)> {
        rows_and_parts(ds, id, start, end).0
    }

    #[test]
    fn a_long_read_comes_in_parts_of_the_datastores_size_with_nothing_lost() {
        let mut ds = MemoryDataSource::new();
        let n = 2 * PART_ROWS as i64 + 5;
        ds.add_bucket("b", "t", "h", (0..n).map(|i| ev(i, 1)).collect());
        let at = |s| Utc.timestamp_opt(s, 0).unwrap();
        let (got, sizes) = rows_and_parts(&ds, "b", at(0), at(n));
        assert_eq!(sizes, vec![PART_ROWS, PART_ROWS, 5]);
        assert_eq!(got.len() as i64, n);
        assert_eq!(got.first(), Some(&(n - 1, 1)));
        assert_eq!(got.last(), Some(&(0, 1)));
    }
}
