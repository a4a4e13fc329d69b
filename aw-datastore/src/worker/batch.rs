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
//! request that failed (see `worker/group_commit.rs`): only that request gets an error. Replaying rows
//! instead of requests makes the replay exact: ids, merges and replaced events come out as
//! they were answered, whatever the caches held.
//!
//! The record costs one copy of each written event's data until the commit; the commit
//! policy bounds it (see [`Batch::bytes`]).
//!
//! The batch also owns the journal (`file/journal.rs`): a request's changes are
//! *sealed* ([`Batch::seal`]), appended there as one record, before its answer goes out, so
//! they survive the process. Changes left unsealed at the end of a worker's turn belong to
//! a request that failed (or whose seal failed): the worker undoes them
//! (`GroupCommit::check`), so a failed request, however many rows it had written, leaves
//! none.

use rusqlite::Connection;

use crate::error::{DatastoreError, Result};
use crate::file::Journal;
use crate::store::change::{Change, Changes};

/// The changes of the open transaction, and what the commit policy needs to know of them.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// The changes, recorded by the store's writes.
    changes: Changes,
    /// How many of `changes` are sealed: acknowledged, and in the journal.
    sealed: usize,
    /// Where sealed changes go (`None`: a store without one, in unit tests).
    journal: Option<Journal>,
    /// Event writes counted towards the commit trigger (an import's are not: it commits
    /// when it is done or when the batch grows too large, not every 100 events).
    counted_events: usize,
    /// A change that wants to be durable at once (bucket create/delete, an import's end).
    commit_now: bool,
}

impl Batch {
    /// A batch whose sealed changes go to `journal`, starting with `held`: acknowledged
    /// changes already in it that are not committed yet (`file/recovery.rs`).
    pub(crate) fn with_journal(journal: Journal, held: Vec<Change>) -> Batch {
        let mut batch = Batch {
            journal: Some(journal),
            ..Batch::default()
        };
        batch.changes.append(held);
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
            let appended = journal.append(&self.changes.as_slice()[self.sealed..]);
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

    /// The journal's bytes that hold records (0 without one): for the storage report.
    pub(crate) fn journal_used(&self) -> u64 {
        self.journal.as_ref().map_or(0, Journal::used)
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

    /// Where the store's writes record the changes they make.
    pub(crate) fn changes(&mut self) -> &mut Changes {
        &mut self.changes
    }

    /// A number for a rewrite that starts now, unique among the rewrites in the journal
    /// (the number of its last record: a rewrite that appends anything moves it on).
    pub(crate) fn rewrite_number(&self) -> u64 {
        self.journal.as_ref().map_or(0, Journal::last)
    }

    /// Takes out the changes made since the last seal, after appending them to the journal
    /// as a provisional record of rewrite `rewrite` (`file/journal.rs`): a rewrite that
    /// runs in steps keeps its own until it is done (`worker/job.rs`), so that the requests
    /// answered between its steps seal only theirs, and its end need not write them all
    /// at once. Its rows stay in the open transaction meanwhile. When the append fails,
    /// nothing is taken.
    pub(crate) fn take_provisional(&mut self, rewrite: u64) -> Result<Vec<Change>> {
        if self.sealed == self.changes.len() {
            return Ok(Vec::new());
        }
        if let Some(journal) = &mut self.journal {
            let unsealed = &self.changes.as_slice()[self.sealed..];
            let appended = journal.append_provisional(rewrite, unsealed);
            appended.map_err(|e| journal_error(journal, &e))?;
        }
        Ok(self.changes.split_off(self.sealed))
    }

    /// Puts back what [`Batch::take_provisional`] took, after everything recorded since:
    /// to be sealed by [`Batch::seal_rewrite`] with the rewrite's answer, or undone with it
    /// (`GroupCommit::check`). One move of the list, not a push per change: a deletion of
    /// all history puts back hundreds of thousands at once, between two requests.
    pub(crate) fn put_back(&mut self, changes: Vec<Change>) {
        self.changes.append(changes);
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
        self.changes.bytes()
    }

    /// Whether a change asked for a commit.
    pub(crate) fn commit_requested(&self) -> bool {
        self.commit_now
    }

    /// Forgets the changes after `mark` (those of a request whose transaction was rolled
    /// back: it failed, so they are not replayed).
    pub(crate) fn truncate(&mut self, mark: usize) {
        self.changes.split_off(mark);
        self.sealed = self.sealed.min(self.changes.len());
    }

    /// Makes every recorded change again, in order, on `conn` (in a transaction the caller
    /// began). Stops at the first failure.
    pub(crate) fn replay(&self, conn: &Connection) -> rusqlite::Result<()> {
        self.changes.replay(conn)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::store::schema::migrate(&mut conn, crate::file::create_marker).unwrap();
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
            batch.changes().record(c);
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
        batch.changes().record(Change::DeleteEvent {
            id: 1,
            bucketrow: 1,
        });
        let mark = batch.len();
        let size = batch.bytes();
        batch.changes().record(Change::SetKeyValue {
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
