//! A damaged database file: noticed while serving, salvaged at the next start.
//!
//! When a request meets SQLite's "database disk image is malformed" (or "not a database"),
//! the server keeps serving what it can read and says so once in the log, and writes a
//! marker beside the database (`<database>.damaged`). At the next start, a marker or a
//! database that cannot even be opened makes the server salvage it first
//! ([`aw_datastore::salvage()`]): every readable bucket, event and setting goes into a fresh
//! file, the damaged one (with its WAL) is kept aside as `<database>.damaged-<time>`, and
//! the server goes on with the fresh one. `aw-server salvage` does the same by hand.
//!
//! Not done (yet): salvaging while the server runs. Until the restart, reads and writes that
//! touch the damaged pages fail with 500 (`"reason": "damaged"`); the rest goes on.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use aw_datastore::{DbPassword, SalvageReport};

static DATABASE: OnceLock<PathBuf> = OnceLock::new();
static NOTICED: AtomicBool = AtomicBool::new(false);

/// `path` with `suffix` added to its file name (`sqlite.db` → `sqlite.db-wal`).
pub fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// `path`, or `path-2`, `path-3`… if it exists: a file kept aside never replaces another.
pub fn unused(path: PathBuf) -> PathBuf {
    if !path.exists() {
        return path;
    }
    (2..)
        .map(|n| suffixed(&path, &format!("-{n}")))
        .find(|p| !p.exists())
        .unwrap_or(path)
}

/// The marker that asks the next start to salvage `db`.
pub fn marker(db: &Path) -> PathBuf {
    suffixed(db, ".damaged")
}

/// Which database the running server serves (for the marker).
pub fn serving(db: &Path) {
    let _ = DATABASE.set(db.to_path_buf());
}

/// Called when a request met a damaged page: logs it and writes the marker, once.
pub fn noticed(message: &str) {
    if NOTICED.swap(true, Ordering::Relaxed) {
        return;
    }
    let Some(db) = DATABASE.get() else {
        return;
    };
    log::error!(
        "The database {} is damaged ({message}). What can be read is still served; it will be \
         salvaged at the next start (or stop the server and run `aw-server salvage`).",
        db.display()
    );
    let text = serde_json::json!({ "time": chrono::Utc::now().to_rfc3339(), "error": message });
    if let Err(e) = std::fs::write(marker(db), text.to_string()) {
        log::error!("Cannot write {}: {e}", marker(db).display());
    }
}

/// Salvages `db` into a fresh file, keeps the damaged one (and its WAL) aside and puts the
/// fresh one in its place. The caller holds no connection to `db`.
pub fn salvage_in_place(
    db: &Path,
    password: Option<&DbPassword>,
) -> Result<(SalvageReport, PathBuf), String> {
    let stamp = chrono::Utc::now().format("%Y-%m-%dT%H-%M-%SZ");
    let fresh = suffixed(db, ".salvaging");
    for side in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(suffixed(&fresh, side));
    }
    let started = std::time::Instant::now();
    let report = aw_datastore::salvage(db, &fresh, password).map_err(|e| e.to_string())?;
    let aside = unused(suffixed(db, &format!(".damaged-{stamp}")));
    std::fs::rename(db, &aside).map_err(|e| format!("cannot move the damaged file aside: {e}"))?;
    for side in ["-wal", "-shm"] {
        let from = suffixed(db, side);
        if from.exists() {
            std::fs::rename(&from, suffixed(&aside, side))
                .map_err(|e| format!("cannot move {} aside: {e}", from.display()))?;
        }
    }
    std::fs::rename(&fresh, db)
        .map_err(|e| format!("cannot put the salvaged file in place: {e}"))?;
    let _ = std::fs::remove_file(marker(db));
    log::warn!(
        "Salvaged {} in {:.1?}: {} buckets, {} events, {} settings brought back{}{}; the \
         damaged file is kept at {}",
        db.display(),
        started.elapsed(),
        report.buckets,
        report.events,
        report.settings,
        if report.lost.is_empty() {
            String::new()
        } else {
            format!(
                "; unreadable id ranges: {}",
                report
                    .lost
                    .iter()
                    .map(|l| format!("{} {}-{}", l.table, l.from, l.to))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        if report.recovery_buckets.is_empty() {
            String::new()
        } else {
            format!(
                "; events of lost buckets are in {}",
                report.recovery_buckets.join(", ")
            )
        },
        aside.display()
    );
    Ok((report, aside))
}
