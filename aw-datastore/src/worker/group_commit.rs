//! The worker's one open transaction: where it begins and commits, and how acknowledged
//! writes survive SQLite dropping it.
//!
//! SQLite rolls back the whole open transaction on some errors (a full disk, an I/O error,
//! out of memory, a busy file), and a failed `COMMIT` leaves nothing written. Either way the
//! writes the batch holds were already answered as stored. So:
//! * after every request or job step, [`GroupCommit::check`] notices a transaction that
//!   SQLite dropped, forgets the changes of the step that failed (its caller gets its
//!   error), begins a new transaction and applies the batch again (see `worker/batch.rs`);
//! * a failed commit applies the whole batch again and retries after [`RETRY_DELAY`];
//! * when even that fails (the disk is still full), the batch stays in memory, the store's
//!   caches show what is on disk, writes are refused with
//!   [`DatastoreError::Unavailable`] (a write acknowledged now could depend on rows that
//!   are not on disk), and the replay is tried again before the next write and at every
//!   commit. Nothing acknowledged is dropped while the process lives.

use std::time::{Duration, Instant};

use crate::error::{DatastoreError, Result};
use crate::store::Store;
use crate::worker::batch::Batch;
use crate::worker::reply::Reply;

/// How long after a failed commit or replay the worker waits before trying again, so a disk
/// that stays full costs one attempt per interval, not one per request.
pub(crate) const RETRY_DELAY: Duration = Duration::from_secs(1);

/// While commits fail for a full disk, acknowledged writes are held in memory up to this
/// much; past it new writes are refused ([`DatastoreError::DiskFull`]) so that the clients
/// keep them and send them again, and the server's memory stays bounded.
pub(crate) const MAX_HELD_BYTES: usize = 16 << 20;

/// The open transaction: its state, and the writes it holds.
pub(crate) struct GroupCommit {
    /// What was written since the last commit: the commit policy reads it, and it is
    /// applied again if SQLite rolls the transaction back (see `worker/batch.rs`). The store's
    /// write operations record into it (`Store::heartbeat(tx.writes(), …)`); only the
    /// transaction clears, truncates or replays it.
    batch: Batch,
    /// When the oldest uncommitted write could have been made (the commit interval counts
    /// from here; a restored transaction keeps its original age).
    started: Instant,
    /// Whether a transaction is open. When it is not, `unsaved` says why and writes are
    /// refused ([`GroupCommit::writable`]) until one could be begun: a write is never
    /// made in autocommit mode, where it would be durable before its journal record
    /// counts, and the next start would apply it a second time.
    open: bool,
    /// The batch holds acknowledged writes that are not in any transaction: SQLite dropped
    /// it and applying them again failed.
    unsaved: Option<String>,
    /// The last failure was a full disk (writes are then refused as
    /// [`DatastoreError::DiskFull`], which clients retry).
    disk_full: bool,
    /// No commit or replay is tried before this instant (after a failure).
    retry_at: Option<Instant>,
    /// SQLite's count of rows this connection changed, when the open transaction began:
    /// unchanged, the transaction wrote nothing ([`GroupCommit::refresh`]).
    begun_changes: u64,
    /// How many transactions were begun: a rewrite that runs in steps (`worker/job.rs`) keeps
    /// its rows in one transaction, and a new number means they were committed or rolled
    /// back under it.
    generation: u64,
}

impl GroupCommit {
    /// Begins the first transaction (unit tests: no journal).
    #[cfg(test)]
    pub(crate) fn begin(store: &Store) -> GroupCommit {
        let mut tx = GroupCommit::unopened(Batch::default());
        tx.renew(store);
        tx
    }

    /// Begins the first transaction with `batch`: its journal, and the acknowledged changes
    /// recovery could not commit at open, applied again here (or as soon as they can be).
    pub(crate) fn begin_with(store: &mut Store, batch: Batch) -> GroupCommit {
        let held = !batch.is_empty();
        let mut tx = GroupCommit::unopened(batch);
        if held {
            // Begins the transaction itself.
            tx.carry_over(
                store,
                "the last run's acknowledged writes wait to be applied",
            );
        } else {
            tx.renew(store);
        }
        tx
    }

    /// The state before the first `BEGIN`.
    fn unopened(batch: Batch) -> GroupCommit {
        GroupCommit {
            batch,
            started: Instant::now(),
            open: false,
            unsaved: None,
            disk_full: false,
            retry_at: None,
            begun_changes: 0,
            generation: 0,
        }
    }

    fn try_begin(&mut self, store: &Store) -> Result<()> {
        self.generation += 1;
        match store.conn().execute_batch("BEGIN IMMEDIATE") {
            Ok(()) => {
                self.begun_changes = store.conn().total_changes();
                Ok(())
            }
            Err(e) => {
                log::error!("Failed to begin a transaction: {e}");
                Err(e.into())
            }
        }
    }

    /// The number of the open transaction (see `generation`), and whether one is open
    /// at all (after a failed `BEGIN` statements run in autocommit mode, each durable at
    /// once: no rewrite may run then).
    pub(crate) fn transaction(&self) -> Option<u64> {
        (self.open && self.unsaved.is_none()).then_some(self.generation)
    }

    /// The writes since the last commit.
    pub(crate) fn batch(&self) -> &Batch {
        &self.batch
    }

    /// Where a write operation of the store records its changes.
    pub(crate) fn writes(&mut self) -> &mut Batch {
        &mut self.batch
    }

    /// How long the oldest uncommitted write has waited.
    pub(crate) fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether a commit may be tried now (not within [`RETRY_DELAY`] of a failure).
    pub(crate) fn may_retry(&self) -> bool {
        self.retry_at.is_none_or(|t| Instant::now() >= t)
    }

    /// How long until a commit may be tried again after a failure (zero when it may now).
    pub(crate) fn retry_in(&self) -> Duration {
        self.retry_at.map_or(Duration::ZERO, |t| {
            t.saturating_duration_since(Instant::now())
        })
    }

    /// After a request or job step: if SQLite rolled the transaction back, or the step
    /// left changes it did not seal (it failed, and a failed request leaves no row), rolls
    /// back and applies the sealed changes again.
    pub(crate) fn check(&mut self, store: &mut Store) {
        let unsealed = self.batch.len() - self.batch.sealed();
        let dropped = self.open && store.conn().is_autocommit();
        if !dropped && (unsealed == 0 || !self.open) {
            return;
        }
        if !dropped {
            // Only a failed request's own rows are at stake: they go with the rollback.
            let _ = store.conn().execute_batch("ROLLBACK");
            log::debug!("Undoing the {unsealed} changes of a failed request");
        } else {
            log::error!(
                "SQLite rolled back the open transaction; applying its {} earlier changes again",
                self.batch.sealed()
            );
        }
        self.open = false;
        self.batch.truncate(self.batch.sealed());
        self.unsaved = Some("the transaction was rolled back".into());
        match self.restore(store) {
            Ok(()) if !dropped => {}
            Ok(()) => log::warn!("Every acknowledged write was applied again"),
            Err(e) => log::error!("Could not apply the acknowledged writes again yet: {e}"),
        }
    }

    /// `Ok` when writes may run: nothing acknowledged is waiting to be applied again (after
    /// trying once more, if the retry delay allows), and while commits fail for a full
    /// disk, less than [`MAX_HELD_BYTES`] is held.
    pub(crate) fn writable(&mut self, store: &mut Store) -> Result<()> {
        if self.unsaved.is_some() && self.may_retry() {
            let _ = self.restore(store);
        }
        if self.unsaved.is_none() && self.disk_full && self.batch.bytes() > MAX_HELD_BYTES {
            return Err(DatastoreError::DiskFull(
                format!(
                    "{} acknowledged changes ({} MB) wait for space and are kept in memory; new \
                 writes are refused until they are written",
                    self.batch.len(),
                    self.batch.bytes() >> 20
                )
                .into(),
            ));
        }
        match &self.unsaved {
            None => Ok(()),
            Some(reason) => {
                let message = format!(
                    "the database cannot be written now ({reason}); {} acknowledged changes \
                     are kept in memory and written as soon as it can",
                    self.batch.len()
                );
                Err(if self.disk_full {
                    DatastoreError::DiskFull(message.into())
                } else {
                    DatastoreError::Unavailable(message)
                })
            }
        }
    }

    /// After the store's file changed under the transaction (a salvage: `worker/live_salvage.rs`),
    /// or at start with held writes (`why`): begins a transaction and applies the whole
    /// batch again.
    pub(crate) fn carry_over(&mut self, store: &mut Store, why: &str) {
        self.open = false;
        self.unsaved = Some(why.to_string());
        if let Err(e) = self.restore(store) {
            log::error!("Could not apply the acknowledged writes yet ({why}): {e}");
        }
    }

    /// Rolls the open transaction back before the store's file is replaced (a salvage
    /// while serving, `live_salvage.rs`): the batch keeps the writes it acknowledged, and
    /// [`GroupCommit::carry_over`] applies them to the file that replaces it.
    pub(crate) fn roll_back_for_salvage(&mut self, store: &Store) {
        if !store.conn().is_autocommit() {
            let _ = store.conn().execute_batch("ROLLBACK");
        }
        self.open = false;
    }

    /// Commits the batch and begins the next transaction. On failure the batch is applied
    /// again in a new transaction and kept for the next commit.
    pub(crate) fn commit(&mut self, store: &mut Store) -> Result<()> {
        if self.unsaved.is_some() {
            self.restore(store)?;
        }
        // Stored whenever the journal moved, even with no change to commit (a dry run's
        // done record): its header may only name a number the database holds.
        let last = self.batch.journal_unstored();
        let touched = store.before_commit(self.journal_last());
        let stored = touched.and_then(|()| match last {
            Some(last) => crate::file::store_committed(store.conn(), last),
            None => Ok(()),
        });
        let injected = self
            .batch
            .journal()
            .is_some_and(|journal| journal.faults().commit_fails());
        let committed = stored.and_then(|()| {
            if injected {
                // As SQLite fails a commit on a full disk: all of it rolled back.
                let _ = store.conn().execute_batch("ROLLBACK");
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                    Some("a commit failure a test injected".into()),
                ));
            }
            store.conn().execute_batch("COMMIT")
        });
        match committed {
            Ok(()) => {
                if !self.batch.is_empty() {
                    log::trace!("Committed {} changes", self.batch.len());
                }
                if self.disk_full {
                    log::warn!(
                        "There is space again: {} held changes committed",
                        self.batch.len()
                    );
                    self.disk_full = false;
                }
                self.batch.clear(last);
                store.after_commit();
                self.renew(store);
                Ok(())
            }
            Err(e) => {
                log::error!("Failed to commit to the database: {e}; the writes are kept");
                let cause = crate::error::classify(e.sqlite_error_code(), (&e).into());
                store.note_error(&cause);
                if !store.conn().is_autocommit() {
                    let _ = store.conn().execute_batch("ROLLBACK");
                }
                self.open = false;
                self.unsaved = Some(format!("commit failed: {e}"));
                self.disk_full = matches!(cause, DatastoreError::DiskFull(_));
                self.retry_at = Some(Instant::now() + RETRY_DELAY);
                let _ = self.restore(store);
                let message =
                    format!("commit failed ({e}); the writes are kept and committed again later");
                Err(if self.disk_full {
                    DatastoreError::DiskFull(message.into())
                } else {
                    DatastoreError::Unavailable(message)
                })
            }
        }
    }

    /// The journal number of the last write (`None` without a journal).
    pub(crate) fn journal_last(&self) -> Option<u64> {
        self.batch.journal().map(|j| j.last())
    }

    /// Ends the open transaction and begins another when it wrote nothing and the WAL was
    /// copied whole since the last commit (`file/checkpointer.rs`): the new one's read then
    /// lets its first write restart the WAL from its beginning, so the WAL stays as short
    /// as what is written between two checkpoints. Not while a rewrite is in progress
    /// (`rewriting`, asked last: its rows may be in the transaction while the batch is
    /// empty).
    pub(crate) fn refresh(&mut self, store: &Store, rewriting: impl FnOnce() -> bool) {
        let idle = self.open
            && self.unsaved.is_none()
            && self.batch.is_empty()
            && store.conn().total_changes() == self.begun_changes
            && !rewriting();
        if idle && store.take_checkpoint_caught_up() && store.conn().execute_batch("COMMIT").is_ok()
        {
            self.renew(store);
        }
    }

    /// A scrub's first half (`Control::CopyWal`): commits, then has the checkpoint thread
    /// copy the WAL into the file and answer `reply` once it did.
    pub(crate) fn copy_wal(&mut self, store: &mut Store, reply: Reply<()>) {
        match self.commit(store) {
            Ok(()) => store.copy_wal_then(reply),
            Err(e) => drop(reply.send(Err(e))),
        }
    }

    /// Commits, then removes what the file's neighbours still hold of rows that were
    /// deleted or rewritten: the WAL is checkpointed into the database and truncated, and
    /// the journal zeroed. Another connection's read (a backup in progress) can keep frames
    /// in the WAL: they stay until the next checkpoint, and a warning says so.
    pub(crate) fn scrub(&mut self, store: &mut Store) -> Result<()> {
        self.commit(store)?;
        // The checkpoint runs outside a transaction: the empty one `commit` opened ends.
        if self.open && self.batch.is_empty() {
            store.conn().execute_batch("COMMIT")?;
            self.open = false;
        }
        // Alone: a checkpoint of the background's in progress would make this one fail.
        let held = store.hold_checkpoints();
        let busy: rusqlite::Result<i64> =
            store
                .conn()
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0));
        drop(held);
        self.renew(store);
        self.batch.wipe_journal()?;
        if busy? != 0 {
            log::warn!(
                "The WAL could not be emptied (a read holds it); it is at the next checkpoint"
            );
        }
        Ok(())
    }

    /// Begins the next transaction. When `BEGIN` fails (another program holds the write
    /// lock past the busy timeout), writes are refused until a later try succeeds.
    fn renew(&mut self, store: &Store) {
        self.started = Instant::now();
        self.retry_at = None;
        match self.try_begin(store) {
            Ok(()) => self.open = true,
            Err(e) => {
                self.open = false;
                self.unsaved = Some(format!("no transaction could be begun: {e}"));
                self.retry_at = Some(Instant::now() + RETRY_DELAY);
            }
        }
    }

    /// Begins a transaction and applies the whole batch again; the caches are rebuilt from
    /// the database either way, so reads never show what is not there.
    ///
    /// The restore counts only if the caches were rebuilt and the transaction is still
    /// open afterwards: on a full disk the rebuild itself can fail, and SQLite then rolls
    /// the transaction back again. Writes accepted after such a half restore would run in
    /// autocommit mode with ids taken from caches that no longer match the file, and the
    /// next replay would collide with them (a full-disk test found exactly that).
    fn restore(&mut self, store: &mut Store) -> Result<()> {
        let replayed = self.try_begin(store).and_then(|()| {
            self.batch.replay(store.conn()).map_err(|e| {
                let _ = store.conn().execute_batch("ROLLBACK");
                DatastoreError::from(e)
            })
        });
        let reloaded = store.reload();
        if let Err(e) = &reloaded {
            log::error!("Failed to reload the caches: {e}");
        }
        let result = replayed.and(reloaded).and_then(|()| {
            if store.conn().is_autocommit() {
                Err(DatastoreError::Unavailable(
                    "the transaction was rolled back again while the caches were rebuilt".into(),
                ))
            } else {
                Ok(())
            }
        });
        if result.is_err() && !store.conn().is_autocommit() {
            let _ = store.conn().execute_batch("ROLLBACK");
            if let Err(e) = store.reload() {
                log::error!("Failed to reload the caches: {e}");
            }
        }
        store.note(&result);
        match &result {
            Ok(()) => {
                self.open = true;
                self.unsaved = None;
            }
            Err(e) => {
                self.open = false;
                self.unsaved = Some(e.to_string());
                self.disk_full |= matches!(e, DatastoreError::DiskFull(_));
                self.retry_at = Some(Instant::now() + RETRY_DELAY);
            }
        }
        result
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rusqlite::Connection;

    /// A bucket with fixed fields.
    pub(crate) fn bucket(id: &str) -> aw_models::Bucket {
        aw_models::Bucket::new(id, "t", "c", "h")
    }

    /// A store on a new file in `dir`.
    pub(crate) fn store_in(dir: &tempfile::TempDir) -> Store {
        let mut conn = Connection::open(dir.path().join("sqlite.db")).unwrap();
        crate::store::schema::configure(&conn).unwrap();
        crate::store::schema::migrate(&mut conn, crate::file::create_marker).unwrap();
        crate::store::schema::ensure_own_tables(&conn).unwrap();
        Store::new(conn, Default::default()).unwrap()
    }

    /// SQLite drops the open transaction, and applying its writes again fails (a trigger
    /// stands in for a disk that is still full; it is gone afterwards, but no replay is
    /// tried again within `RETRY_DELAY`).
    pub(crate) fn unrecoverable_rollback(tx: &mut GroupCommit, store: &mut Store) {
        store.conn().execute_batch("ROLLBACK").unwrap();
        store
            .conn()
            .execute_batch(
                "CREATE TEMP TRIGGER refuse BEFORE INSERT ON buckets
                 BEGIN SELECT RAISE(ABORT, 'disk full'); END",
            )
            .unwrap();
        tx.check(store);
        store.conn().execute_batch("DROP TRIGGER refuse").unwrap();
    }

    /// When SQLite drops the transaction and the acknowledged writes cannot be applied
    /// again, writes are refused (nothing may take their ids) until a replay succeeds, and
    /// then everything acknowledged is there.
    #[test]
    fn writes_wait_until_the_acknowledged_ones_are_applied_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = store_in(&dir);
        let mut tx = GroupCommit::begin(&store);
        store
            .create_bucket(tx.writes().changes(), bucket("kept"), Vec::new())
            .unwrap();
        tx.writes().seal().unwrap();
        let mark = tx.batch().len();

        unrecoverable_rollback(&mut tx, &mut store);
        assert!(matches!(
            tx.writable(&mut store),
            Err(DatastoreError::Unavailable(_))
        ));
        assert_eq!(tx.batch().len(), mark, "the acknowledged write is kept");

        // After the retry delay the replay succeeds.
        tx.retry_at = None;
        tx.writable(&mut store).unwrap();
        tx.commit(&mut store).unwrap();
        let n: i64 = store
            .conn()
            .query_row(
                "SELECT COUNT(*) FROM buckets WHERE name = 'kept'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1);
    }

    /// Issue 44, case 6: when `BEGIN` fails (another program holds the write lock past the
    /// busy timeout), no write runs in autocommit mode, where it would be durable before
    /// its journal record counts and the next start would apply it a second time: writes
    /// are refused until a transaction could be begun.
    #[test]
    fn no_write_runs_outside_a_transaction_when_begin_fails() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = store_in(&dir);
        store.conn().busy_timeout(Duration::ZERO).unwrap();
        let mut tx = GroupCommit::begin(&store);
        store
            .create_bucket(tx.writes().changes(), bucket("kept"), Vec::new())
            .unwrap();
        tx.writes().seal().unwrap();
        // Another program takes the write lock between our commit and our next BEGIN.
        let other = Connection::open(dir.path().join("sqlite.db")).unwrap();
        store.conn().execute_batch("COMMIT").unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        tx.batch.clear(None);
        tx.renew(&store);
        assert_eq!(tx.transaction(), None);
        assert!(matches!(
            tx.writable(&mut store),
            Err(DatastoreError::Unavailable(_))
        ));
        other.execute_batch("COMMIT").unwrap();
        tx.retry_at = None;
        tx.writable(&mut store).unwrap();
        assert!(tx.transaction().is_some());
        assert!(
            !store.conn().is_autocommit(),
            "writes go into a transaction"
        );
    }
}
