//! Salvaging the file the worker serves, while it serves (issue 25): when a request meets a
//! damaged page, the worker salvages the file at once instead of failing every request that
//! touches the damage until a restart.
//!
//! The worker stops taking requests for the length of the salvage (they wait in the queue;
//! a year takes under two seconds): it rolls back the open transaction (the batch keeps the
//! writes it acknowledged), copies what can be read into a fresh file ([`crate::file::salvage()`]),
//! closes its connection, keeps the damaged file and its WAL aside as
//! `<database>.damaged-<time>`, opens the fresh file in its place (a new backup
//! connection, the caches) and applies the batch again. All of it goes through the file's
//! owner (`file/`): without the lock nothing is replaced, and requests that meet the
//! damage get the error. Long jobs in progress end with an error (their callers may ask again). The request that met the damage got its
//! error already; the ones after it are served from the salvaged file.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::Connection;

use crate::error::{DatastoreError, Result};
use crate::file::open::{open_store, OpenOptions, Opened};
use crate::file::DatabaseFile;
use crate::store::{Published, Store};
use crate::worker::group_commit::GroupCommit;
use crate::worker::job::Job;
use crate::worker::shared::Shared;

/// What the worker needs to salvage its file and open the copy.
pub(crate) struct Salvager {
    /// How it was opened (with the password of an encrypted database).
    pub options: OpenOptions,
    /// When a salvage last failed: the next is not tried before [`RETRY_AFTER`], so a
    /// file that cannot be salvaged (no space for the copy) does not stall every request
    /// that meets its damage.
    pub failed_at: std::cell::Cell<Option<std::time::Instant>>,
}

/// How long after a failed salvage the next may be tried.
pub(crate) const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// A store on an empty in-memory database: what the worker holds for the moment between
/// closing the damaged file and opening its salvaged copy.
/// For that moment (milliseconds: two renames and an open) the published bucket list is
/// empty, so a bucket list read then shows none; every request the worker answers sees the
/// salvaged copy.
fn placeholder(published: Arc<Published>) -> Result<Store> {
    let mut conn = Connection::open_in_memory()?;
    crate::store::schema::migrate(&mut conn, crate::file::create_marker)?;
    Store::new(conn, published)
}

/// Salvages the served file and goes on with the copy (see the module docs). When the
/// salvage fails the worker goes on with the damaged file (the next try after
/// [`RETRY_AFTER`]), and the marker asks the next start to try again. Returns false when
/// there is nothing left to serve from (the salvaged copy could not be opened): the worker
/// then keeps its acknowledged writes for the next start and ends.
#[must_use]
pub(crate) fn salvage_now(
    store: &mut Store,
    file: &DatabaseFile,
    tx: &mut GroupCommit,
    jobs: &mut VecDeque<Job>,
    salvager: &Salvager,
    shared: &Arc<Shared>,
) -> bool {
    let path = file.path();
    if !may_salvage(file, salvager, jobs) {
        return true;
    }
    tx.roll_back_for_salvage(store);
    let started = std::time::Instant::now();
    let (report, fresh) = match file.salvage_copy(salvager.options.password.as_ref()) {
        Ok(copied) => copied,
        Err(e) => {
            log::error!(
                "Salvaging {} failed: {e}; going on with it as it is",
                path.display()
            );
            salvager.failed_at.set(Some(std::time::Instant::now()));
            tx.carry_over(store, "the salvage failed");
            return true;
        }
    };
    // The damaged file's connection is closed before its files move: SQLite removes its
    // WAL by name when it closes.
    let Ok(empty) = placeholder(shared.published.clone()) else {
        log::error!("Cannot swap in the salvaged copy of {}", path.display());
        salvager.failed_at.set(Some(std::time::Instant::now()));
        tx.carry_over(store, "the salvaged copy could not be swapped in");
        return true;
    };
    drop(std::mem::replace(store, empty));
    let aside = match file.put_salvaged_in_place(&fresh) {
        Ok(aside) => aside,
        Err(e) => {
            log::error!(
                "Cannot put the salvaged copy of {} in place: {e}",
                path.display()
            );
            PathBuf::new()
        }
    };
    if let Err(e) = open_copy(store, path, tx, salvager, shared) {
        // Nothing to serve from: the worker ends, and every request says so.
        log::error!(
            "Cannot open the salvaged copy of {}: {e}; the damaged file is at {}",
            path.display(),
            aside.display()
        );
        return false;
    }
    tx.carry_over(store, "the database file was replaced by its salvaged copy");
    // What the salvage met on its way is not a new damage.
    let _ = store.take_damage_met();
    log::warn!(
        "Salvaged {} in {:.1?}: {}; the damaged file is kept at {}",
        path.display(),
        started.elapsed(),
        report.summary(),
        aside.display()
    );
    let salvaged = &shared.left.salvaged;
    *salvaged
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(report);
    true
}

/// Whether the salvage may run now: the damage is marked for the next start either way,
/// but without the lock no file is replaced (requests that meet the damage fail with
/// `Damaged`, and the marker stays for a start that holds the lock), and a failed salvage
/// is not tried again before [`RETRY_AFTER`]. When it may, the jobs in progress end with
/// an error (their callers may ask again).
fn may_salvage(file: &DatabaseFile, salvager: &Salvager, jobs: &mut VecDeque<Job>) -> bool {
    file.mark_damaged();
    let failed_lately = salvager
        .failed_at
        .get()
        .is_some_and(|t| t.elapsed() < RETRY_AFTER);
    if !file.is_locked() || failed_lately {
        return false;
    }
    log::error!(
        "The database {} is damaged: salvaging it now (requests wait)",
        file.path().display()
    );
    for job in jobs.drain(..) {
        job.refuse(DatastoreError::Damaged(
            "the database was found damaged and is being salvaged; ask again".into(),
        ));
    }
    true
}

/// Opens the salvaged copy at `path` in place of `store`, with the journal's identity and a
/// new backup connection. The journal stays the worker's: its records are the batch
/// carried over afterwards.
fn open_copy(
    store: &mut Store,
    path: &std::path::Path,
    tx: &GroupCommit,
    salvager: &Salvager,
    shared: &Shared,
) -> Result<()> {
    let mut options = salvager.options.clone();
    options.legacy_import = None;
    let Opened {
        store: opened,
        backup_source,
        ..
    } = open_store(path, &options, shared.published.clone(), false)?;
    *store = opened;
    // The copy is the journal's database, whatever could be read of the damaged file's own
    // identity rows: later kills must find the journal matching it.
    if let Some(journal) = tx.batch().journal() {
        if let Err(e) = crate::file::adopt_identity(store.conn(), journal) {
            log::error!(
                "Cannot give the salvaged copy of {} the journal's identity: {e}",
                path.display()
            );
        }
    }
    if backup_source.is_some() {
        let slot = &shared.left.backup_source;
        *slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = backup_source;
    }
    Ok(())
}
