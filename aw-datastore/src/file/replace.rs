//! Putting another file in place of the database (a restore, a salvage) so that the
//! database's path names a complete database at every instant, whenever the process dies.
//!
//! The steps, each made durable before the next:
//! 1. an intent file `<database>.replacing` names the incoming file and where the current
//!    one is kept aside;
//! 2. the current file and its WAL get a second name, the kept-aside one (a hard link, or a
//!    copy where links are not supported): the database path still names them;
//! 3. the incoming file is renamed over the database path (one atomic rename);
//! 4. the old WAL and shared-memory files are removed by their database-side names (their
//!    data lives on under the kept-aside name): left there, SQLite would apply the old WAL's
//!    pages to the new file;
//! 5. the intent file goes.
//!
//! A process that dies on the way leaves the intent file; the next owner of the lock
//! finishes the job before anything opens the database ([`recover`]): before step 3 it
//! undoes steps 1–2 (the old database stays, complete); after it, it does step 4.
//!
//! For the tests, `AW_DATASTORE_CRASH_AT_REPLACE_STEP=N` ends the process (abort) right
//! after step N: the only way to prove the claim above against the real binary.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::file::names::{remove_if_there, with_suffix, FILE_TIME_FORMAT};

/// The side files of a database that move with it.
const SIDE_FILES: [&str; 2] = ["-wal", "-shm"];

/// What a replace in progress has done and means to do.
#[derive(Debug, Serialize, Deserialize)]
struct Intent {
    /// The file that is to become the database.
    incoming: PathBuf,
    /// The name the current database keeps (`None`: there was none).
    aside: Option<PathBuf>,
    /// The kept-aside file goes once the replace is done (a conversion: the plain file
    /// must not stay behind an encrypted one).
    #[serde(default)]
    discard: bool,
}

/// `<database>.replacing`.
fn intent_path(db: &Path) -> PathBuf {
    with_suffix(db, ".replacing")
}

/// Ends the process after `step` when the test variable asks for it.
fn crash_point(step: u8) {
    if std::env::var("AW_DATASTORE_CRASH_AT_REPLACE_STEP").is_ok_and(|v| v == step.to_string()) {
        log::error!("Crashing after step {step} of a replace, as asked");
        std::process::abort();
    }
}

/// Syncs the folder that holds `path` (its entries: a new or renamed file survives a
/// power cut only once they are on disk). Opens the folder only, never `path` itself: a
/// descriptor of the database file closed while a connection is open would drop SQLite's
/// locks (`schema::finish_creation`).
pub(crate) fn sync_folder_of(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(folder) => aw_platform::disk::sync_folder(folder),
        None => aw_platform::disk::sync_folder(Path::new(".")),
    }
}

/// A free name `<db>.<tag>-<time>` (with `-2`, `-3`… when taken).
pub(crate) fn free_aside_name(db: &Path, tag: &str) -> PathBuf {
    let stamp = chrono::Utc::now().format(FILE_TIME_FORMAT);
    let mut aside = with_suffix(db, &format!(".{tag}-{stamp}"));
    let mut n = 2;
    while aside.exists() || with_suffix(&aside, "-wal").exists() {
        aside = with_suffix(db, &format!(".{tag}-{stamp}-{n}"));
        n += 1;
    }
    aside
}

/// Gives `from` the second name `to` (a hard link; a copy where links fail). A `to` that
/// already names the same file counts as done (a replace finished by [`recover`]).
fn second_name(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists && same_file(from, to) => Ok(()),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(e),
        Err(_) => std::fs::copy(from, to).map(drop),
    }
}

/// Whether `a` and `b` name the same file.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// Puts `incoming` (a closed, complete database with no WAL of its own) in place of the
/// database `db`; the current file and its WAL are kept as `<db>.<tag>-<time>`, never
/// deleted, never over another file. The caller holds the lock and no connection to `db`.
/// Returns where the current file went (`None` when there was none).
pub(crate) fn replace(db: &Path, incoming: &Path, tag: &str) -> std::io::Result<Option<PathBuf>> {
    replace_with(db, incoming, tag, false)
}

/// [`replace`], and the current file is deleted at the end instead of kept (still never
/// before the new one is in place).
pub(crate) fn replace_discarding(db: &Path, incoming: &Path) -> std::io::Result<()> {
    replace_with(db, incoming, "discarded", true).map(drop)
}

fn replace_with(
    db: &Path,
    incoming: &Path,
    tag: &str,
    discard: bool,
) -> std::io::Result<Option<PathBuf>> {
    if with_suffix(incoming, "-wal").exists() {
        return Err(std::io::Error::other(format!(
            "'{}' still has a WAL: it must be closed before it replaces the database",
            incoming.display()
        )));
    }
    let intent = Intent {
        incoming: incoming.to_path_buf(),
        aside: db.exists().then(|| free_aside_name(db, tag)),
        discard,
    };
    let intent_file = intent_path(db);
    write_synced(&intent_file, &serde_json::to_vec(&intent)?)?;
    crash_point(1);
    if let Some(aside) = &intent.aside {
        keep_aside(db, aside)?;
    }
    sync_folder_of(db)?;
    crash_point(2);
    std::fs::rename(incoming, db)?;
    sync_folder_of(db)?;
    crash_point(3);
    drop_old_side_files(db)?;
    crash_point(4);
    finish(db, &intent)?;
    Ok(intent.aside)
}

/// Step 5 (and the discarded file's end).
fn finish(db: &Path, intent: &Intent) -> std::io::Result<()> {
    if let (true, Some(aside)) = (intent.discard, &intent.aside) {
        for side in ["", "-wal", "-shm"] {
            remove_if_there(&with_suffix(aside, side))?;
        }
    }
    remove_if_there(&intent_path(db))?;
    sync_folder_of(db)
}

/// Step 2: the database and its WAL get their kept-aside names as well.
fn keep_aside(db: &Path, aside: &Path) -> std::io::Result<()> {
    second_name(db, aside)?;
    for side in SIDE_FILES {
        let from = with_suffix(db, side);
        if from.exists() {
            second_name(&from, &with_suffix(aside, side))?;
        }
    }
    Ok(())
}

/// Step 4: the old WAL and shared memory lose their database-side names.
fn drop_old_side_files(db: &Path) -> std::io::Result<()> {
    for side in SIDE_FILES {
        remove_if_there(&with_suffix(db, side))?;
    }
    // Derived from the file that went, and naming its journal numbers.
    crate::file::derived::discard(db);
    sync_folder_of(db)
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    std::io::Write::write_all(&mut file, bytes)?;
    file.sync_all()?;
    sync_folder_of(path)
}

/// Finishes or undoes a replace a dead process left half done (see the module docs).
/// Called with the lock held, before anything opens `db`. Returns what it did, for the log.
pub(crate) fn recover(db: &Path) -> std::io::Result<Option<String>> {
    let intent_file = intent_path(db);
    let bytes = match std::fs::read(&intent_file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let Ok(intent) = serde_json::from_slice::<Intent>(&bytes) else {
        // Step 1 did not finish: nothing else was done.
        remove_if_there(&intent_file)?;
        return Ok(Some("removed an unfinished replace's empty intent".into()));
    };
    let done = if intent.incoming.exists() {
        // Step 3 did not happen: the database is the old one. Its second names go (they
        // name the same files), and so does the incoming copy.
        if let Some(aside) = &intent.aside {
            for side in ["", "-wal", "-shm"] {
                let named = with_suffix(aside, side);
                if same_file(&named, &with_suffix(db, side)) {
                    remove_if_there(&named)?;
                }
            }
        }
        remove_if_there(&intent.incoming)?;
        format!(
            "undid an unfinished replace of {} by {}: the database is as it was",
            db.display(),
            intent.incoming.display()
        )
    } else {
        drop_old_side_files(db)?;
        format!(
            "finished an interrupted replace of {}{}",
            db.display(),
            match (&intent.aside, intent.discard) {
                (Some(aside), false) =>
                    format!("; the file it replaced is kept at {}", aside.display()),
                _ => String::new(),
            }
        )
    };
    finish(db, &intent)?;
    Ok(Some(done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_database_and_its_wal_are_kept_aside_never_over_another() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let mut kept = Vec::new();
        for round in 0..2 {
            std::fs::write(&db, format!("old {round}")).unwrap();
            std::fs::write(with_suffix(&db, "-wal"), format!("wal {round}")).unwrap();
            let incoming = dir.path().join("new.db");
            std::fs::write(&incoming, "new").unwrap();
            let aside = replace(&db, &incoming, "replaced").unwrap().unwrap();
            assert_eq!(
                std::fs::read_to_string(&aside).unwrap(),
                format!("old {round}")
            );
            assert_eq!(
                std::fs::read_to_string(with_suffix(&aside, "-wal")).unwrap(),
                format!("wal {round}")
            );
            assert_eq!(std::fs::read_to_string(&db).unwrap(), "new");
            assert!(!with_suffix(&db, "-wal").exists(), "the old WAL left");
            assert!(!intent_path(&db).exists());
            kept.push(aside);
        }
        assert_ne!(kept[0], kept[1], "the second is kept beside the first");
    }

    /// The states a crash after each step leaves, recovered.
    #[test]
    fn an_interrupted_replace_is_undone_before_the_rename_and_finished_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sqlite.db");
        let incoming = dir.path().join("new.db");
        let aside = dir.path().join("sqlite.db.replaced-x");
        let setup = || {
            std::fs::write(&db, "old").unwrap();
            std::fs::write(with_suffix(&db, "-wal"), "old wal").unwrap();
            std::fs::write(&incoming, "new").unwrap();
            let intent = Intent {
                incoming: incoming.clone(),
                aside: Some(aside.clone()),
                discard: false,
            };
            std::fs::write(intent_path(&db), serde_json::to_vec(&intent).unwrap()).unwrap();
        };
        // After step 2: undone.
        setup();
        keep_aside(&db, &aside).unwrap();
        assert!(recover(&db).unwrap().unwrap().contains("undid"));
        assert_eq!(std::fs::read_to_string(&db).unwrap(), "old");
        assert_eq!(
            std::fs::read_to_string(with_suffix(&db, "-wal")).unwrap(),
            "old wal"
        );
        assert!(!aside.exists() && !incoming.exists() && !intent_path(&db).exists());
        // After step 3: finished.
        setup();
        keep_aside(&db, &aside).unwrap();
        std::fs::rename(&incoming, &db).unwrap();
        assert!(recover(&db).unwrap().unwrap().contains("finished"));
        assert_eq!(std::fs::read_to_string(&db).unwrap(), "new");
        assert!(!with_suffix(&db, "-wal").exists());
        assert_eq!(
            std::fs::read_to_string(with_suffix(&aside, "-wal")).unwrap(),
            "old wal"
        );
        assert_eq!(recover(&db).unwrap(), None, "nothing left to do");
    }
}
