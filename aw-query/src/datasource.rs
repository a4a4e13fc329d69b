//! Where the query functions `query_bucket`, `query_bucket_names` and `find_bucket` get
//! their data, plus an in-memory implementation for tests, benchmarks and tools.

use std::collections::HashMap;
use std::fmt;

use aw_models::{Bucket, Event, TextRows};
use chrono::{DateTime, Duration, Utc};

/// The storage the interpreter reads buckets and events from.
///
/// The server implements this over its database; keeping it a trait lets the query engine be
/// tested and benchmarked without one. It must be `Send + Sync` because several time periods
/// of one query are evaluated in parallel threads sharing the same source.
pub trait DataSource: Send + Sync {
    /// Events of the bucket overlapping or touching [start, end], clipped to it, newest first.
    fn query_bucket(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<Event>, DataSourceError>;

    /// All buckets (id -> Bucket), for find_bucket and query_bucket_names.
    fn buckets(&self) -> Result<HashMap<String, Bucket>, DataSourceError>;

    /// The events of [`DataSource::query_bucket`] as rows whose data is still JSON text, for
    /// sources that store text: the engine then parses each distinct text once instead of
    /// every event's data (a year of window events repeats a few thousand texts hundreds of
    /// thousands of times). The rows may come in parts,
    /// in order, as the source reads them, so the engine works on the first while the source
    /// reads the rest; an error ends them.
    /// `None`: not offered, use `query_bucket`.
    fn query_bucket_rows(
        &self,
        _bucket_id: &str,
        _start: DateTime<Utc>,
        _end: DateTime<Utc>,
    ) -> Option<RowChunks<'_>> {
        None
    }
}

/// The rows of [`DataSource::query_bucket_rows`], a part at a time, with their data texts
/// (see [`TextRows`]).
pub type RowChunks<'a> = Box<dyn Iterator<Item = Result<TextRows, DataSourceError>> + 'a>;

/// Why a [`DataSource`] could not answer. Its `Debug` rendering is part of the query error
/// message (`Failed to query bucket: NoSuchBucket("x")`), as in the reference server.
#[derive(Debug, Clone, PartialEq)]
pub enum DataSourceError {
    /// The bucket does not exist.
    NoSuchBucket(String),
    /// Any other storage failure, described.
    Other(String),
}

impl fmt::Display for DataSourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for DataSourceError {}

/// One bucket of a [`MemoryDataSource`]: the bucket and its events sorted by start.
#[derive(Debug, Clone)]
struct MemoryBucket {
    bucket: Bucket,
    /// Sorted ascending by timestamp.
    events: Vec<Event>,
    /// The longest event duration, to bound the search for overlapping events.
    max_duration: Duration,
}

/// A [`DataSource`] holding everything in memory.
///
/// Exists so the query engine can be tested and benchmarked without a database; it
/// implements the same overlap/clip/order contract the server's storage does.
#[derive(Debug, Clone, Default)]
pub struct MemoryDataSource {
    buckets: HashMap<String, MemoryBucket>,
}

impl MemoryDataSource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a bucket with its events; the bucket's `id` names it.
    pub fn insert_bucket(&mut self, bucket: Bucket, mut events: Vec<Event>) {
        events.sort_by_key(|e| e.timestamp);
        let max_duration = events
            .iter()
            .map(|e| e.duration)
            .max()
            .unwrap_or_else(Duration::zero)
            .max(Duration::zero());
        self.buckets.insert(
            bucket.id.clone(),
            MemoryBucket {
                bucket,
                events,
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
    fn query_bucket(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<Event>, DataSourceError> {
        let b = self
            .buckets
            .get(bucket_id)
            .ok_or_else(|| DataSourceError::NoSuchBucket(bucket_id.to_string()))?;
        // Events starting before `start - max_duration` cannot reach `start`.
        let lower = start
            .checked_sub_signed(b.max_duration)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let from = b.events.partition_point(|e| e.timestamp < lower);
        let to = b.events.partition_point(|e| e.timestamp <= end);
        let mut out: Vec<Event> = b
            .events
            .get(from..to.max(from))
            .unwrap_or(&[])
            .iter()
            .filter(|e| e.calculate_endtime() >= start)
            .map(|e| {
                let s = e.timestamp.max(start);
                let t = e.calculate_endtime().min(end);
                Event {
                    id: e.id,
                    timestamp: s,
                    duration: t - s,
                    data: e.data.clone(),
                }
            })
            .collect();
        out.reverse();
        Ok(out)
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
    use chrono::TimeZone;
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
        let r = ds.query_bucket("b", at(10), at(30)).unwrap();
        let got: Vec<(i64, i64)> = r
            .iter()
            .map(|e| (e.timestamp.timestamp(), e.duration.num_seconds()))
            .collect();
        assert_eq!(got, vec![(30, 0), (20, 5), (10, 0)]);
        assert_eq!(
            ds.query_bucket("nob", at(0), at(1)),
            Err(DataSourceError::NoSuchBucket("nob".into()))
        );
    }
}
