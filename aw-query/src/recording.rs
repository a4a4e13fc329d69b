//! A [`DataSource`] wrapper that notes what an evaluation read, so that its result can be
//! cached with exactly what it depends on (see `cache/`).

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::datasource::{DataSource, DataSourceError, RowChunks};
use aw_models::timestamp::to_ns_saturating;
use aw_models::Bucket;

/// One read an evaluation made from its [`DataSource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Read {
    /// The events of `bucket` overlapping `[start, end]` (ns).
    Events {
        bucket: String,
        start: i64,
        end: i64,
    },
    /// The list of buckets (with their hostnames).
    BucketList,
}

/// A [`DataSource`] that notes every read it passes on, so a result can be stored with what
/// it depends on.
pub(crate) struct Recording<'a> {
    inner: &'a dyn DataSource,
    reads: Mutex<Vec<Read>>,
}

impl<'a> Recording<'a> {
    /// Records the reads made from `inner`.
    pub(crate) fn new(inner: &'a dyn DataSource) -> Recording<'a> {
        Recording {
            inner,
            reads: Mutex::new(Vec::new()),
        }
    }

    /// The reads made so far.
    pub(crate) fn into_reads(self) -> Vec<Read> {
        self.reads.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn note(&self, read: Read) {
        let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        if !reads.contains(&read) {
            reads.push(read);
        }
    }

    fn note_events(&self, bucket: &str, start: DateTime<Utc>, end: DateTime<Utc>) {
        self.note(Read::Events {
            bucket: bucket.to_string(),
            start: to_ns_saturating(&start),
            end: to_ns_saturating(&end),
        });
    }
}

impl DataSource for Recording<'_> {
    fn buckets(&self) -> Result<HashMap<String, Bucket>, DataSourceError> {
        self.note(Read::BucketList);
        self.inner.buckets()
    }

    fn query_bucket_rows(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> RowChunks<'_> {
        self.note_events(bucket_id, start, end);
        self.inner.query_bucket_rows(bucket_id, start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryDataSource;
    use chrono::TimeZone;

    #[test]
    fn notes_each_read_once_and_passes_it_on() {
        let mut ds = MemoryDataSource::new();
        ds.add_bucket("w", "t", "h", Vec::new());
        let at = |s| Utc.timestamp_opt(s, 0).unwrap();
        let rec = Recording::new(&ds);
        for _ in 0..2 {
            assert_eq!(rec.query_bucket_rows("w", at(1), at(2)).count(), 0);
            assert!(rec.buckets().unwrap().contains_key("w"));
        }
        assert!(rec
            .query_bucket_rows("nope", at(0), at(1))
            .any(|p| p.is_err()));
        // Far outside the ns range: saturated, still noted.
        let ancient = Utc.with_ymd_and_hms(1000, 1, 1, 0, 0, 0).unwrap();
        let _ = rec.query_bucket_rows("w", ancient, at(0));
        assert_eq!(
            rec.into_reads(),
            [
                Read::Events {
                    bucket: "w".into(),
                    start: 1_000_000_000,
                    end: 2_000_000_000
                },
                Read::BucketList,
                Read::Events {
                    bucket: "nope".into(),
                    start: 0,
                    end: 1_000_000_000
                },
                Read::Events {
                    bucket: "w".into(),
                    start: i64::MIN,
                    end: 0
                },
            ]
        );
    }
}
