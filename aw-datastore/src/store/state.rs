//! The store's state: the connection, and the caches that mirror the database (the
//! buckets with their counts and spans, the last heartbeats, the privacy rules), rebuilt
//! from disk by [`Store::reload`].

use aw_models::{Bucket, BucketMetadata};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;

use crate::error::{DatastoreError, Result};
use crate::store::created::created_from_text;
use crate::store::privacy::{PrivacyFilter, PRIVACY_FILTERS_KEY};
use crate::store::published::{BucketMap, BucketShared, Published};
use crate::store::schema::LONG_EVENT_NS;
use crate::store::write_listeners::{Extent, Touched};
use aw_models::raw_event::RawEvent;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The worker's state: the connection and the caches that mirror it.
pub(crate) struct Store {
    /// Copies the WAL into the database after commits, off the worker's turn
    /// (`file/checkpointer.rs`). First, so it is dropped (its connection closed) before
    /// `conn`, whose close is then the last and removes the WAL.
    checkpointer: Option<crate::file::checkpointer::Checkpointer>,
    /// The WAL's pages after the last commit (SQLite's WAL hook, set with the
    /// checkpointer).
    wal_pages: Arc<std::sync::atomic::AtomicU32>,
    pub(super) conn: Connection,
    /// Each bucket's fields, count and span, shared with readers (see `published.rs`).
    pub(super) buckets: HashMap<String, Arc<BucketShared>>,
    /// Where the bucket map is published for readers, and the listeners told of writes.
    pub(super) published: Arc<Published>,
    /// Last heartbeat event per bucket row: what the next heartbeat may merge into.
    pub(super) last_heartbeat: HashMap<i64, RawEvent>,
    /// Events a range deletion cut: a heartbeat never merges into one (`range_delete.rs`).
    pub(super) cut_events: std::collections::HashSet<i64>,
    pub(super) privacy: PrivacyFilter,
    /// Whether an operation of the worker's last turn met a damaged file ([`Store::note`]).
    pub(super) damage_met: bool,
    /// What the writes since the last commit changed, for the commit to keep
    /// (`touch_log.rs`); on the worker thread only.
    pub(super) touches: std::cell::RefCell<crate::store::touch_log::TouchLog>,
    /// SQLite's `data_version` at the last commit ([`Store::before_commit`]).
    pub(super) data_version: std::cell::Cell<Option<i64>>,
}

impl Store {
    /// Wraps an open, migrated connection and loads the caches.
    pub(crate) fn new(conn: Connection, published: Arc<Published>) -> Result<Store> {
        let version = conn.query_row("PRAGMA data_version", [], |r| r.get(0)).ok();
        let mut store = Store {
            checkpointer: None,
            wal_pages: Default::default(),
            conn,
            buckets: HashMap::new(),
            published,
            last_heartbeat: HashMap::new(),
            cut_events: std::collections::HashSet::new(),
            privacy: PrivacyFilter::default(),
            damage_met: false,
            touches: Default::default(),
            data_version: std::cell::Cell::new(version),
        };
        store.reload()?;
        Ok(store)
    }

    /// Notes the outcome of something the worker ran on this store: when it failed on a
    /// damaged file, the worker salvages the file after the turn (`worker/live_salvage.rs`). The
    /// worker notes every answer it sends and every commit and replay, so damage is seen
    /// wherever it is met, and only there.
    pub(crate) fn note<T>(&mut self, outcome: &Result<T>) {
        if let Err(e) = outcome {
            self.note_error(e);
        }
    }

    /// [`Store::note`] for a failure at hand.
    pub(crate) fn note_error(&mut self, error: &DatastoreError) {
        self.damage_met |= matches!(error, DatastoreError::Damaged(_));
    }

    /// Whether damage was noted since the last call.
    pub(crate) fn take_damage_met(&mut self) -> bool {
        std::mem::take(&mut self.damage_met)
    }

    /// The connection, for transaction control by the worker.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Rebuilds every cache from the database: at open, and whenever SQLite dropped the
    /// open transaction (the replay of the batch may have failed, leaving the caches ahead
    /// of what reads return).
    ///
    /// The new caches are built apart and replace the old ones only when every read
    /// succeeded: a failure leaves the caches as they were, never half empty.
    pub(crate) fn reload(&mut self) -> Result<()> {
        let mut buckets = HashMap::new();
        let mut stmt = self
            .conn
            .prepare("SELECT id, name, type, client, hostname, created, data FROM buckets")?;
        let rows = stmt.query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, Option<String>>(6)?,
            ))
        })?;
        for row in rows {
            let (bid, name, type_, client, hostname, created, data) = row?;
            let data = data
                .and_then(|d| serde_json::from_str(&d).ok())
                .unwrap_or_default();
            let bucket = Bucket {
                bid: Some(bid),
                id: name.clone(),
                _type: type_,
                client,
                hostname,
                created: created_from_text(&created),
                data,
                metadata: BucketMetadata::default(),
                events: None,
                last_updated: None,
            };
            buckets.insert(name, Arc::new(BucketShared::new(bucket)));
        }
        drop(stmt);
        // Each bucket's time span from a few index look-ups (no scan: startup must not grow
        // with the history); counts are taken when first asked for (`count_events`).
        for shared in buckets.values() {
            if let Some(bid) = shared.bucket().bid {
                if let Some((start, end)) = self.span(bid)? {
                    shared.widen(start, end);
                }
            }
        }
        let filters = self.privacy_setting()?;
        self.buckets = buckets;
        self.last_heartbeat.clear();
        self.publish();
        self.load_privacy_filter(filters.as_deref());
        // The listeners' caches may hold what a rolled-back transaction wrote; the file
        // itself changes by no write here (the batch is applied again, and its writes are
        // noted already), so nothing goes into the touch log (`touch_log.rs`): a start
        // must not make every kept result look written.
        self.published.listeners.tell(Touched::Everything);
        Ok(())
    }

    /// Tells the write listeners what a write just changed (`store/write_listeners.rs`).
    pub(super) fn tell(&self, change: Touched<'_>) {
        self.touches.borrow_mut().note(change);
        self.published.listeners.tell(change);
    }

    /// Just before the commit: tells the listeners of a commit another program made since
    /// the last one (SQLite's `data_version` moved: no cache of ours heard of that write),
    /// and keeps in the open transaction what the writes since the last commit changed,
    /// tagged with the journal number `seq` of the commit's last write (`touch_log.rs`).
    pub(crate) fn before_commit(&self, seq: Option<u64>) -> rusqlite::Result<()> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?;
        if self
            .data_version
            .replace(Some(version))
            .is_some_and(|v| v != version)
        {
            log::info!("Another program wrote to the database: derived results are dropped");
            self.tell(Touched::Everything);
        }
        let saved = self.published.derived_saved.load(Ordering::Acquire);
        let mut touches = self.touches.borrow_mut();
        touches.forget_upto(saved);
        match seq {
            Some(seq) => touches.write(&self.conn, seq),
            None => Ok(()),
        }
    }

    /// Checkpoints the WAL from now on with `checkpointer` after each commit, instead of
    /// SQLite's automatic checkpoint inside the commit on this connection.
    pub(crate) fn checkpoint_with(
        &mut self,
        checkpointer: crate::file::checkpointer::Checkpointer,
    ) -> Result<()> {
        self.conn.execute_batch("PRAGMA wal_autocheckpoint=0")?;
        // Registered after the pragma, which would replace it: each commit in WAL mode
        // reports the WAL's pages.
        let pages = self.wal_pages.clone();
        self.conn
            .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, n: i32| {
                pages.store(u32::try_from(n).unwrap_or(0), Ordering::Release);
                Ok(())
            }))?;
        self.checkpointer = Some(checkpointer);
        Ok(())
    }

    /// Holds the background checkpoints off until the guard is dropped (see
    /// `Checkpointer::hold`).
    pub(crate) fn hold_checkpoints(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        self.checkpointer
            .as_ref()
            .map(crate::file::checkpointer::Checkpointer::hold)
    }

    /// Has the WAL synced to the disk off the worker's turn (a rewrite's step spilled
    /// pages into it): `Checkpointer::presync`.
    pub(crate) fn presync_wal(&self) {
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.presync();
        }
    }

    /// Answers `reply` once what is committed was copied into the file, by the checkpoint
    /// thread (at once without one): the first half of a scrub (`Control::CopyWal`).
    pub(crate) fn copy_wal_then(&self, reply: tokio::sync::oneshot::Sender<Result<()>>) {
        match &self.checkpointer {
            Some(checkpointer) => checkpointer.copy_then(reply),
            None => drop(reply.send(Ok(()))),
        }
    }

    /// Whether the WAL was copied whole since the last commit (once per checkpoint):
    /// `GroupCommit::refresh`.
    pub(crate) fn take_checkpoint_caught_up(&self) -> bool {
        self.checkpointer
            .as_ref()
            .is_some_and(crate::file::checkpointer::Checkpointer::take_caught_up)
    }

    /// The commit succeeded: what it kept is no longer pending, the WAL is checkpointed
    /// in the background, and when derived state is kept beside the file, the files are
    /// stamped as the commit left them (`file/derived.rs`).
    pub(crate) fn after_commit(&self) {
        self.touches.borrow_mut().committed();
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.committed(self.wal_pages.load(Ordering::Acquire));
        }
        let kept = self.published.derived_kept.load(Ordering::Acquire);
        if let (true, Some(path)) = (kept, self.conn.path()) {
            crate::file::derived::stamp_commit(std::path::Path::new(path));
        }
    }

    /// Tells the write listeners that the events of `name` within `extent` changed (if
    /// anything was added to it).
    pub(super) fn tell_events(&self, name: &str, extent: Extent) {
        if let Some(change) = extent.touched(name) {
            self.tell(change);
        }
    }

    /// The `privacy_filters` setting's text as stored, if set.
    pub(super) fn privacy_setting(&self) -> Result<Option<String>> {
        self.setting_text(PRIVACY_FILTERS_KEY)
    }

    /// A setting's text as stored, if set.
    pub(super) fn setting_text(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM key_value WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()?
            .flatten())
    }

    pub(super) fn load_privacy_filter(&mut self, json: Option<&str>) {
        let (filter, problems) = PrivacyFilter::from_json(json.unwrap_or("null"));
        for p in problems {
            log::warn!("Privacy filter rule skipped: {p}");
        }
        self.privacy = filter;
    }

    /// Publishes the current bucket map for readers (after buckets were added or removed).
    pub(super) fn publish(&self) {
        let map: BucketMap = self
            .buckets
            .iter()
            .map(|(name, state)| (name.clone(), state.clone()))
            .collect();
        self.published.buckets.store(Arc::new(map));
    }

    /// The earliest start and latest end of a bucket row's events (`None` without events),
    /// from index look-ups: the first start, the last start, the ends of the events within
    /// an hour of the last start, and the ends of the long events (their own index).
    pub(super) fn span(&self, bid: i64) -> Result<Option<(i64, i64)>> {
        // Two statements: SQLite answers a lone MIN() or MAX() with one index seek, but
        // scans every row for both in one statement.
        let first: Option<i64> = self
            .conn
            .prepare_cached("SELECT MIN(starttime) FROM events WHERE bucketrow = ?1")?
            .query_row([bid], |r| r.get(0))?;
        let last: Option<i64> = self
            .conn
            .prepare_cached("SELECT MAX(starttime) FROM events WHERE bucketrow = ?1")?
            .query_row([bid], |r| r.get(0))?;
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(None);
        };
        let recent: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT MAX(endtime) FROM events WHERE bucketrow = ?1 AND starttime >= ?2",
            )?
            .query_row(params![bid, last.saturating_sub(LONG_EVENT_NS)], |r| {
                r.get(0)
            })?;
        let long: Option<i64> = self
            .conn
            .prepare_cached(concat!(
                "SELECT MAX(endtime) FROM events INDEXED BY events_long_by_end
                 WHERE bucketrow = ?1 AND ",
                long_event_condition!()
            ))?
            .query_row([bid], |r| r.get(0))?;
        let end = recent.max(long).unwrap_or(last);
        if end < last {
            // The newest events end before they start (negative durations, which imports
            // can carry): an older event may end later, so ask the table (rare, a scan).
            let latest: Option<i64> = self
                .conn
                .prepare_cached("SELECT MAX(endtime) FROM events WHERE bucketrow = ?1")?
                .query_row([bid], |r| r.get(0))?;
            return Ok(Some((first, latest.unwrap_or(end))));
        }
        Ok(Some((first, end)))
    }

    pub(super) fn state(&self, name: &str) -> Result<&Arc<BucketShared>> {
        self.buckets
            .get(name)
            .ok_or_else(|| DatastoreError::NoSuchBucket(name.to_string()))
    }

    /// Runs `op` with SQLite's `secure_delete` on: the cells and whole pages it frees are
    /// zeroed as they are freed (the connection's `FAST` setting zeroes only what costs no
    /// extra write, `schema.rs`), so removed text does not stay in the file's free space
    /// (the WAL and the journal: `Datastore::scrub`).
    pub(super) fn securely<T>(&mut self, op: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
        self.conn.execute_batch("PRAGMA secure_delete = ON")?;
        let result = op(self);
        self.conn.execute_batch("PRAGMA secure_delete = FAST")?;
        result
    }

    /// The row id of bucket `name` (what events point to); `NoSuchBucket` when missing.
    pub(crate) fn bucketrow(&self, name: &str) -> Result<i64> {
        self.state(name)?
            .bucket()
            .bid
            .ok_or_else(|| DatastoreError::Sql(format!("bucket '{name}' has no row id").into()))
    }
}
