//! The running server, as seen from beside its database: a second server that finds the
//! database locked names the process holding it and where it listens (instead of "is
//! another aw-server running?"), and `aw-server backup` finds the server to ask.
//!
//! A running server writes `<database>.server.json` (`{"pid", "address", "port"}`) once it
//! listens, and removes it when it stops. The file alone could be stale (a killed server
//! leaves it), so the process holding the database's lock is looked up in `/proc/locks`
//! (Linux) and the file is believed only when its pid is that process (or, where
//! `/proc/locks` cannot tell, when the process still runs).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The exit code of a server that found its database in use by another one. The systemd
/// unit does not restart on it (`RestartPreventExitStatus=3`): restarting cannot help, and
/// aw-qt may have started the other server on purpose.
pub(crate) const EXIT_IN_USE: u8 = 3;

/// What a running server says about itself beside its database.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Announcement {
    /// Its process id.
    pub pid: u32,
    /// The address it listens on.
    pub address: String,
    /// The port it listens on.
    pub port: u16,
}

/// `<database>.server.json`.
fn announcement_path(db: &Path) -> PathBuf {
    aw_datastore::with_suffix(db, ".server.json")
}

/// Writes this server's announcement beside `db` (aside, then renamed into place).
pub(crate) fn announce(db: &Path, address: &str, port: u16) {
    let me = Announcement {
        pid: std::process::id(),
        address: address.to_string(),
        port,
    };
    let path = announcement_path(db);
    let temp = aw_datastore::with_suffix(&path, ".tmp");
    let written = serde_json::to_vec(&me)
        .map_err(std::io::Error::other)
        .and_then(|text| std::fs::write(&temp, text))
        .and_then(|()| std::fs::rename(&temp, &path));
    if let Err(e) = written {
        log::warn!("Cannot write {}: {e}", path.display());
    }
}

/// Removes the announcement beside `db` if it is this process's.
pub(crate) fn withdraw(db: &Path) {
    let path = announcement_path(db);
    if read(&path).is_some_and(|a| a.pid == std::process::id()) {
        let _ = std::fs::remove_file(path);
    }
}

fn read(path: &Path) -> Option<Announcement> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The server running on `db`, if one does: the process holding its lock, with where it
/// listens when its announcement is there.
pub(crate) fn running(db: &Path) -> Option<(u32, Option<Announcement>)> {
    let announced = read(&announcement_path(db));
    match lock_holder(db) {
        Some(pid) => Some((pid, announced.filter(|a| a.pid == pid))),
        None => announced
            .filter(|a| Path::new(&format!("/proc/{}", a.pid)).exists())
            .map(|a| (a.pid, Some(a))),
    }
}

/// What to tell the user when `db` is in use by another process.
pub(crate) fn in_use_message(db: &Path) -> String {
    let who = match running(db) {
        Some((pid, Some(a))) => format!(
            "another aw-server (pid {pid}, listening on http://{}:{}/)",
            a.address, a.port
        ),
        Some((pid, None)) => format!("another process (pid {pid})"),
        None => "another process".to_string(),
    };
    format!(
        "The database {} is in use by {who}: stop it first, or give this server another \
         database (--dbpath, or --testing for the testing database)",
        db.display()
    )
}

/// The process holding an advisory lock on `db`, from `/proc/locks` (Linux; `None`
/// elsewhere or when nothing holds one).
fn lock_holder(db: &Path) -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(db).ok()?;
        let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
        let wanted = format!("{major:02x}:{minor:02x}:{}", meta.ino());
        let locks = std::fs::read_to_string("/proc/locks").ok()?;
        locks.lines().find_map(|line| {
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; blocked waiters are "->".
            let fields: Vec<&str> = line.split_whitespace().collect();
            let at = fields.iter().position(|f| f.split(':').count() == 3)?;
            (fields.get(1) != Some(&"->") && fields[at].eq_ignore_ascii_case(&wanted))
                .then(|| fields.get(at.checked_sub(1)?)?.parse().ok())
                .flatten()
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = db;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_holder_and_its_announcement_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        std::fs::write(&db, b"").unwrap();
        assert_eq!(running(&db), None);
        let file = std::fs::File::open(&db).unwrap();
        file.try_lock().unwrap();
        announce(&db, "127.0.0.1", 5600);
        let (pid, announced) = running(&db).unwrap();
        assert_eq!(pid, std::process::id());
        assert_eq!(announced.unwrap().port, 5600);
        let message = in_use_message(&db);
        assert!(
            message.contains(&format!("pid {pid}, listening on http://127.0.0.1:5600/")),
            "{message}"
        );
        withdraw(&db);
        assert!(!announcement_path(&db).exists());
    }
}
