//! [`DatabaseFile`], the owner of one database file: its lock, and the operations that
//! replace the file (restore; salvage is in `salvage.rs`, the encrypted and decrypted
//! copies in `encryption.rs`). The invariants it keeps are in the module docs of `file/`.

use std::path::{Path, PathBuf};

use crate::error::{DatastoreError, Result};
use crate::file::derived;
use crate::file::encryption::DbPassword;
use crate::file::journal;
use crate::file::lock::Lock;
use crate::file::modes::match_database;
use crate::file::names::{remove_if_there, with_suffix};
use crate::file::recovery::recover;
use crate::file::replace;

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
        let incoming = with_suffix(&self.path, ".restoring");
        let _ = std::fs::remove_file(&incoming);
        if let Err(e) = crate::file::backup::copy_verified(backup, password, &incoming) {
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
        crate::file::encryption::unlock(&conn, password, &self.path)?;
        crate::store::schema::configure(&conn)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == crate::store::schema::SCHEMA_VERSION {
            let recovered = recover(&conn, &self.path, password.is_some())?;
            if !recovered.held.is_empty() {
                return Err(DatastoreError::Unavailable(
                    "the database cannot be written now".into(),
                ));
            }
        }
        conn.close().map_err(|(_, e)| DatastoreError::from(e))
    }

    /// After the file was put in place encrypted or decrypted (its journal settled first):
    /// the journal's records, all committed, and the state kept for the old file are
    /// removed, since they may hold the watchers' text in the clear beside an encrypted
    /// file, or be sealed with a key the new file does not have.
    pub(crate) fn forget_side_state(&self) -> std::io::Result<()> {
        derived::discard(&self.path);
        remove_if_there(&journal::journal_path(&self.path))
    }
}
