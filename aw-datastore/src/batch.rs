//! The writes of the open transaction, kept until they are committed.
//!
//! Writes are group-committed: a heartbeat is answered as soon as its row is written in the
//! open transaction, and the commit follows up to 15 s later. On some errors (a full disk,
//! an I/O error, out of memory, a busy file) SQLite rolls back the *whole* open
//! transaction, not just the failing statement; without a record of what the transaction
//! held, every write acknowledged since the last commit, of every bucket and client, would
//! be gone because one request failed.
//!
//! So every write the store makes is also recorded here as the row-level [`Change`] it
//! made (with the ids SQLite assigned). After a rollback the worker begins a new
//! transaction and applies the recorded changes again, in order, up to the start of the
//! request that failed (see `group_commit.rs`): only that request gets an error. Replaying rows
//! instead of requests makes the replay exact: ids, merges and replaced events come out as
//! they were answered, whatever the caches held.
//!
//! The record costs one copy of each written event's data until the commit; the commit
//! policy bounds it (see [`Batch::bytes`]).
//!
//! The batch also owns the journal (`lifecycle/journal.rs`): a request's changes are
//! *sealed* ([`Batch::seal`]), appended there as one record, before its answer goes out, so
//! they survive the process. Changes left unsealed at the end of a worker's turn belong to
//! a request that failed (or whose seal failed): the worker undoes them
//! (`GroupCommit::check`), so a failed request, however many rows it had written, leaves
//! none.

use rusqlite::{params, Connection};

use crate::error::{DatastoreError, Result};
use crate::lifecycle::Journal;

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

impl Change {
    /// Roughly how much memory the change holds (for the commit policy's size bound).
    fn size(&self) -> usize {
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

    /// Makes the change on `conn`, inside the caller's transaction, and returns the number
    /// of rows it changed. The store's writes and the replay both come here, so a replayed
    /// change is the very statement that was answered. An insert is first made by the store
    /// with [`NEW_ROW`] for its id (SQLite picks one); what is recorded and replayed is the
    /// same statement with the id it got.
    pub(crate) fn apply(&self, conn: &Connection) -> rusqlite::Result<usize> {
        let changed = match self {
            Change::CreateBucket { row, columns } => {
                let [name, type_, client, hostname, created, data] = &**columns;
                conn.prepare_cached(INSERT_BUCKET_SQL)?.execute(params![
                    row, name, type_, client, hostname, created, data
                ])?
            }
            Change::DeleteBucket { row } => {
                conn.prepare_cached("DELETE FROM events WHERE bucketrow = ?1")?
                    .execute([row])?
                    + conn
                        .prepare_cached("DELETE FROM buckets WHERE id = ?1")?
                        .execute([row])?
            }
            Change::RenameBucket {
                row,
                name,
                hostname,
            } => conn
                .prepare_cached("UPDATE buckets SET name = ?2, hostname = ?3 WHERE id = ?1")?
                .execute(params![row, name, hostname])?,
            // The events `into` does not hold move; the bucket goes with the rest.
            Change::MergeBuckets { from, into } => {
                conn.prepare_cached(MOVE_NEW_EVENTS_SQL)?
                    .execute(params![from, into])?
                    + Change::DeleteBucket { row: *from }.apply(conn)?
            }
            Change::MoveEvent { id, bucketrow, into } => conn
                .prepare_cached("UPDATE events SET bucketrow = ?3 WHERE bucketrow = ?1 AND id = ?2")?
                .execute(params![bucketrow, id, into])?,
            Change::InsertEvent {
                id,
                bucketrow,
                start,
                end,
                data,
            } => {
                conn.prepare_cached(INSERT_EVENT_SQL)?
                    .execute(params![id, bucketrow, start, end, data])?
            }
            Change::ReplaceEvent {
                id,
                start,
                end,
                data,
            } => {
                conn.prepare_cached(
                    "UPDATE events SET starttime = ?1, endtime = ?2, data = ?3 WHERE id = ?4",
                )?
                .execute(params![start, end, data, id])?
            }
            Change::RedactEvent {
                id,
                bucketrow,
                texts,
            } => {
                let [judged, left] = &**texts;
                conn.prepare_cached(
                    "UPDATE events SET data = ?1 WHERE bucketrow = ?2 AND id = ?3 AND data = ?4",
                )?
                .execute(params![left, bucketrow, id, judged])?
            }
            Change::ResizeEvent {
                id,
                bucketrow,
                start,
                end,
            } => conn
                .prepare_cached(
                    "UPDATE events SET starttime = ?1, endtime = ?2 WHERE bucketrow = ?3 AND id = ?4",
                )?
                .execute(params![start, end, bucketrow, id])?,
            Change::DeleteEvent { id, bucketrow } => conn
                .prepare_cached("DELETE FROM events WHERE bucketrow = ?1 AND id = ?2")?
                .execute(params![bucketrow, id])?,
            Change::SetKeyValue {
                key,
                value,
                modified,
            } => {
                conn.prepare_cached(
                    "INSERT OR REPLACE INTO key_value (key, value, last_modified)
                     VALUES (?1, ?2, ?3)",
                )?
                .execute(params![key, value, modified])?
            }
            Change::DeleteKeyValue { key } => {
                conn.prepare_cached("DELETE FROM key_value WHERE key = ?1")?
                    .execute([key])?
            }
        };
        Ok(changed)
    }
}

/// The changes of the open transaction, and what the commit policy needs to know of them.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    changes: Vec<Change>,
    /// How many of `changes` are sealed: acknowledged, and in the journal.
    sealed: usize,
    /// Where sealed changes go (`None`: a store without one, in unit tests).
    journal: Option<Journal>,
    /// Event writes counted towards the commit trigger (an import's are not: it commits
    /// when it is done or when the batch grows too large, not every 100 events).
    counted_events: usize,
    /// The sum of [`Change::size`].
    bytes: usize,
    /// A change that wants to be durable at once (bucket create/delete, an import's end).
    commit_now: bool,
}

impl Batch {
    /// A batch whose sealed changes go to `journal`, starting with `held`: acknowledged
    /// changes already in it that are not committed yet (`lifecycle/recovery.rs`).
    pub(crate) fn with_journal(journal: Journal, held: Vec<Change>) -> Batch {
        let mut batch = Batch {
            journal: Some(journal),
            ..Batch::default()
        };
        for change in held {
            batch.record(change);
        }
        batch.sealed = batch.changes.len();
        batch.commit_now = !batch.changes.is_empty();
        batch
    }

    /// Appends the changes made since the last seal to the journal as one record: from now
    /// on they survive the process. Called before a write's answer goes out. When it
    /// fails, the answer must be an error (the worker then undoes the changes).
    pub(crate) fn seal(&mut self) -> Result<()> {
        if self.sealed == self.changes.len() {
            return Ok(());
        }
        if let Some(journal) = &mut self.journal {
            let appended = journal.append(&self.changes[self.sealed..]);
            appended.map_err(|e| journal_error(journal, &e))?;
        }
        self.sealed = self.changes.len();
        Ok(())
    }

    /// `result` when the changes it made are sealed; the seal's error otherwise.
    pub(crate) fn sealed_result<T>(&mut self, result: Result<T>) -> Result<T> {
        let value = result?;
        self.seal()?;
        Ok(value)
    }

    /// How many changes are sealed: a failed request's changes start here.
    pub(crate) fn sealed(&self) -> usize {
        self.sealed
    }

    /// The journal number a commit must store with this batch (see `Journal::unstored`):
    /// `Some` whenever records were appended since the last commit, even if the batch is
    /// empty.
    pub(crate) fn journal_unstored(&self) -> Option<u64> {
        self.journal.as_ref().and_then(Journal::unstored)
    }

    /// The journal (for the log: where held writes are).
    pub(crate) fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// Zeroes the journal's file past its header (see `Journal::wipe`); only while the
    /// batch is empty (nothing acknowledged waits in the journal).
    pub(crate) fn wipe_journal(&mut self) -> Result<()> {
        match (&mut self.journal, self.changes.is_empty()) {
            (Some(journal), true) => journal
                .wipe()
                .map_err(|e| DatastoreError::io("wipe the journal", journal.path(), &e)),
            _ => Ok(()),
        }
    }

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
        self.changes.push(change);
    }

    /// A number for a rewrite that starts now, unique among the rewrites in the journal
    /// (the number of its last record: a rewrite that appends anything moves it on).
    pub(crate) fn rewrite_number(&self) -> u64 {
        self.journal.as_ref().map_or(0, Journal::last)
    }

    /// Takes out the changes made since the last seal, after appending them to the journal
    /// as a provisional record of rewrite `rewrite` (`lifecycle/journal.rs`): a rewrite that
    /// runs in steps keeps its own until it is done (`job.rs`), so that the requests
    /// answered between its steps seal only theirs, and its end need not write them all
    /// at once. Its rows stay in the open transaction meanwhile. When the append fails,
    /// nothing is taken.
    pub(crate) fn take_provisional(&mut self, rewrite: u64) -> Result<Vec<Change>> {
        if self.sealed == self.changes.len() {
            return Ok(Vec::new());
        }
        if let Some(journal) = &mut self.journal {
            let appended = journal.append_provisional(rewrite, &self.changes[self.sealed..]);
            appended.map_err(|e| journal_error(journal, &e))?;
        }
        let taken: Vec<Change> = self.changes.drain(self.sealed..).collect();
        for change in &taken {
            self.bytes -= change.size();
        }
        Ok(taken)
    }

    /// Puts back what [`Batch::take_provisional`] took, after everything recorded since:
    /// to be sealed by [`Batch::seal_rewrite`] with the rewrite's answer, or undone with it
    /// (`GroupCommit::check`). One move of the list, not a push per change: a deletion of
    /// all history puts back hundreds of thousands at once, between two requests.
    pub(crate) fn put_back(&mut self, mut changes: Vec<Change>) {
        self.bytes += changes.iter().map(Change::size).sum::<usize>();
        if self.changes.is_empty() {
            self.changes = changes;
        } else {
            self.changes.append(&mut changes);
        }
    }

    /// Seals the unsealed changes, all of them rewrite `rewrite`'s and in its provisional
    /// records already, by appending its done record.
    pub(crate) fn seal_rewrite(&mut self, rewrite: u64) -> Result<()> {
        if let Some(journal) = &mut self.journal {
            let appended = journal.append_done(rewrite);
            appended.map_err(|e| journal_error(journal, &e))?;
        }
        self.sealed = self.changes.len();
        Ok(())
    }

    /// Counts `n` event writes towards the commit trigger.
    pub(crate) fn count_events(&mut self, n: usize) {
        self.counted_events += n;
    }

    /// Asks for a commit after the current request.
    pub(crate) fn request_commit(&mut self) {
        self.commit_now = true;
    }

    /// Whether anything was written since the last commit.
    pub(crate) fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The number of changes: a mark to [`Batch::truncate`] back to.
    pub(crate) fn len(&self) -> usize {
        self.changes.len()
    }

    /// Event writes counted since the last commit.
    pub(crate) fn counted_events(&self) -> usize {
        self.counted_events
    }

    /// Memory the recorded changes hold.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether a change asked for a commit.
    pub(crate) fn commit_requested(&self) -> bool {
        self.commit_now
    }

    /// Forgets the changes after `mark` (those of a request whose transaction was rolled
    /// back: it failed, so they are not replayed).
    pub(crate) fn truncate(&mut self, mark: usize) {
        for change in self.changes.drain(mark.min(self.changes.len())..) {
            self.bytes -= change.size();
        }
        self.sealed = self.sealed.min(self.changes.len());
    }

    /// Makes every recorded change again, in order, on `conn` (in a transaction the caller
    /// began). Stops at the first failure.
    pub(crate) fn replay(&self, conn: &Connection) -> rusqlite::Result<()> {
        apply_all(&self.changes, conn)
    }

    /// Forgets everything after a commit, which stored `stored` as the journal's number
    /// when it had to ([`Batch::journal_unstored`]); the journal is then emptied.
    pub(crate) fn clear(&mut self, stored: Option<u64>) {
        let journal = self.journal.take();
        *self = Batch::default();
        self.journal = journal;
        if let (Some(journal), Some(stored)) = (&mut self.journal, stored) {
            if let Err(e) = journal.committed(stored) {
                // Harmless: its records are all committed, so none is applied again.
                log::warn!("Cannot empty {}: {e}", journal.path().display());
            }
        }
    }
}

/// What a failed append to `journal` means for the write: refused, as a full disk when
/// the disk is full.
fn journal_error(journal: &Journal, e: &std::io::Error) -> DatastoreError {
    let message = format!(
        "the write could not be kept in the journal {} ({e}); it was not stored",
        journal.path().display()
    );
    if e.kind() == std::io::ErrorKind::StorageFull {
        DatastoreError::DiskFull(crate::error::Failure::of_file(message, journal.path(), e))
    } else {
        DatastoreError::Unavailable(message)
    }
}

/// Makes `changes` in order on `conn`, inside the caller's transaction; stops at the first
/// failure.
fn apply_all(changes: &[Change], conn: &Connection) -> rusqlite::Result<()> {
    changes.iter().try_for_each(|c| c.apply(conn).map(drop))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        conn
    }

    fn dump(conn: &Connection) -> Vec<String> {
        let mut out = Vec::new();
        for sql in [
            "SELECT id || name || type || client || hostname || created || data FROM buckets",
            "SELECT id || ' ' || bucketrow || ' ' || starttime || ' ' || endtime || data FROM events",
            "SELECT key || value || last_modified FROM key_value",
        ] {
            let mut stmt = conn.prepare(sql).unwrap();
            let rows = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
            out.extend(rows.map(std::result::Result::unwrap));
        }
        out.sort();
        out
    }

    #[test]
    fn a_change_is_no_larger_than_an_event_insert() {
        // A batch of an import or a rewrite holds one per row.
        assert!(
            std::mem::size_of::<Change>() <= 64,
            "{}",
            std::mem::size_of::<Change>()
        );
    }

    #[test]
    fn replay_reproduces_every_kind_of_change() {
        let changes = vec![
            Change::CreateBucket {
                row: 3,
                columns: Box::new(
                    ["b", "t", "c", "h", "2020-01-01 00:00:00+00:00", "{}"].map(String::from),
                ),
            },
            Change::CreateBucket {
                row: 4,
                columns: Box::new(["gone", "t", "c", "h", "x", "{}"].map(String::from)),
            },
            Change::InsertEvent {
                id: 10,
                bucketrow: 3,
                start: 1,
                end: 2,
                data: "{}".into(),
            },
            Change::InsertEvent {
                id: 11,
                bucketrow: 3,
                start: 5,
                end: 6,
                data: r#"{"a":1}"#.into(),
            },
            Change::InsertEvent {
                id: 12,
                bucketrow: 4,
                start: 5,
                end: 6,
                data: "{}".into(),
            },
            Change::ResizeEvent {
                id: 10,
                bucketrow: 3,
                start: 1,
                end: 9,
            },
            Change::ReplaceEvent {
                id: 11,
                start: 7,
                end: 8,
                data: r#"{"a":2}"#.into(),
            },
            Change::MoveEvent {
                id: 12,
                bucketrow: 4,
                into: 3,
            },
            Change::DeleteBucket { row: 4 },
            Change::SetKeyValue {
                key: "k".into(),
                value: "1".into(),
                modified: 5,
            },
            Change::SetKeyValue {
                key: "gone".into(),
                value: "2".into(),
                modified: 5,
            },
            Change::DeleteKeyValue { key: "gone".into() },
            Change::InsertEvent {
                id: 13,
                bucketrow: 3,
                start: 0,
                end: 0,
                data: "{}".into(),
            },
            Change::DeleteEvent {
                id: 13,
                bucketrow: 3,
            },
        ];
        let mut batch = Batch::default();
        for c in changes {
            batch.record(c);
        }
        let conn = conn();
        batch.replay(&conn).unwrap();
        assert_eq!(
            dump(&conn),
            vec![
                "10 3 1 9{}",
                "11 3 7 8{\"a\":2}",
                "12 3 5 6{}",
                "3btch2020-01-01 00:00:00+00:00{}",
                "k15"
            ]
        );
        // Ids continue after the replayed ones, as they did before the rollback.
        conn.execute(
            "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (3, 0, 0, '{}')",
            [],
        )
        .unwrap();
        assert_eq!(conn.last_insert_rowid(), 14);
    }

    #[test]
    fn truncate_forgets_the_failed_request_and_its_size() {
        let mut batch = Batch::default();
        batch.record(Change::DeleteEvent {
            id: 1,
            bucketrow: 1,
        });
        let mark = batch.len();
        let size = batch.bytes();
        batch.record(Change::SetKeyValue {
            key: "k".into(),
            value: "x".repeat(1000),
            modified: 0,
        });
        assert!(batch.bytes() > size + 1000);
        batch.truncate(mark);
        assert_eq!((batch.len(), batch.bytes()), (1, size));
        batch.clear(None);
        assert!(batch.is_empty());
        assert_eq!(batch.bytes(), 0);
    }
}
