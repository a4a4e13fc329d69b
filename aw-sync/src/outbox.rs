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
//! published file as it was.
//!
//! The working copy is built only from the server's own data: the published file is
//! never read back into it (anyone sharing the folder can write that file), and a
//! published copy that is not what this device wrote is replaced at the next pass.
//!
//! The same file is also published in the reference's host layout
//! (`<root>/<hostname>/<device_id>/test.db`, a hard link where the file system has them),
//! because the reference's `aw-sync sync` and its Android app read only that layout: so
//! devices on either of the reference's layouts see this device's data.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use aw_datastore::{with_suffix, Datastore, DayDigest};
use rusqlite::{params, Connection};

use crate::day_table::{CREATE_DAY_TABLE_SQL, DAY_TABLE};
use crate::error::{Result, SyncError};
use crate::folder::{Device, SyncFolder, FILE_NAME};

/// The day digests of the working copy: bucket id → day → digest.
pub(crate) type PublishedDays = BTreeMap<String, BTreeMap<i64, String>>;

/// What a push changed of the working copy's day table.
#[derive(Default)]
pub(crate) struct DayUpdates {
    /// `(bucket, day, its digest now)`; `None`: the day has no events any more.
    pub days: Vec<(String, i64, Option<DayDigest>)>,
    /// Buckets gone from the server, with all their days.
    pub removed_buckets: Vec<String>,
}

impl DayUpdates {
    /// Whether nothing changed.
    pub(crate) fn is_empty(&self) -> bool {
        self.days.is_empty() && self.removed_buckets.is_empty()
    }
}

/// This device's file: where it is built and where it is published.
pub(crate) struct Outbox {
    folder: SyncFolder,
    device_id: String,
    /// The host folder's name, when the hostname can be one.
    host_folder: Option<String>,
    published: PathBuf,
    host_layout: Option<PathBuf>,
    work: PathBuf,
}

impl Outbox {
    /// The outbox of `device` in `folder`, built in `work_dir` (outside the folder).
    pub(crate) fn new(folder: &SyncFolder, device: &Device, work_dir: &Path) -> Outbox {
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
    pub(crate) fn published(&self) -> &Path {
        &self.published
    }

    /// Opens the working copy; when there is none (a first run, a cleared work folder) or
    /// it cannot be opened, starts an empty one, which the push fills from the server's own
    /// database. The published file is never the start: any device sharing the folder can
    /// write it, and opened as a datastore its triggers would run and its push resume
    /// points would be believed (a far-future one stops this device's data from ever being
    /// published). The cost is one full push after the work folder is lost.
    pub(crate) fn open(&self) -> Result<Datastore> {
        if let Some(dir) = self.work.parent() {
            std::fs::create_dir_all(dir)
                .map_err(SyncError::io("cannot create the sync working folder", dir))?;
        }
        if !self.work.exists() {
            self.forget_working_copy()?;
        }
        match Datastore::open(&self.work) {
            Ok(store) => Ok(store),
            Err(e) => {
                log::warn!(
                    "Cannot open the sync working copy {}, building it anew from this device's data: {e}",
                    self.work.display()
                );
                self.forget_working_copy()?;
                Ok(Datastore::open(&self.work)?)
            }
        }
    }

    /// The working copy's day digests, or `None` when it has no day table: it is missing,
    /// or was built by a version whose file did not keep the server's event ids (then the
    /// caller starts it anew, [`Outbox::forget_working_copy`]).
    /// A working copy that cannot be read is as good as none (it is built anew).
    pub(crate) fn published_days(&self) -> Option<PublishedDays> {
        if !self.work.exists() {
            return None;
        }
        self.read_published_days().unwrap_or_else(|e| {
            log::warn!("Building the sync working copy anew: {e}");
            None
        })
    }

    fn read_published_days(&self) -> Result<Option<PublishedDays>> {
        let sql = |e: rusqlite::Error| SyncError::Config(format!("sync working copy: {e}"));
        // Read-write: a WAL a crash left beside it is recovered, not an error (the file is
        // private, and nothing else has it open between passes).
        let conn = Connection::open(&self.work).map_err(sql)?;
        let present: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = ?1",
                [DAY_TABLE],
                |r| r.get(0),
            )
            .map_err(sql)?;
        if present == 0 {
            return Ok(None);
        }
        let mut stmt = conn
            .prepare("SELECT bucket, day, digest FROM aw_sync_day")
            .map_err(sql)?;
        let mut rows = stmt.query([]).map_err(sql)?;
        let mut days = PublishedDays::new();
        while let Some(row) = rows.next().map_err(sql)? {
            let (bucket, day, digest): (String, i64, String) = (
                row.get(0).map_err(sql)?,
                row.get(1).map_err(sql)?,
                row.get(2).map_err(sql)?,
            );
            days.entry(bucket).or_default().insert(day, digest);
        }
        Ok(Some(days))
    }

    /// Starts the working copy anew (see [`Outbox::published_days`]).
    pub(crate) fn start_anew(&self) -> Result<()> {
        self.forget_working_copy()
    }

    /// Writes `updates` into the closed working copy's day table (created if missing).
    fn write_days(&self, updates: &DayUpdates) -> Result<()> {
        let sql = |e: rusqlite::Error| SyncError::Config(format!("sync working copy: {e}"));
        let mut conn = Connection::open(&self.work).map_err(sql)?;
        let tx = conn.transaction().map_err(sql)?;
        tx.execute_batch(CREATE_DAY_TABLE_SQL).map_err(sql)?;
        for bucket in &updates.removed_buckets {
            tx.execute("DELETE FROM aw_sync_day WHERE bucket = ?1", [bucket])
                .map_err(sql)?;
        }
        for (bucket, day, digest) in &updates.days {
            match digest {
                Some(d) => tx.execute(
                    "INSERT OR REPLACE INTO aw_sync_day (bucket, day, count, digest) \
                     VALUES (?1, ?2, ?3, ?4)",
                    params![bucket, day, d.count as i64, d.digest],
                ),
                None => tx.execute(
                    "DELETE FROM aw_sync_day WHERE bucket = ?1 AND day = ?2",
                    params![bucket, day],
                ),
            }
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        conn.close().map_err(|(_, e)| sql(e))
    }

    /// Removes the working copy and the files beside it (a WAL or a journal without their
    /// database would be taken for the new one's).
    fn forget_working_copy(&self) -> Result<()> {
        remove_working_copy(&self.work)
    }

    /// Closes the working copy and, when `changed` or a published copy is not the one this
    /// device last published (missing, or written by someone else: see `stamps`),
    /// publishes it in both layouts. Returns whether it published.
    /// With `days` (a server that tells its day digests), the day table is written first.
    pub(crate) fn close_and_publish(
        &self,
        store: Datastore,
        changed: bool,
        days: Option<&DayUpdates>,
    ) -> Result<bool> {
        // Answered once the connection is closed: the WAL is in the file and gone.
        store.close()?;
        drop(store);
        let changed = match days {
            Some(days) => {
                self.write_days(days)?;
                changed || !days.is_empty()
            }
            None => changed,
        };
        let recorded = std::fs::read(self.stamps_path()).unwrap_or_default();
        if !changed && recorded == self.stamps() {
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
        // Not recorded: the next pass publishes again, which is all a lost record costs.
        let _ = std::fs::write(self.stamps_path(), self.stamps());
        Ok(true)
    }

    /// Where the published copies' stamps are recorded: beside the working copy.
    fn stamps_path(&self) -> PathBuf {
        with_suffix(&self.work, ".published")
    }

    /// The published copies as found now: each one's size and time of change, or nothing
    /// when it is missing or not a plain file (a link). After a publication they are
    /// recorded; a copy whose stamp differs at the next pass was written by someone else
    /// (any device can write the folder, and this device never reads its copy back) and is
    /// published again, whether or not this device's data changed.
    fn stamps(&self) -> Vec<u8> {
        let mut text = String::new();
        for path in std::iter::once(&self.published).chain(&self.host_layout) {
            let stamp = std::fs::symlink_metadata(path)
                .ok()
                .filter(|m| m.file_type().is_file())
                .map(|m| {
                    let modified = m
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos());
                    format!("{} {modified}", m.len())
                });
            text.push_str(stamp.as_deref().unwrap_or("missing"));
            text.push('\n');
        }
        text.into_bytes()
    }
}

fn remove_working_copy(work: &Path) -> Result<()> {
    for suffix in ["", "-wal", "-shm", ".journal", ".partial", ".published"] {
        let path = with_suffix(work, suffix);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(SyncError::io("cannot remove", &path)(e)),
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_working_copy_that_cannot_be_read_is_built_anew() {
        let root = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let device = Device {
            device_id: "me".into(),
            hostname: "host".into(),
        };
        let outbox = Outbox::new(&SyncFolder::new(root.path()), &device, work.path());
        assert!(outbox.published_days().is_none(), "none yet");
        std::fs::write(work.path().join("me.db"), b"not a database at all").unwrap();
        assert!(outbox.published_days().is_none());
        // A copy of an older version (no day table) is not taken either.
        std::fs::remove_file(work.path().join("me.db")).unwrap();
        drop(Datastore::open(&work.path().join("me.db")).unwrap());
        assert!(outbox.published_days().is_none());
        // One with the table is read.
        outbox.write_days(&DayUpdates::default()).unwrap();
        assert_eq!(outbox.published_days(), Some(PublishedDays::new()));
    }
}
