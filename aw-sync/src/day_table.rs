//! The table this crate adds to a device's sync file: one digest per bucket and day.
//!
//! Beside the reference's tables (which stay as they are, to the column: the reference's
//! aw-sync reads and writes the same folder), a file this crate publishes has
//! `aw_sync_day`, a row per bucket and day with events: the bucket's id, the day (days
//! since 1970-01-01 UTC, holding the events that start in it), the number of its events
//! and their digest (`aw_datastore::DayDigest`). A device that pulls the file compares the
//! digests with those it applied last and applies again only the days that differ: so
//! deletions, edits and additions of any age travel, at a cost that grows with what
//! changed. A file without the table (the reference's, an older version's) is pulled as
//! before: new events only.
//!
//! The file's event ids are the publishing server's own (`Datastore::mirror_day`), so an
//! event keeps its identity across edits, and a pulling device remembers the events its
//! user deleted by it.

/// The table's name.
pub(crate) const DAY_TABLE: &str = "aw_sync_day";

/// Its columns, as a reader checks them.
pub(crate) const DAY_COLUMNS: [&str; 4] = ["bucket", "day", "count", "digest"];

/// Creates it (in the working copy, never in a peer's file).
pub(crate) const CREATE_DAY_TABLE_SQL: &str = "CREATE TABLE IF NOT EXISTS aw_sync_day (
    bucket TEXT NOT NULL, day INTEGER NOT NULL, count INTEGER NOT NULL, digest TEXT NOT NULL,
    PRIMARY KEY (bucket, day)) WITHOUT ROWID";

/// Days of one bucket a pass reads from a peer's table at most (about 270 years); more
/// rows are a hostile file, and the bucket is pulled as the reference's would be.
pub(crate) const MAX_DAYS_PER_BUCKET: usize = 100_000;

/// Events of one day a pass applies at most; a larger day is refused and reported.
pub(crate) const MAX_EVENTS_PER_DAY: usize = 200_000;

/// Event data of one day a pass applies at most; a larger day is refused and reported.
pub(crate) const MAX_BYTES_PER_DAY: usize = 32 << 20;

/// Days of one peer a pass applies at most; the rest wait for the next pass (a device
/// that was offline for years converges over several passes, each one making progress).
pub(crate) const MAX_DAYS_PER_PASS: usize = 2000;
