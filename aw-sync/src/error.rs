//! What can go wrong in a sync, as one error type: the caller logs it and moves on to the
//! next peer, bucket or pass (a sync never ends a process because one part failed).

use std::path::PathBuf;

/// An error of a sync step.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The local server answered with an error or could not be reached.
    #[cfg(feature = "cli")]
    #[error("server: {0}")]
    Server(#[from] aw_client_rust::ClientError),
    /// A datastore (the local server's, or this device's sync file) failed.
    #[error("datastore: {0}")]
    Datastore(#[from] aw_datastore::DatastoreError),
    /// A peer's sync file could not be read, or is not a complete ActivityWatch database.
    #[error("peer file '{path}': {reason}")]
    BadPeer {
        /// The file.
        path: PathBuf,
        /// Why it was skipped.
        reason: String,
    },
    /// A peer file took longer than its time in one pass (`crate::peer::ReadGuard`);
    /// the next pass goes on from where this one stopped.
    #[error(
        "peer file '{path}': not read to the end in {seconds} s, the next pass goes on from here"
    )]
    PeerTimeLimit {
        /// The file.
        path: PathBuf,
        /// The time limit.
        seconds: u64,
    },
    /// A file or folder of the sync folder or of the sync state.
    #[error("{what} '{path}': {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A setting that cannot be used (paths, dates, modes).
    #[error("{0}")]
    Config(String),
    /// The pass was asked to stop (the process or the server is stopping); what was
    /// written so far stays, and the next pass resumes from it.
    #[error("stopped")]
    Stopped,
    /// Another aw-sync already syncs this server.
    #[error("another aw-sync is already syncing this server (lock file '{0}')")]
    AlreadyRunning(PathBuf),
}

impl SyncError {
    /// An I/O error with what was being done and on which path.
    pub fn io(what: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| SyncError::Io { what, path, source }
    }
}

/// Results of sync steps.
pub type Result<T, E = SyncError> = std::result::Result<T, E>;
