//! The datastore's error type.

use thiserror::Error;

/// Everything a datastore operation can fail with. The server maps each variant to one HTTP
/// status (see `aw-server`'s error module); the messages of the first three are the
/// reference's, which clients display.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DatastoreError {
    /// The bucket id names no bucket.
    #[error("The requested bucket '{0}' does not exist")]
    NoSuchBucket(String),
    /// Creating a bucket whose id is taken.
    #[error("Bucket '{0}' already exists")]
    BucketAlreadyExists(String),
    /// A key-value lookup of a missing key.
    #[error("The requested key(s) '{0}' do not exist")]
    NoSuchKey(String),
    /// An event id that is not an event of the given bucket.
    #[error("The requested event {1} does not exist in bucket '{0}'")]
    NoSuchEvent(String, i64),
    /// An event that cannot be stored, or an id that addresses another bucket's event.
    #[error("{0}")]
    InvalidEvent(String),
    /// What a request counted on is no longer so (a range deletion's previewed count):
    /// nothing was changed; the caller looks again.
    #[error("{0}")]
    Changed(String),
    /// The database file is held by another process (another server on the same file).
    #[error(
        "The database '{0}' is in use by another process (is another aw-server running on it?)"
    )]
    Locked(String),
    /// The database was written by a newer, unknown schema version.
    #[error("Database has version {0} while the supported version is {1}")]
    UnsupportedDbVersion(i64, i64),
    /// The worker thread has stopped (after `close`, or because it failed).
    #[error("Failed to send request, datastore worker is gone")]
    WorkerGone,
    /// The database cannot take writes for now (a failing commit); the writes already
    /// acknowledged are kept in memory and written when it can (`worker/group_commit.rs`).
    #[error("Database unavailable: {0}")]
    Unavailable(String),
    /// The disk (or a quota) is full: this write is refused; the writes already
    /// acknowledged are kept in memory and written when space returns (`worker/group_commit.rs`).
    #[error("The disk is full: {0}")]
    DiskFull(Failure),
    /// The database cannot be read with the password given (or without one), or this build
    /// cannot encrypt. The message never contains the password.
    #[error("{0}")]
    Encryption(String),
    /// The database file is damaged (SQLite's "malformed" or "not a database"): what can
    /// be read of it can be salvaged ([`crate::file::salvage()`]).
    #[error("The database file is damaged: {0}")]
    Damaged(Failure),
    /// The file is busy or locked by another connection (SQLite's `SQLITE_BUSY` or
    /// `SQLITE_LOCKED`) beyond the busy timeout.
    #[error("Database busy: {0}")]
    Busy(Failure),
    /// SQLite failed: read-only file, I/O error, or another error.
    #[error("Database error: {0}")]
    Sql(Failure),
    /// A file beside the database (the journal, the lock, a copy) could not be read or
    /// written.
    #[error("File error: {0}")]
    Io(Failure),
}

/// A storage failure with what caused it kept beside its message: SQLite's extended
/// result code when SQLite failed, the I/O error's kind when a file operation did. So a
/// caller tells a read-only file from a locked one, or a missing file from a permission,
/// without reading text; the message (what users see) is unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong, as users read it.
    pub message: String,
    /// SQLite's extended result code (`SQLITE_IOERR_WRITE`, …), when SQLite failed.
    pub sqlite_code: Option<i32>,
    /// The I/O error's kind, when a file operation failed.
    pub io_kind: Option<std::io::ErrorKind>,
    /// The file a failed file operation was about (the journal, a backup, the database).
    pub path: Option<std::path::PathBuf>,
}

impl Failure {
    /// A failed operation on the file at `path`, told as `message`.
    pub(crate) fn of_file(message: String, path: &std::path::Path, e: &std::io::Error) -> Failure {
        Failure {
            message,
            sqlite_code: None,
            io_kind: Some(e.kind()),
            path: Some(path.to_path_buf()),
        }
    }
}

impl DatastoreError {
    /// SQLite's error `e` while doing `operation` on the file at `path`: classified by its
    /// code ([`classify`]), the code and the file kept.
    pub(crate) fn sqlite(
        operation: &str,
        path: &std::path::Path,
        e: &rusqlite::Error,
    ) -> DatastoreError {
        let mut failure = Failure::from(e);
        failure.message = format!("cannot {operation} '{}': {e}", path.display());
        failure.path = Some(path.to_path_buf());
        classify(e.sqlite_error_code(), failure)
    }

    /// A file operation that failed: what was being done (`operation`, e.g. "open the
    /// journal"), on which file, and the I/O error's kind are kept; a full disk (or quota)
    /// is [`DatastoreError::DiskFull`], anything else [`DatastoreError::Io`].
    pub fn io(operation: &str, path: &std::path::Path, e: &std::io::Error) -> DatastoreError {
        let failure = Failure::of_file(
            format!("cannot {operation} {}: {e}", path.display()),
            path,
            e,
        );
        if e.kind() == std::io::ErrorKind::StorageFull {
            DatastoreError::DiskFull(failure)
        } else {
            DatastoreError::Io(failure)
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for Failure {
    /// A failure of ours (a rule of the file format, a copy that is not what it must be).
    fn from(message: String) -> Failure {
        Failure {
            message,
            sqlite_code: None,
            io_kind: None,
            path: None,
        }
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        message.to_string().into()
    }
}

impl From<&rusqlite::Error> for Failure {
    fn from(e: &rusqlite::Error) -> Failure {
        Failure {
            message: e.to_string(),
            sqlite_code: match e {
                rusqlite::Error::SqliteFailure(code, _) => Some(code.extended_code),
                _ => None,
            },
            io_kind: None,
            path: None,
        }
    }
}

impl From<&std::io::Error> for Failure {
    fn from(e: &std::io::Error) -> Failure {
        Failure {
            message: e.to_string(),
            sqlite_code: None,
            io_kind: Some(e.kind()),
            path: None,
        }
    }
}

impl From<rusqlite::Error> for DatastoreError {
    /// Classifies SQLite's error by its code (`classify`). Nothing else happens here: the
    /// worker sees damage in the answers it sends (`Store::note`).
    fn from(e: rusqlite::Error) -> Self {
        classify(e.sqlite_error_code(), Failure::from(&e))
    }
}

/// The one place SQLite's primary result code decides what a failure means: a full disk,
/// a damaged file, a busy one, or any other database error.
pub(crate) fn classify(code: Option<rusqlite::ErrorCode>, failure: Failure) -> DatastoreError {
    match code {
        Some(rusqlite::ErrorCode::DiskFull) => DatastoreError::DiskFull(failure),
        _ if is_damage(code) => DatastoreError::Damaged(failure),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            DatastoreError::Busy(failure)
        }
        _ => DatastoreError::Sql(failure),
    }
}

/// Whether SQLite's primary result code says the file is damaged ("malformed" or "not a
/// database"), as opposed to busy, full or missing: [`classify`] and the salvage ask here.
pub(crate) fn is_damage(code: Option<rusqlite::ErrorCode>) -> bool {
    matches!(
        code,
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// Result alias for datastore operations.
pub type Result<T> = std::result::Result<T, DatastoreError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_its_cause_and_its_message() {
        let sqlite = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR_WRITE),
            Some("disk I/O error".into()),
        );
        match DatastoreError::from(sqlite) {
            DatastoreError::Sql(f) => {
                assert_eq!(f.sqlite_code, Some(rusqlite::ffi::SQLITE_IOERR_WRITE));
                assert_eq!(f.message, "disk I/O error");
            }
            other => panic!("{other:?}"),
        }
        let corrupt = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            None,
        );
        assert!(matches!(
            DatastoreError::from(corrupt),
            DatastoreError::Damaged(Failure {
                sqlite_code: Some(11),
                ..
            })
        ));
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no");
        let journal = std::path::Path::new("/data/sqlite.db.journal");
        match DatastoreError::io("open the journal", journal, &io) {
            DatastoreError::Io(f) => {
                assert_eq!(f.io_kind, Some(std::io::ErrorKind::PermissionDenied));
                assert_eq!(f.path.as_deref(), Some(journal));
                assert_eq!(
                    DatastoreError::Io(f).to_string(),
                    "File error: cannot open the journal /data/sqlite.db.journal: no"
                );
            }
            other => panic!("{other:?}"),
        }
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        assert!(matches!(
            DatastoreError::io("wipe the journal", journal, &full),
            DatastoreError::DiskFull(Failure { path: Some(_), .. })
        ));
    }
}
