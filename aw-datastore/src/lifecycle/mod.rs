//! The database file's life, owned in one place: [`DatabaseFile`].
//!
//! Every operation on the database file and the files beside it goes through the owner:
//! opening and migrating it (with the backup before), salvaging it (at start, while
//! serving, by command), backing it up (names, space, rotation), restoring a backup over it, keeping acknowledged writes that are
//! not committed yet (the journal), announcing the running server, replacing the file, and
//! keeping state derived from it between runs (`derived.rs`: valid only for the exact file
//! a clean stop left).
//! The invariants it keeps:
//!
//! * **No file is replaced without the lock.** The lock (`<database>.lock`, never itself
//!   replaced) is taken before anything looks at the damage marker or the file, and held
//!   for the owner's whole life. When `flock` fails with an error the database is still
//!   served, but no file is replaced: no salvage of any kind, no restore; an owner file
//!   (`<database>.owner`, `lock.rs`) keeps a second server away meanwhile.
//! * **An acknowledged write is in exactly one durable place** from its answer until its
//!   commit: the journal (`journal.rs`), which the commit then empties; after the commit,
//!   the database. The journal belongs to one database at one commit: its header names the
//!   database and a number that database holds, under a salt its records' checksums
//!   cover, so no sequence of empty commits, restores or salvages can make records apply
//!   twice, to another file, or not at all.
//! * **The database path names a complete database at every instant**: a replace keeps the
//!   old file under a second name first and renames the new one over it in one step
//!   (`replace.rs`); a replace the process did not finish is finished or undone before
//!   the next open.
//! * **Files it makes have the database's mode**, and folders it makes are private when the
//!   database's folder is (`modes.rs`).

mod backups;
pub(crate) mod derived;
mod journal;
mod journal_cipher;
mod lock;
mod modes;
mod recovery;
mod replace;

use std::path::{Path, PathBuf};

pub(crate) use backups::migration_target;
pub use backups::{
    list_backups, rotate_backups, rotation, write_backup, BackupFile, BackupKind,
    KEEP_BEFORE_REWRITE,
};
pub(crate) use journal::Journal;
pub(crate) use lock::Lock;
pub(crate) use modes::{create_file, create_folder, match_database};
pub(crate) use recovery::{
    adopt_identity, copy_journal_key, marker, recover, salvage_identity, set_identity,
    store_committed,
};
pub(crate) use replace::sync_folder_of;

use crate::encryption::DbPassword;
use crate::error::{DatastoreError, Result};
use crate::salvage::{damage_marker, SalvageReport};

/// The owner of one database file and its side files (see the module docs). Made by
/// [`DatabaseFile::claim`]; a server hands it to [`DatabaseFile::open`], commands
/// (`aw-server salvage`, `aw-server restore`) use it directly.
#[derive(Debug)]
pub struct DatabaseFile {
    path: PathBuf,
    lock: Lock,
}

impl DatabaseFile {
    /// Takes the lock of the database at `path` (its folder must exist) and finishes or
    /// undoes a replace a dead process left half done. Fails with
    /// [`DatastoreError::Locked`] when another process holds the lock; nothing has been
    /// looked at or changed then.
    pub fn claim(path: &Path) -> Result<DatabaseFile> {
        let lock = Lock::take(path)?;
        let file = DatabaseFile {
            path: path.to_path_buf(),
            lock,
        };
        if file.lock.may_replace("finish a replace").is_ok() {
            match replace::recover(path) {
                Ok(Some(done)) => log::warn!("{done}"),
                Ok(None) => {}
                Err(e) => {
                    return Err(DatastoreError::Sql(
                        format!(
                            "cannot finish the interrupted replace of {}: {e}",
                            path.display()
                        )
                        .into(),
                    ))
                }
            }
        }
        Ok(file)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the lock is held (files may be replaced).
    pub fn is_locked(&self) -> bool {
        matches!(self.lock, Lock::Held { .. })
    }

    /// `Ok` when files may be replaced (the lock is held); what the error says names `what`.
    pub(crate) fn require_lock(&self, what: &str) -> Result<()> {
        self.lock.may_replace(what)
    }

    /// Puts `incoming` in place of the database and deletes the file it replaces once it
    /// is (see `replace.rs`).
    pub(crate) fn replace_discarding(&self, incoming: &Path) -> Result<()> {
        self.lock.may_replace("replace the database")?;
        let _ = match_database(incoming, &self.path);
        replace::replace_discarding(&self.path, incoming)
            .map_err(|e| DatastoreError::io("replace the database", &self.path, &e))
    }

    /// Whether a damage marker asks for a salvage before the file is opened.
    pub fn is_marked_damaged(&self) -> bool {
        damage_marker(&self.path).exists() && self.path.exists()
    }

    /// Writes the damage marker: the next start salvages first, if this run does not.
    pub(crate) fn mark_damaged(&self) {
        let _ = std::fs::write(damage_marker(&self.path), b"damaged; salvage pending\n");
    }

    /// Salvages the database into a fresh file and puts it in place; the damaged file (and
    /// its WAL) is kept as `<database>.damaged-<time>`. Nothing may have the database
    /// open. Returns the report and where the damaged file went.
    pub fn salvage(&self, password: Option<&DbPassword>) -> Result<(SalvageReport, PathBuf)> {
        let started = std::time::Instant::now();
        let (report, fresh) = self.salvage_copy(password)?;
        let aside = self.put_salvaged_in_place(&fresh)?;
        log::warn!(
            "Salvaged {} in {:.1?}: {}; the damaged file is kept at {}",
            self.path.display(),
            started.elapsed(),
            report.summary(),
            aside.display()
        );
        Ok((report, aside))
    }

    /// The first half of a salvage: what can be read, copied into a fresh file beside the
    /// database (the database itself may still be open, read-only).
    pub(crate) fn salvage_copy(
        &self,
        password: Option<&DbPassword>,
    ) -> Result<(SalvageReport, PathBuf)> {
        self.lock.may_replace("salvage the database")?;
        let fresh = crate::salvage::salvage_target(&self.path);
        match crate::salvage::salvage(&self.path, &fresh, password) {
            Ok(report) => {
                let _ = match_database(&fresh, &self.path);
                Ok((report, fresh))
            }
            Err(e) => {
                let _ = std::fs::remove_file(&fresh);
                Err(e)
            }
        }
    }

    /// The second half: the salvaged copy replaces the database (closed by now), and the
    /// marker goes.
    pub(crate) fn put_salvaged_in_place(&self, fresh: &Path) -> Result<PathBuf> {
        self.lock.may_replace("salvage the database")?;
        let aside = replace::replace(&self.path, fresh, "damaged")
            .map_err(|e| DatastoreError::io("put the salvaged copy in place of", &self.path, &e))?
            .ok_or_else(|| {
                let e = std::io::Error::from(std::io::ErrorKind::NotFound);
                DatastoreError::io("put the salvaged copy in place of", &self.path, &e)
            })?;
        let _ = std::fs::remove_file(damage_marker(&self.path));
        Ok(aside)
    }

    /// Salvages first when the marker asks for it (see [`DatabaseFile::salvage`]); without
    /// the lock the file is served as it is.
    pub(crate) fn salvage_if_marked(&self, password: Option<&DbPassword>) -> Result<()> {
        if !self.is_marked_damaged() {
            return Ok(());
        }
        log::warn!(
            "The database {} was found damaged while serving; salvaging it first",
            self.path.display()
        );
        match self.salvage(password) {
            Ok(_) => Ok(()),
            Err(DatastoreError::Unavailable(why)) => {
                log::error!("Not salvaging: {why}");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Puts a copy of the database `backup` in place of this one (see
    /// [`crate::copy_verified`]: what `backup`'s WAL holds comes along, and the copy is
    /// verified before anything changes). First the writes this database's journal still
    /// holds are applied, so the file kept aside (`<database>.replaced-<time>`) is
    /// complete. Returns where the current file went (`None`: there was none).
    pub fn restore(&self, backup: &Path, password: Option<&DbPassword>) -> Result<Option<PathBuf>> {
        self.lock.may_replace("restore a backup")?;
        if self.path.exists() {
            if let Err(e) = self.apply_held_writes(password) {
                log::warn!(
                    "Could not apply the held writes of {} before replacing it ({e}); its \
                     journal is kept for the file it belongs to",
                    self.path.display()
                );
            }
        }
        let incoming = crate::files::with_suffix(&self.path, ".restoring");
        let _ = std::fs::remove_file(&incoming);
        if let Err(e) = crate::backup::copy_verified(backup, password, &incoming) {
            let _ = std::fs::remove_file(&incoming);
            return Err(e);
        }
        let _ = match_database(&incoming, &self.path);
        replace::replace(&self.path, &incoming, "replaced")
            .map_err(|e| DatastoreError::io("put the restored copy in place of", &self.path, &e))
    }

    /// Applies the acknowledged writes the journal holds (a server killed before their
    /// commit) to the database, and closes it: before a copy of the file is taken with no
    /// server running (`aw-server backup`), so the copy holds them.
    pub fn apply_held_writes(&self, password: Option<&DbPassword>) -> Result<()> {
        let conn = rusqlite::Connection::open(&self.path)?;
        crate::encryption::unlock(&conn, password, &self.path)?;
        crate::schema::configure(&conn)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == crate::schema::SCHEMA_VERSION {
            let recovered = recover(&conn, &self.path, password.is_some())?;
            if !recovered.held.is_empty() {
                return Err(DatastoreError::Unavailable(
                    "the database cannot be written now".into(),
                ));
            }
        }
        conn.close().map_err(|(_, e)| DatastoreError::from(e))
    }
}

impl DatabaseFile {
    /// After the file was put in place encrypted or decrypted (its journal settled first):
    /// the journal's records, all committed, and the state kept for the old file are
    /// removed, since they may hold the watchers' text in the clear beside an encrypted
    /// file, or be sealed with a key the new file does not have.
    pub(crate) fn forget_side_state(&self) -> std::io::Result<()> {
        derived::discard(&self.path);
        crate::files::remove_if_there(&journal::journal_path(&self.path))
    }
}

/// Writes `<database>.server.json` beside `db` (how a second start or `aw-server backup`
/// finds the running server): aside, then renamed into place, with the database's mode.
pub fn announce(db: &Path, text: &[u8]) -> std::io::Result<()> {
    let path = announcement_path(db);
    let temp = crate::files::with_suffix(&path, ".tmp");
    std::fs::write(&temp, text)?;
    let _ = match_database(&temp, db);
    std::fs::rename(&temp, &path)
}

/// `<database>.server.json`.
pub fn announcement_path(db: &Path) -> PathBuf {
    crate::files::with_suffix(db, ".server.json")
}

/// Removes the announcement beside `db` when `is_ours` says it is the caller's.
pub fn withdraw_announcement(db: &Path, is_ours: impl FnOnce(&[u8]) -> bool) {
    let path = announcement_path(db);
    if std::fs::read(&path).is_ok_and(|text| is_ours(&text)) {
        let _ = std::fs::remove_file(path);
    }
}

/// `<database>.lock`, the file whose `flock` says a server runs on the database.
pub fn lock_file(db: &Path) -> PathBuf {
    lock::lock_path(db)
}
