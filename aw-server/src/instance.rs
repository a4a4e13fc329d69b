//! The running server, as seen from beside its database: a second server that finds the
//! database locked names the process holding it and where it listens (instead of "is
//! another aw-server running?"), and `aw-server backup` finds the server to ask.
//!
//! A running server writes `<database>.server.json` (`{"pid", "address", "port"}`) once it
//! listens, and removes it when it stops. The file alone could be stale (a killed server
//! leaves it), so the process holding the database's lock is looked up in `/proc/locks`
//! (Linux) and the file is believed only when its pid is that process (or, where
//! `/proc/locks` cannot tell, when the process still runs).

use std::path::Path;

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

/// Writes this server's announcement beside `db` (the datastore writes the file).
pub(crate) fn announce(db: &Path, address: &str, port: u16) {
    let me = Announcement {
        pid: std::process::id(),
        address: address.to_string(),
        port,
    };
    let written = serde_json::to_vec(&me)
        .map_err(std::io::Error::other)
        .and_then(|text| aw_datastore::announce(db, &text));
    if let Err(e) = written {
        log::warn!(
            "Cannot write {}: {e}",
            aw_datastore::announcement_path(db).display()
        );
    }
}

/// Removes the announcement beside `db` if it is this process's.
pub(crate) fn withdraw(db: &Path) {
    aw_datastore::withdraw_announcement(db, |text| {
        parse(text).is_some_and(|a| a.pid == std::process::id())
    });
}

fn parse(text: &[u8]) -> Option<Announcement> {
    serde_json::from_slice(text).ok()
}

fn read(path: &Path) -> Option<Announcement> {
    parse(&std::fs::read(path).ok()?)
}

/// The server running on `db`, if one does: the process holding its lock, with where it
/// listens when its announcement is there.
pub(crate) fn running(db: &Path) -> Option<(u32, Option<Announcement>)> {
    let announced = read(&aw_datastore::announcement_path(db));
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

/// The process holding the lock of `db` (`<database>.lock`), from `/proc/locks` (Linux;
/// `None` elsewhere or when nothing holds one).
fn lock_holder(db: &Path) -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(aw_datastore::lock_file(db)).ok()?;
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
        let _file = aw_datastore::DatabaseFile::claim(&db).unwrap();
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
        assert!(!aw_datastore::announcement_path(&db).exists());
    }
}
