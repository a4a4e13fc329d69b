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

/// Whether rewriting bytes of `file` that already have disk blocks can still need new
/// space: true on copy-on-write file systems (btrfs, ZFS, bcachefs, NILFS, APFS), where
/// every overwrite goes to new blocks, so [`preallocate`] promises nothing and a write into
/// a preallocated file can fail with "no space" like any other. A write through a shared
/// memory mapping cannot fail with an error: the process is killed (SIGBUS) instead, so
/// such files must be written with system calls there.
pub fn overwrites_need_space(file: &File) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: statfs is plain data; all-zero is a valid value of it.
        let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: the descriptor is open and `stat` a valid, writable statfs.
        if unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) } != 0 {
            // Unknown: assume the worst.
            return true;
        }
        #[allow(clippy::unnecessary_cast)]
        is_copy_on_write(stat.f_type as u64)
    }
    #[cfg(target_os = "macos")]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: statfs is plain data; all-zero is a valid value of it.
        let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: the descriptor is open and `stat` a valid, writable statfs.
        if unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) } != 0 {
            return true;
        }
        // SAFETY: the kernel writes a NUL-terminated name into the fixed-size array.
        let name = unsafe { std::ffi::CStr::from_ptr(stat.f_fstypename.as_ptr()) };
        matches!(name.to_bytes(), b"apfs" | b"zfs")
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = file;
        true
    }
}

/// Whether the Linux file system with magic number `f_type` (`statfs`) writes every
/// overwrite to new blocks.
#[cfg(target_os = "linux")]
fn is_copy_on_write(f_type: u64) -> bool {
    const BTRFS: u64 = 0x9123_683E;
    const ZFS: u64 = 0x2FC1_2FC1;
    const BCACHEFS: u64 = 0xCA45_1A4E;
    const NILFS: u64 = 0x3434;
    matches!(f_type, BTRFS | ZFS | BCACHEFS | NILFS)
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

    #[cfg(target_os = "linux")]
    #[test]
    fn copy_on_write_file_systems_are_told_apart() {
        assert!(super::is_copy_on_write(0x9123_683E), "btrfs");
        assert!(super::is_copy_on_write(0x2FC1_2FC1), "zfs");
        assert!(!super::is_copy_on_write(0xEF53), "ext4");
        assert!(!super::is_copy_on_write(0x0102_1994), "tmpfs");
        assert!(!super::is_copy_on_write(0x5846_5342), "xfs");
        let file = tempfile::tempfile().unwrap();
        // Whatever the test folder is on, the answer comes without an error.
        let _ = super::overwrites_need_space(&file);
    }
}
