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
    /// acknowledged are kept in memory and written when it can (`transaction.rs`).
    #[error("Database unavailable: {0}")]
    Unavailable(String),
    /// The disk (or a quota) is full: this write is refused; the writes already
    /// acknowledged are kept in memory and written when space returns (`transaction.rs`).
    #[error("The disk is full: {0}")]
    DiskFull(String),
    /// The database cannot be read with the password given (or without one), or this build
    /// cannot encrypt. The message never contains the password.
    #[error("{0}")]
    Encryption(String),
    /// The database file is damaged (SQLite's "malformed" or "not a database"): what can
    /// be read of it can be salvaged ([`crate::salvage()`]).
    #[error("The database file is damaged: {0}")]
    Damaged(String),
    /// The file is busy or locked by another connection (SQLite's `SQLITE_BUSY` or
    /// `SQLITE_LOCKED`) beyond the busy timeout.
    #[error("Database busy: {0}")]
    Busy(String),
    /// SQLite failed: read-only file, I/O error, or another error.
    #[error("Database error: {0}")]
    Sql(String),
    /// A file beside the database (the journal, the lock, a copy) could not be read or
    /// written.
    #[error("File error: {0}")]
    Io(String),
}

thread_local! {
    /// Set when this thread met a damaged file (see [`take_damage_seen`]).
    static DAMAGE_SEEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread met a damaged database file since the last call: the worker asks
/// after each turn, and salvages its file when it did (`worker.rs`). Every SQLite error
/// the worker's requests meet passes through the conversion below, on the worker's thread.
pub(crate) fn take_damage_seen() -> bool {
    DAMAGE_SEEN.with(|seen| seen.replace(false))
}

impl From<rusqlite::Error> for DatastoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => DatastoreError::DiskFull(e.to_string()),
            Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
                DAMAGE_SEEN.with(|seen| seen.set(true));
                DatastoreError::Damaged(e.to_string())
            }
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                DatastoreError::Busy(e.to_string())
            }
            _ => DatastoreError::Sql(e.to_string()),
        }
    }
}

impl From<std::io::Error> for DatastoreError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::StorageFull {
            DatastoreError::DiskFull(e.to_string())
        } else {
            DatastoreError::Io(e.to_string())
        }
    }
}

/// Result alias for datastore operations.
pub type Result<T> = std::result::Result<T, DatastoreError>;
