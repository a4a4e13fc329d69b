//! File modes: every file the owner creates beside the database (lock, journal, salvaged
//! copy, restored copy, backups) gets the database's permission bits, and a folder it
//! creates is private (0700) when the database's folder is. Otherwise a user's 0600
//! database would have world-readable backups and copies, made with the umask's default.

use std::fs::File;
use std::path::Path;

/// The permission bits of `db`, or of its folder when it does not exist yet (with the
/// execute bits dropped); `None` where there are no such bits.
fn database_mode(db: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(db) {
            return Some(meta.permissions().mode() & 0o777);
        }
        let folder = db.parent().filter(|p| !p.as_os_str().is_empty())?;
        let meta = std::fs::metadata(folder).ok()?;
        Some(meta.permissions().mode() & 0o666)
    }
    #[cfg(not(unix))]
    {
        let _ = db;
        None
    }
}

/// Gives `path` the permission bits of the database `db`.
pub(crate) fn match_database(path: &Path, db: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    if let Some(mode) = database_mode(db) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = (path, db);
    Ok(())
}

/// Opens `path` for reading and writing, creating it with the database's mode if it is
/// not there.
pub(crate) fn create_file(path: &Path, db: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    if let Some(mode) = database_mode(db) {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    let file = options.open(path)?;
    // The mode given to open is masked by the umask; the database's own bits win.
    match_database(path, db)?;
    Ok(file)
}

/// Creates `folder` (and its parents) for files of the database `db`: 0700 when the
/// database's folder gives its group and others nothing.
pub(crate) fn create_folder(folder: &Path, db: &Path) -> std::io::Result<()> {
    if folder.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        let private = db
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .and_then(|p| std::fs::metadata(p).ok())
            .is_some_and(|m| m.permissions().mode() & 0o077 == 0);
        if private {
            builder.mode(0o700);
        }
    }
    builder.create(folder)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_files_take_the_databases_mode_and_folders_stay_private() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let db = dir.path().join("sqlite.db");
        std::fs::write(&db, b"").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
        let side = dir.path().join("sqlite.db.lock");
        create_file(&side, &db).unwrap();
        assert_eq!(mode(&side), 0o600);
        let folder = dir.path().join("backups/deeper");
        create_folder(&folder, &db).unwrap();
        assert_eq!(mode(&folder), 0o700);
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
        match_database(&side, &db).unwrap();
        assert_eq!(mode(&side), 0o640);
    }
}
