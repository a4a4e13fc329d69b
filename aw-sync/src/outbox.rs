//! This device's file in the sync folder, and how it is written so that a folder-sync
//! engine never ships half of it.
//!
//! The file is built in a private working copy outside the sync folder (an ordinary
//! datastore, written by `aw-datastore` itself, so its format is the reference's to the
//! byte: version 5, same tables and indexes). After a pass that changed it, the working
//! copy is closed (SQLite checkpoints the WAL into the file and removes it), copied to a
//! dot-named temporary file beside the published one, synced to disk and renamed over
//! `<root>/<device_id>/test.db`. So the engine (and any reader) only ever sees a complete,
//! closed database without side files, and a crash at any point leaves the previous
//! published file as it was (SYNC.md §7).

use std::fs::File;
use std::path::{Path, PathBuf};

use aw_datastore::Datastore;

use crate::error::{Result, SyncError};
use crate::folder::SyncFolder;

/// This device's file: where it is built and where it is published.
pub struct Outbox {
    published: PathBuf,
    work: PathBuf,
}

impl Outbox {
    /// The outbox of `device_id` in `folder`, built in `work_dir` (outside the folder).
    pub fn new(folder: &SyncFolder, device_id: &str, work_dir: &Path) -> Outbox {
        Outbox {
            published: folder.own_file(device_id),
            work: work_dir.join(format!("{device_id}.db")),
        }
    }

    /// The published file.
    pub fn published(&self) -> &Path {
        &self.published
    }

    /// Opens the working copy. When there is none yet but a published file exists (written
    /// before on this machine, possibly by the reference aw-sync), that file is the start:
    /// it is copied in with its WAL, if the reference left one.
    pub fn open(&self) -> Result<Datastore> {
        if let Some(dir) = self.work.parent() {
            std::fs::create_dir_all(dir)
                .map_err(SyncError::io("cannot create the sync working folder", dir))?;
        }
        if !self.work.exists() && self.published.exists() {
            let wal = with_suffix(&self.published, "-wal");
            if wal.exists() {
                copy(&wal, &with_suffix(&self.work, "-wal"))?;
            }
            // Copied under another name first: a crash mid-copy leaves no half working copy.
            let partial = with_suffix(&self.work, ".partial");
            copy(&self.published, &partial)?;
            std::fs::rename(&partial, &self.work).map_err(SyncError::io(
                "cannot create the sync working copy",
                &self.work,
            ))?;
        }
        Ok(Datastore::open(&self.work)?)
    }

    /// Closes the working copy and, when `changed` or nothing is published yet, publishes
    /// it: copy to a temporary name, sync, rename over the published file, sync the folder.
    pub fn close_and_publish(&self, store: Datastore, changed: bool) -> Result<bool> {
        // Answered once the connection is closed: the WAL is in the file and gone.
        store.close().wait()?;
        drop(store);
        if !changed && self.published.exists() {
            return Ok(false);
        }
        let dir = self
            .published
            .parent()
            .ok_or_else(|| SyncError::Config("the sync file has no folder".into()))?;
        std::fs::create_dir_all(dir)
            .map_err(SyncError::io("cannot create the device folder", dir))?;
        let temp = dir.join(format!(".{}.aw-sync-tmp", crate::folder::FILE_NAME));
        copy(&self.work, &temp)?;
        File::open(&temp)
            .and_then(|f| f.sync_all())
            .map_err(SyncError::io("cannot sync", &temp))?;
        std::fs::rename(&temp, &self.published).map_err(SyncError::io(
            "cannot publish the sync file",
            &self.published,
        ))?;
        // The rename itself is durable once the folder is synced (not possible on Windows).
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(true)
    }
}

/// `path` with `suffix` appended to its file name (`test.db` → `test.db-wal`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(SyncError::io("cannot copy the sync file", from))
}
