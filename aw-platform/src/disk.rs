//! What a program asks of the disk beyond reading and writing: free space, space reserved
//! ahead of need, and making a folder's changes (a rename, a new file) durable.

use std::fs::File;
use std::path::Path;

/// Bytes an unprivileged user may still write on `path`'s file system; `None` where that
/// cannot be told (then callers go ahead and let the write itself fail).
pub fn free_bytes(path: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: statvfs is plain data; all-zero is a valid value of it.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c_path` is a valid C string and `stat` a valid, writable statvfs.
        let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
        #[allow(clippy::unnecessary_cast)]
        (rc == 0).then(|| (stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Makes sure the first `len` bytes of `file` have disk blocks, so that writing there later
/// never needs new space (a file that only grew by `set_len` is sparse: its first write
/// after the disk filled would fail). Fails when the disk has no room for them now.
pub fn preallocate(file: &File, len: u64) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        let len = libc::off_t::try_from(len).map_err(std::io::Error::other)?;
        // SAFETY: the descriptor is open for writing for the call's length.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
        match rc {
            0 => Ok(()),
            // File systems without fallocate: growing the file is the best left.
            libc::EOPNOTSUPP | libc::EINVAL => grow(file, len as u64),
            e => Err(std::io::Error::from_raw_os_error(e)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        grow(file, len)
    }
}

/// Grows `file` to `len` bytes by writing zeros (never shrinks it).
fn grow(file: &File, len: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let have = file.metadata()?.len();
    if have >= len {
        return Ok(());
    }
    let mut writer = file;
    writer.seek(SeekFrom::Start(have))?;
    let zeros = vec![0u8; 64 << 10];
    let mut left = len - have;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        writer.write_all(&zeros[..n])?;
        left -= n as u64;
    }
    Ok(())
}

/// Makes the entries of `folder` durable (a rename or a new name in it survives a power
/// cut). Best effort: where folders cannot be opened (Windows) there is nothing to do.
pub fn sync_folder(folder: &Path) -> std::io::Result<()> {
    match File::open(folder) {
        Ok(dir) => dir.sync_all(),
        Err(_) if cfg!(not(unix)) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preallocated_space_is_the_files_and_free_space_is_known() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = File::create(&path).unwrap();
        preallocate(&file, 1 << 20).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 1 << 20);
        preallocate(&file, 1 << 10).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 1 << 20, "never shrinks");
        assert!(free_bytes(dir.path()).unwrap() > 0);
        sync_folder(dir.path()).unwrap();
    }
}
