//! The sync folder: where this device's file goes and which files are other devices'.
//!
//! One layout is written: `<root>/<device_id>/test.db` (the reference's device layout, the
//! one its daemon uses). Both of the reference's layouts are read, so devices that ran the
//! reference's `aw-sync sync` or its Android app are pulled too: `<root>/<dir>/*.db`
//! (device layout) and `<root>/<hostname>/<dir>/*.db` (host layout). In both, the folder a
//! file sits in is the device id of the device that wrote it.
//!
//! Unlike the reference, a file is this device's own only when that folder *is* this
//! device's id (not when the path merely contains it: COMPATIBILITY.md, sync #12); dot-folders and dot-files
//! (a sync engine's temporary files, ours while publishing) and Syncthing's
//! `.sync-conflict-` copies are never read.
//!
//! No symbolic link below the root is followed, reading or writing (COMPATIBILITY.md, server #21): a folder
//! sync engine copies links, so a device could plant one that makes us import our own
//! database as a peer, or write our file somewhere outside the folder. The root itself may
//! be a link (`~/Sync` → a mount); it is resolved once, when the folder is set up.

use std::path::{Path, PathBuf};

use crate::error::{Result, SyncError};

/// The file name every device writes its data to.
pub(crate) const FILE_NAME: &str = "test.db";

/// This device, as the sync folder knows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Device {
    /// The server's device id: the name of this device's folder.
    pub device_id: String,
    /// The hostname written into pushed buckets' data as `$aw.sync.origin`
    /// (`pass::ORIGIN_KEY`).
    pub hostname: String,
}

/// A sync folder, shared between devices by a folder-sync engine.
#[derive(Clone, Debug)]
pub struct SyncFolder {
    root: PathBuf,
}

/// Another device's file in the sync folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerPath {
    /// The file.
    pub path: PathBuf,
    /// The device that wrote it: the name of the folder it is in.
    pub device_id: String,
    /// The host folder, for files in the reference's host layout.
    pub host_folder: Option<String>,
}

/// Whether the directory entry name is one a sync never reads.
fn ignored(name: &str) -> bool {
    name.starts_with('.') || name.contains(".sync-conflict-")
}

/// The `.db` files directly in `dir`, sorted by name; a missing folder has none.
fn db_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in entries(dir)? {
        let path = entry.path();
        let is_db = path.extension().is_some_and(|e| e == "db");
        if is_db && entry.file_type().is_ok_and(|t| t.is_file()) {
            files.push(path);
        }
    }
    Ok(files)
}

/// The entries of `dir` that a sync may read, sorted by name.
fn entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SyncError::io("cannot list the sync folder", dir)(e)),
    };
    let mut entries: Vec<_> = read
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(|n| !ignored(n)))
        .filter(|e| {
            // The entry itself, never what it points to.
            let link = e.file_type().map_or(true, |t| t.is_symlink());
            if link {
                log::warn!(
                    "Ignoring {}: aw-sync follows no link in the sync folder",
                    e.path().display()
                );
            }
            !link
        })
        .collect();
    entries.sort_by_key(|e| e.file_name());
    Ok(entries)
}

/// The entry's name as text (entries() keeps only UTF-8 names).
fn name_of(entry: &std::fs::DirEntry) -> String {
    entry.file_name().to_string_lossy().into_owned()
}

impl SyncFolder {
    /// The sync folder at `root` (created when this device first publishes). A root that
    /// exists is resolved here, once: it may be a link, nothing below it may.
    pub fn new(root: impl Into<PathBuf>) -> SyncFolder {
        let root = root.into();
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        SyncFolder { root }
    }

    /// Creates (when missing) the folder `parts` below the root, one level at a time, and
    /// refuses any level that is a link or not a folder: what is written there stays under
    /// the root.
    pub fn folder_below(&self, parts: &[&str]) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.root)
            .map_err(SyncError::io("cannot create the sync folder", &self.root))?;
        let mut dir = self.root.clone();
        for part in parts {
            if part.is_empty() || *part == "." || *part == ".." || part.contains(['/', '\\']) {
                return Err(SyncError::Config(format!(
                    "'{part}' cannot be a folder name in the sync folder"
                )));
            }
            dir.push(part);
            match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(SyncError::io("cannot create", &dir)(e)),
            }
            let kind = std::fs::symlink_metadata(&dir)
                .map_err(SyncError::io("cannot read", &dir))?
                .file_type();
            if !kind.is_dir() {
                return Err(SyncError::Config(format!(
                    "'{}' is a link or a file, not a folder: aw-sync writes nowhere through it",
                    dir.display()
                )));
            }
        }
        Ok(dir)
    }

    /// The folder's root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder only this device writes to.
    pub fn own_dir(&self, device_id: &str) -> PathBuf {
        self.root.join(device_id)
    }

    /// This device's file.
    pub fn own_file(&self, device_id: &str) -> PathBuf {
        self.own_dir(device_id).join(FILE_NAME)
    }

    /// This device's file in the reference's host layout,
    /// `<root>/<hostname>/<device_id>/test.db`, which the reference's `aw-sync sync` and
    /// its Android app read (they never read the device layout). `None` for a hostname
    /// that cannot be a folder name (empty, `unknown`, dots, separators).
    pub fn own_file_host_layout(&self, hostname: &str, device_id: &str) -> Option<PathBuf> {
        let usable = !hostname.is_empty()
            && hostname != "unknown"
            && hostname != device_id
            && !ignored(hostname)
            && !hostname.contains(['/', '\\', ':'])
            && hostname != "..";
        usable.then(|| self.root.join(hostname).join(device_id).join(FILE_NAME))
    }

    /// Every other device's file, in both layouts, sorted by path.
    pub fn peers(&self, own_device_id: &str) -> Result<Vec<PeerPath>> {
        let mut peers = Vec::new();
        for top in subfolders(&self.root)? {
            let top_name = name_of(&top);
            files_of(&mut peers, &top.path(), &top_name, None)?;
            for inner in subfolders(&top.path())? {
                files_of(&mut peers, &inner.path(), &name_of(&inner), Some(&top_name))?;
            }
        }
        peers.retain(|p| p.device_id != own_device_id);
        peers.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(peers)
    }
}

/// The folders in `dir` a sync may read.
fn subfolders(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    let mut found = entries(dir)?;
    found.retain(|e| e.file_type().is_ok_and(|t| t.is_dir()));
    Ok(found)
}

/// Adds the `.db` files of device folder `dir` (of `host_folder`, in the host layout).
fn files_of(
    peers: &mut Vec<PeerPath>,
    dir: &Path,
    device_id: &str,
    host_folder: Option<&str>,
) -> Result<()> {
    for path in db_files(dir)? {
        peers.push(PeerPath {
            path,
            device_id: device_id.to_string(),
            host_folder: host_folder.map(str::to_string),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }

    #[test]
    fn finds_peers_in_both_layouts_and_never_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(&root.join("dev/test.db"));
        touch(&root.join("dev-b/test.db"));
        touch(&root.join("dev-b/test.sync-conflict-20260101-000000-ABC.db"));
        touch(&root.join("dev-b/.test.db.tmp"));
        touch(&root.join("laptop/dev-c/test.db"));
        touch(&root.join("laptop/dev/test.db"));
        touch(&root.join(".stfolder/x/test.db"));
        touch(&root.join("dev-d/notes.txt"));
        let peers = SyncFolder::new(root).peers("dev").unwrap();
        let found: Vec<_> = peers
            .iter()
            .map(|p| (p.device_id.as_str(), p.host_folder.as_deref()))
            .collect();
        // "dev" is a prefix of "dev-b": still a peer (the reference filtered it out).
        assert_eq!(found, [("dev-b", None), ("dev-c", Some("laptop"))]);
    }

    #[test]
    fn a_missing_folder_has_no_peers() {
        let dir = tempfile::tempdir().unwrap();
        let folder = SyncFolder::new(dir.path().join("nothing"));
        assert!(folder.peers("dev").unwrap().is_empty());
    }

    #[test]
    fn links_below_the_root_are_never_followed_but_the_root_may_be_one() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        let outside = dir.path().join("outside");
        touch(&real.join("dev-b/test.db"));
        touch(&outside.join("dev-x/test.db"));
        touch(&outside.join("own.db"));
        // A linked device folder, a linked file, and a link in the host layout.
        symlink(outside.join("dev-x"), real.join("dev-x")).unwrap();
        std::fs::create_dir_all(real.join("dev-y")).unwrap();
        symlink(outside.join("own.db"), real.join("dev-y/test.db")).unwrap();
        std::fs::create_dir_all(real.join("laptop")).unwrap();
        symlink(outside.join("dev-x"), real.join("laptop/dev-z")).unwrap();
        let root = dir.path().join("root-link");
        symlink(&real, &root).unwrap();

        let folder = SyncFolder::new(&root);
        assert_eq!(folder.root(), real.canonicalize().unwrap());
        let found: Vec<_> = folder
            .peers("dev")
            .unwrap()
            .into_iter()
            .map(|p| p.device_id)
            .collect();
        assert_eq!(found, ["dev-b"]);

        // Writing: a device folder that is a link is refused, not written through.
        symlink(&outside, real.join("dev")).unwrap();
        let text = folder.folder_below(&["dev"]).unwrap_err().to_string();
        assert!(text.contains("is a link or a file"), "{text}");
        assert!(folder.folder_below(&["..", "x"]).is_err());
        assert_eq!(
            folder.folder_below(&["laptop", "dev-new"]).unwrap(),
            real.canonicalize().unwrap().join("laptop/dev-new")
        );
    }
}
