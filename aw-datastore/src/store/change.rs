//! The row-level changes the store's writes make, each recorded as it is made.
//!
//! Every write of the store goes through [`Changes::apply`] or [`Changes::record`]: the
//! change is made on the connection and noted as the row it changed (with the id SQLite
//! gave it). The worker's batch (`worker/batch.rs`) keeps them until the commit, seals
//! them in the journal before a write is answered, and applies them again from here when
//! SQLite drops the transaction; recovery (`file/recovery.rs`) applies a journal's held
//! changes the same way. One statement per change, used by the write and by every replay,
//! so a replayed change is the very statement that was answered.

use rusqlite::{params, Connection};

/// One row-level write made in the open transaction.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Change {
    /// A bucket row was inserted.
    CreateBucket {
        /// The row id SQLite gave it.
        row: i64,
        /// `name`, `type`, `client`, `hostname`, `created`, `data`, as written (boxed: a
        /// batch holds hundreds of thousands of changes, mostly of events, which would
        /// otherwise each take this variant's size).
        columns: Box<[String; 6]>,
    },
    /// A bucket row and all its events were deleted.
    DeleteBucket {
        /// The bucket's row id.
        row: i64,
    },
    /// A bucket was renamed, or moved to another host.
    RenameBucket {
        /// The bucket's row id.
        row: i64,
        /// Its new id.
        name: String,
        /// Its new host.
        hostname: String,
    },
    /// Every event of one bucket moved into another, but those the other holds already
    /// (same start, end and data), which were deleted with the first bucket. Written by
    /// versions whose merges ran in one go (a merge now records a [`Change::DeleteEvent`] or
    /// [`Change::MoveEvent`] per event, `store/merge.rs`); still applied from their
    /// journals.
    MergeBuckets {
        /// The bucket merged away.
        from: i64,
        /// The bucket that takes its events.
        into: i64,
    },
    /// An event moved to another bucket (a step of a merge, `store/merge.rs`).
    MoveEvent {
        /// The event's id.
        id: i64,
        /// The bucket it was in (an id of another bucket is left alone).
        bucketrow: i64,
        /// The bucket it goes to.
        into: i64,
    },
    /// An event row was inserted.
    InsertEvent {
        /// The id it got.
        id: i64,
        /// Its bucket's row id.
        bucketrow: i64,
        /// Start and end in ns.
        start: i64,
        /// End in ns.
        end: i64,
        /// The data text as stored.
        data: String,
    },
    /// An event's start, end and data were replaced (insert with the id of an event).
    ReplaceEvent {
        /// The event's id.
        id: i64,
        /// New start in ns.
        start: i64,
        /// New end in ns.
        end: i64,
        /// New data text.
        data: String,
    },
    /// An event's data was redacted by the privacy rules applied to the past
    /// (`store/privacy_past.rs`): changed only if it still holds the text the rules judged.
    /// Such a run goes on in steps while heartbeats and edits are answered, and its changes
    /// count from its end (a replay applies them after the writes answered between its
    /// steps); a conditional change of the data alone commutes with those writes, where a
    /// whole row read at a step would put back an end a heartbeat moved since, or undo an
    /// edit.
    RedactEvent {
        /// The event's id.
        id: i64,
        /// Its bucket's row id.
        bucketrow: i64,
        /// The data text the rules judged, then the text they leave (boxed, as
        /// [`Change::CreateBucket`]'s columns).
        texts: Box<[String; 2]>,
    },
    /// An event's span changed (a heartbeat merged into it).
    ResizeEvent {
        /// The event's id.
        id: i64,
        /// Its bucket's row id (an id of another bucket is left alone).
        bucketrow: i64,
        /// New start in ns.
        start: i64,
        /// New end in ns.
        end: i64,
    },
    /// An event row was deleted.
    DeleteEvent {
        /// The event's id.
        id: i64,
        /// Its bucket's row id (an id of another bucket is left alone).
        bucketrow: i64,
    },
    /// A key-value row was inserted or replaced.
    SetKeyValue {
        /// The key.
        key: String,
        /// The JSON text.
        value: String,
        /// `last_modified` as written (unix seconds).
        modified: i64,
    },
    /// A key-value row was deleted.
    DeleteKeyValue {
        /// The key.
        key: String,
    },
}

/// The one statement that inserts an event: with [`NEW_ROW`] for `?1` SQLite picks the id
/// (a new event); with the id it got, the same event is replayed.
pub(crate) const INSERT_EVENT_SQL: &str =
    "INSERT INTO events (id, bucketrow, starttime, endtime, data) VALUES (?1, ?2, ?3, ?4, ?5)";

/// The events of bucket row `?1` that bucket row `?2` does not hold already (same start,
/// end and data; each looked for with one seek of the composite index).
macro_rules! not_held_by_other_bucket {
    () => {
        "bucketrow = ?1 AND NOT EXISTS (
             SELECT 1 FROM events AS held WHERE held.bucketrow = ?2
                AND held.starttime = events.starttime AND held.endtime = events.endtime
                AND held.data = events.data)"
    };
}

/// Moves the events of bucket row `?1` into bucket row `?2`, but those `?2` holds already.
pub(crate) const MOVE_NEW_EVENTS_SQL: &str = concat!(
    "UPDATE events SET bucketrow = ?2 WHERE ",
    not_held_by_other_bucket!()
);

/// The one statement that inserts a bucket, as [`INSERT_EVENT_SQL`] does an event.
pub(crate) const INSERT_BUCKET_SQL: &str =
    "INSERT INTO buckets (id, name, type, client, hostname, created, data) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// The id to insert a new row with: NULL, so that SQLite picks the next one.
pub(crate) const NEW_ROW: Option<i64> = None;

/// Deletes the events of bucket row `?1` (before the bucket itself).
const DELETE_EVENTS_OF_BUCKET_SQL: &str = "DELETE FROM events WHERE bucketrow = ?1";
/// Deletes bucket row `?1`.
const DELETE_BUCKET_SQL: &str = "DELETE FROM buckets WHERE id = ?1";
/// Gives bucket row `?1` the id `?2` and the host `?3`.
const RENAME_BUCKET_SQL: &str = "UPDATE buckets SET name = ?2, hostname = ?3 WHERE id = ?1";
/// Moves event `?2` of bucket row `?1` to bucket row `?3`.
const MOVE_EVENT_SQL: &str = "UPDATE events SET bucketrow = ?3 WHERE bucketrow = ?1 AND id = ?2";
/// Gives event `?4` the start `?1`, end `?2` and data `?3`.
const REPLACE_EVENT_SQL: &str =
    "UPDATE events SET starttime = ?1, endtime = ?2, data = ?3 WHERE id = ?4";
/// Gives event `?3` of bucket row `?2` the data `?1`, if it still holds `?4`.
const REDACT_EVENT_SQL: &str =
    "UPDATE events SET data = ?1 WHERE bucketrow = ?2 AND id = ?3 AND data = ?4";
/// Gives event `?4` of bucket row `?3` the start `?1` and end `?2`.
const RESIZE_EVENT_SQL: &str =
    "UPDATE events SET starttime = ?1, endtime = ?2 WHERE bucketrow = ?3 AND id = ?4";
/// Deletes event `?2` of bucket row `?1`.
const DELETE_EVENT_SQL: &str = "DELETE FROM events WHERE bucketrow = ?1 AND id = ?2";
/// Stores setting `?1` as `?2`, modified at `?3` (unix seconds).
const SET_KEY_VALUE_SQL: &str =
    "INSERT OR REPLACE INTO key_value (key, value, last_modified) VALUES (?1, ?2, ?3)";
/// Deletes setting `?1`.
const DELETE_KEY_VALUE_SQL: &str = "DELETE FROM key_value WHERE key = ?1";

impl Change {
    /// Roughly how much memory the change holds (for the commit policy's size bound).
    pub(crate) fn size(&self) -> usize {
        let text = match self {
            Change::CreateBucket { columns, .. } => columns.iter().map(String::len).sum(),
            Change::InsertEvent { data, .. } | Change::ReplaceEvent { data, .. } => data.len(),
            Change::SetKeyValue { key, value, .. } => key.len() + value.len(),
            Change::DeleteKeyValue { key } => key.len(),
            Change::RenameBucket { name, hostname, .. } => name.len() + hostname.len(),
            Change::RedactEvent { texts, .. } => texts.iter().map(String::len).sum(),
            Change::MergeBuckets { .. } | Change::MoveEvent { .. } => 0,
            Change::DeleteBucket { .. }
            | Change::ResizeEvent { .. }
            | Change::DeleteEvent { .. } => 0,
        };
        std::mem::size_of::<Change>() + text
    }

    /// The same change with the bucket rows and event ids it names passed through
    /// `bucket` and `event` (recovery: the ids the records name may be taken by then,
    /// `file/recovery.rs`). An insert's own id is the caller's to choose.
    pub(crate) fn with_ids(
        mut self,
        bucket: impl Fn(i64) -> i64,
        event: impl Fn(i64) -> i64,
    ) -> Change {
        match &mut self {
            Change::CreateBucket { row, .. }
            | Change::DeleteBucket { row }
            | Change::RenameBucket { row, .. } => *row = bucket(*row),
            Change::MergeBuckets { from, into } => {
                *from = bucket(*from);
                *into = bucket(*into);
            }
            Change::MoveEvent {
                id,
                bucketrow,
                into,
            } => {
                *id = event(*id);
                *bucketrow = bucket(*bucketrow);
                *into = bucket(*into);
            }
            Change::InsertEvent { bucketrow, .. } => *bucketrow = bucket(*bucketrow),
            Change::ReplaceEvent { id, .. } => *id = event(*id),
            Change::RedactEvent { id, bucketrow, .. }
            | Change::ResizeEvent { id, bucketrow, .. }
            | Change::DeleteEvent { id, bucketrow } => {
                *id = event(*id);
                *bucketrow = bucket(*bucketrow);
            }
            Change::SetKeyValue { .. } | Change::DeleteKeyValue { .. } => {}
        }
        self
    }

    /// Makes the change on `conn`, inside the caller's transaction, and returns the number
    /// of rows it changed. The store's writes and the replay both come here, so a replayed
    /// change is the very statement that was answered. An insert is first made by the store
    /// with [`NEW_ROW`] for its id (SQLite picks one); what is recorded and replayed is the
    /// same statement with the id it got.
    pub(crate) fn apply(&self, conn: &Connection) -> rusqlite::Result<usize> {
        let run =
            |sql: &str, values: &[&dyn rusqlite::ToSql]| conn.prepare_cached(sql)?.execute(values);
        match self {
            Change::CreateBucket { row, columns } => {
                let [name, type_, client, hostname, created, data] = &**columns;
                let values = params![row, name, type_, client, hostname, created, data];
                run(INSERT_BUCKET_SQL, values)
            }
            Change::DeleteBucket { row } => Ok(run(DELETE_EVENTS_OF_BUCKET_SQL, params![row])?
                + run(DELETE_BUCKET_SQL, params![row])?),
            Change::RenameBucket {
                row,
                name,
                hostname,
            } => run(RENAME_BUCKET_SQL, params![row, name, hostname]),
            // The events `into` does not hold move; the bucket goes with the rest.
            Change::MergeBuckets { from, into } => {
                Ok(run(MOVE_NEW_EVENTS_SQL, params![from, into])?
                    + Change::DeleteBucket { row: *from }.apply(conn)?)
            }
            Change::MoveEvent {
                id,
                bucketrow,
                into,
            } => run(MOVE_EVENT_SQL, params![bucketrow, id, into]),
            Change::InsertEvent {
                id,
                bucketrow,
                start,
                end,
                data,
            } => run(INSERT_EVENT_SQL, params![id, bucketrow, start, end, data]),
            Change::ReplaceEvent {
                id,
                start,
                end,
                data,
            } => run(REPLACE_EVENT_SQL, params![start, end, data, id]),
            Change::RedactEvent {
                id,
                bucketrow,
                texts,
            } => {
                let [judged, left] = &**texts;
                run(REDACT_EVENT_SQL, params![left, bucketrow, id, judged])
            }
            Change::ResizeEvent {
                id,
                bucketrow,
                start,
                end,
            } => run(RESIZE_EVENT_SQL, params![start, end, bucketrow, id]),
            Change::DeleteEvent { id, bucketrow } => run(DELETE_EVENT_SQL, params![bucketrow, id]),
            Change::SetKeyValue {
                key,
                value,
                modified,
            } => run(SET_KEY_VALUE_SQL, params![key, value, modified]),
            Change::DeleteKeyValue { key } => run(DELETE_KEY_VALUE_SQL, params![key]),
        }
    }
}

/// The changes made since the worker last took them, and the memory they hold.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    list: Vec<Change>,
    /// The sum of [`Change::size`].
    bytes: usize,
}

impl Changes {
    /// Makes `change` on `conn` and records it if it changed a row; returns the number of
    /// rows it changed.
    pub(crate) fn apply(&mut self, conn: &Connection, change: Change) -> rusqlite::Result<usize> {
        let changed = change.apply(conn)?;
        if changed > 0 {
            self.record(change);
        }
        Ok(changed)
    }

    /// Records a change that was just made.
    pub(crate) fn record(&mut self, change: Change) {
        self.bytes += change.size();
        self.list.push(change);
    }

    /// The changes, in the order they were made.
    pub(crate) fn as_slice(&self) -> &[Change] {
        &self.list
    }

    /// How many there are.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Memory the recorded changes hold.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Takes out the changes from `mark` on.
    pub(crate) fn split_off(&mut self, mark: usize) -> Vec<Change> {
        let taken: Vec<Change> = self.list.drain(mark.min(self.list.len())..).collect();
        self.bytes -= taken.iter().map(Change::size).sum::<usize>();
        taken
    }

    /// Appends `changes` after the ones recorded (one move of the list when there are
    /// none yet: a deletion of all history puts back hundreds of thousands at once).
    pub(crate) fn append(&mut self, mut changes: Vec<Change>) {
        self.bytes += changes.iter().map(Change::size).sum::<usize>();
        if self.list.is_empty() {
            self.list = changes;
        } else {
            self.list.append(&mut changes);
        }
    }

    /// Makes every recorded change again, in order, on `conn` (in a transaction the caller
    /// began). Stops at the first failure.
    pub(crate) fn replay(&self, conn: &Connection) -> rusqlite::Result<()> {
        apply_all(&self.list, conn)
    }
}

/// Makes `changes` in order on `conn`, inside the caller's transaction; stops at the first
/// failure.
pub(crate) fn apply_all(changes: &[Change], conn: &Connection) -> rusqlite::Result<()> {
    changes.iter().try_for_each(|c| c.apply(conn).map(drop))
}
