//! The running server's announcement beside its database (`<database>.server.json`): how a
//! second start, or `aw-server backup`, finds the server that has the file.

use std::path::{Path, PathBuf};

use crate::file::modes::match_database;
use crate::file::names::with_suffix;

/// Writes `<database>.server.json` beside `db` (how a second start or `aw-server backup`
/// finds the running server): aside, then renamed into place, with the database's mode.
pub fn announce(db: &Path, text: &[u8]) -> std::io::Result<()> {
    let path = announcement_path(db);
    let temp = with_suffix(&path, ".tmp");
    std::fs::write(&temp, text)?;
    let _ = match_database(&temp, db);
    std::fs::rename(&temp, &path)
}

/// `<database>.server.json`.
pub fn announcement_path(db: &Path) -> PathBuf {
    with_suffix(db, ".server.json")
}

/// Removes the announcement beside `db` when `is_ours` says it is the caller's.
pub fn withdraw_announcement(db: &Path, is_ours: impl FnOnce(&[u8]) -> bool) {
    let path = announcement_path(db);
    if std::fs::read(&path).is_ok_and(|text| is_ours(&text)) {
        let _ = std::fs::remove_file(path);
    }
}
