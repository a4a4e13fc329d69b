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
//!
//! The same file is also published in the reference's host layout
//! (`<root>/<hostname>/<device_id>/test.db`, a hard link where the file system has them),
//! because the reference's `aw-sync sync` and its Android app read only that layout: so
//! devices on either of the reference's layouts see this device's data.

use std::fs::File;
use std::path::{Path, PathBuf};

use aw_datastore::{with_suffix, Datastore};

use crate::error::{Result, SyncError};
use crate::folder::{Device, SyncFolder, FILE_NAME};

/// This device's file: where it is built and where it is published.
pub struct Outbox {
    folder: SyncFolder,
    device_id: String,
    /// The host folder's name, when the hostname can be one.
    host_folder: Option<String>,
    published: PathBuf,
    host_layout: Option<PathBuf>,
    work: PathBuf,
}

/// Whether `path` is a regular file itself (a link to one is not: HAZARDS 21).
fn is_plain_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

impl Outbox {
    /// The outbox of `device` in `folder`, built in `work_dir` (outside the folder).
    pub fn new(folder: &SyncFolder, device: &Device, work_dir: &Path) -> Outbox {
        let host_layout = folder.own_file_host_layout(&device.hostname, &device.device_id);
        Outbox {
            folder: folder.clone(),
            device_id: device.device_id.clone(),
            host_folder: host_layout.as_ref().map(|_| device.hostname.clone()),
            published: folder.own_file(&device.device_id),
            host_layout,
            work: work_dir.join(format!("{}.db", device.device_id)),
        }
    }

    /// The published file.
    pub fn published(&self) -> &Path {
        &self.published
    }

    /// Opens the working copy. When there is none yet but a published file exists (written
    /// before on this machine, possibly by the reference aw-sync, in either layout), that
    /// file is the start: it is copied in with its WAL, if the reference left one.
    pub fn open(&self) -> Result<Datastore> {
        if let Some(dir) = self.work.parent() {
            std::fs::create_dir_all(dir)
                .map_err(SyncError::io("cannot create the sync working folder", dir))?;
        }
        let earlier = std::iter::once(&self.published)
            .chain(&self.host_layout)
            .find(|p| is_plain_file(p));
        if let (false, Some(earlier)) = (self.work.exists(), earlier) {
            let wal = with_suffix(earlier, "-wal");
            if is_plain_file(&wal) {
                copy(&wal, &with_suffix(&self.work, "-wal"))?;
            }
            // Copied under another name first: a crash mid-copy leaves no half working copy.
            let partial = with_suffix(&self.work, ".partial");
            copy(earlier, &partial)?;
            std::fs::rename(&partial, &self.work).map_err(SyncError::io(
                "cannot create the sync working copy",
                &self.work,
            ))?;
        }
        Ok(Datastore::open(&self.work)?)
    }

    /// Closes the working copy and, when `changed` or a published copy is missing,
    /// publishes it in both layouts. Returns whether it published.
    pub fn close_and_publish(&self, store: Datastore, changed: bool) -> Result<bool> {
        // Answered once the connection is closed: the WAL is in the file and gone.
        store.close()?;
        drop(store);
        let missing = !is_plain_file(&self.published)
            || self.host_layout.as_ref().is_some_and(|p| !is_plain_file(p));
        if !changed && !missing {
            return Ok(false);
        }
        // Every folder on the way checked: no link below the root is written through.
        let device_dir = self.folder.folder_below(&[&self.device_id])?;
        let temp = fresh_temp(&device_dir)?;
        copy_into_new(&self.work, &temp)?;
        if let Some(host) = &self.host_folder {
            let dir = self.folder.folder_below(&[host, &self.device_id])?;
            // A second name for the same bytes, put in place before the first rename
            // moves the temporary file away.
            let other = fresh_temp(&dir)?;
            if std::fs::hard_link(&temp, &other).is_err() {
                copy_into_new(&temp, &other)?;
            }
            rename_durably(&other, &dir.join(FILE_NAME))?;
        }
        rename_durably(&temp, &device_dir.join(FILE_NAME))?;
        Ok(true)
    }
}

/// The dot-named temporary file in `dir`, with whatever had its name removed (a link is
/// removed, not followed); readers never take it for a sync file.
fn fresh_temp(dir: &Path) -> Result<PathBuf> {
    let temp = dir.join(format!(".{FILE_NAME}.aw-sync-tmp"));
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(SyncError::io("cannot replace", &temp)(e)),
    }
    Ok(temp)
}

/// Copies `from` into the new file `to` (`O_EXCL`: a link put there meanwhile fails the
/// copy instead of being written through) and syncs it to disk.
fn copy_into_new(from: &Path, to: &Path) -> Result<()> {
    let mut source = File::open(from).map_err(SyncError::io("cannot read", from))?;
    let mut target = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(SyncError::io("cannot create", to))?;
    std::io::copy(&mut source, &mut target)
        .map_err(SyncError::io("cannot copy the sync file", to))?;
    target.sync_all().map_err(SyncError::io("cannot sync", to))
}

/// Renames `from` over `to` and syncs the folder, so the rename survives a power loss
/// (the folder cannot be synced on Windows; there the rename is all).
fn rename_durably(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(SyncError::io("cannot publish the sync file", to))?;
    if let Some(dir) = to.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(SyncError::io("cannot copy the sync file", from))
}
