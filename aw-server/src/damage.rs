//! A damaged database file, at the start and by hand.
//!
//! While the server runs, a request that meets a damaged page makes the datastore's worker
//! salvage the file at once and go on with the copy (`aw_datastore`'s `live_salvage.rs`).
//! If that fails, or the process ends first, the marker it wrote (`<database>.damaged`)
//! is still there: a start that finds it, or whose open meets damage, salvages first
//! ([`aw_datastore::salvage()`]): every readable bucket, event and setting goes into a fresh
//! file, the damaged one (with its WAL) is kept aside as `<database>.damaged-<time>`, and
//! the server goes on with the fresh one. `aw-server salvage` does the same by hand.

use std::path::{Path, PathBuf};

use aw_datastore::{DbPassword, SalvageReport};

/// The marker that asks the next start to salvage `db`.
pub(crate) fn marker(db: &Path) -> PathBuf {
    aw_datastore::damage_marker(db)
}

/// Salvages `db` into a fresh file, keeps the damaged one (and its WAL) aside and puts the
/// fresh one in its place. The caller holds no connection to `db`.
pub(crate) fn salvage_in_place(
    db: &Path,
    password: Option<&DbPassword>,
) -> Result<(SalvageReport, PathBuf), String> {
    let started = std::time::Instant::now();
    let fresh = aw_datastore::salvage_target(db);
    let report = aw_datastore::salvage(db, &fresh, password).map_err(|e| e.to_string())?;
    let aside = aw_datastore::replace_with_salvaged(db, &fresh).map_err(|e| e.to_string())?;
    log::warn!(
        "Salvaged {} in {:.1?}: {}; the damaged file is kept at {}",
        db.display(),
        started.elapsed(),
        report.summary(),
        aside.display()
    );
    Ok((report, aside))
}
