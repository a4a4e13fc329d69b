//! How far each peer bucket has been pulled, kept apart from the pulled data.
//!
//! The reference resumed from the destination's newest event, so a local write into an
//! imported bucket moved the resume point and skipped the peer's events (COMPATIBILITY.md, sync #11).
//! Here the resume point of `(peer file, source bucket)` is the position of the last
//! event pulled in the peer file's read order ([`PageCursor`]: start, end, row id), saved
//! after each page once the server has committed it. The next pull reads only what comes
//! after it, plus the growth of that last event (a peer extends its newest event in place
//! while it lasts), so events the server changed on the way in (privacy filters) are never
//! compared with their source again.
//!
//! A resume point is trusted even when the server's copy ends before it: the user deleted
//! those events (`DELETE …/events?start&end`), and the next pull must not bring them back.
//! When the server's database was put back or salvaged instead (it lost writes it had
//! pulled), the server forgets every resume point ([`forget_all`], [`crate::Syncer::forget_pulls`]),
//! the next pull starts from the server's newest event of each bucket, and
//! [`crate::transfer::write_page`] skips whatever is there already. A pulled bucket deleted
//! as a whole is pulled again from its start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Result, SyncError};
use crate::peer::PageCursor;

/// The name of a device's resume points file in the work folder.
pub(crate) fn file_name(device_id: &str) -> String {
    format!("{device_id}.pulled.json")
}

/// Forgets every device's resume points kept in `work_dir` (after the server's database
/// was put back from a backup); returns how many files went.
pub fn forget_all(work_dir: &Path) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(work_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .ends_with(".pulled.json")
        {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The saved resume points, in a small JSON file outside the sync folder.
pub(crate) struct Cursors {
    path: PathBuf,
    points: BTreeMap<String, PageCursor>,
}

/// The key of a bucket of a peer file (its path in the sync folder).
fn key(file: &str, bucket_id: &str) -> String {
    format!("{file}\u{0}{bucket_id}")
}

impl Cursors {
    /// Loads the file; a missing or unreadable file starts empty (pulls then start over,
    /// which is slower but correct).
    pub(crate) fn load(path: &Path) -> Cursors {
        let points = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                log::warn!(
                    "Ignoring the unreadable sync state '{}': {e}",
                    path.display()
                );
                BTreeMap::new()
            }),
            Err(_) => BTreeMap::new(),
        };
        Cursors {
            path: path.to_path_buf(),
            points,
        }
    }

    /// The position of the last event pulled from the bucket.
    pub(crate) fn get(&self, file: &str, bucket_id: &str) -> Option<PageCursor> {
        self.points.get(&key(file, bucket_id)).copied()
    }

    /// Records the last event pulled and saves the file (written aside and renamed).
    pub(crate) fn set(&mut self, file: &str, bucket_id: &str, at: PageCursor) -> Result<()> {
        if self.points.get(&key(file, bucket_id)) == Some(&at) {
            return Ok(());
        }
        self.points.insert(key(file, bucket_id), at);
        self.save()
    }

    /// Forgets where the bucket's pull stopped (it starts over) and saves the file.
    pub(crate) fn remove(&mut self, file: &str, bucket_id: &str) -> Result<()> {
        if self.points.remove(&key(file, bucket_id)).is_none() {
            return Ok(());
        }
        self.save()
    }

    fn save(&self) -> Result<()> {
        let text = serde_json::to_vec(&self.points)
            .map_err(|e| SyncError::Config(format!("cannot write the sync state: {e}")))?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(SyncError::io("cannot create", dir))?;
        }
        let temp = aw_datastore::with_suffix(&self.path, ".tmp");
        std::fs::write(&temp, text).map_err(SyncError::io("cannot write", &temp))?;
        std::fs::rename(&temp, &self.path).map_err(SyncError::io("cannot write", &self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgetting_removes_every_devices_resume_points_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.pulled.json", "b.pulled.json", "a.db", "a.db.published"] {
            std::fs::write(dir.path().join(name), "{}").unwrap();
        }
        assert_eq!(forget_all(dir.path()).unwrap(), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["a.db", "a.db.published"]);
        assert_eq!(forget_all(&dir.path().join("missing")).unwrap(), 0);
    }
}
