//! How the files beside a database are named: `<database><suffix>` (`-wal`, `.lock`,
//! `.journal`, `.derived`, `.damaged`, …), and the time stamp in the names of files kept aside. What is
//! done with them is `file/`'s.

use std::path::{Path, PathBuf};

/// How a time is written in file names (no `:`, which some file systems refuse).
pub const FILE_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%SZ";

/// `path` with `suffix` added to its file name (`sqlite.db` → `sqlite.db-wal`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// Removes `path`; one that is not there is no error.
pub(crate) fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
