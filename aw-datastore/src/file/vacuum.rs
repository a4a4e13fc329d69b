//! `aw-server compact`: a database file rewritten whole with SQLite's `VACUUM`, in
//! `auto_vacuum=INCREMENTAL` mode, with the server stopped (the file's owner holds the
//! lock).
//!
//! A file made by the reference, or by an earlier version of ours, has `auto_vacuum=NONE`:
//! the pages its deletions free stay inside it for good, and the mode can change only by
//! rewriting the file. `VACUUM` does that in one transaction (a crash leaves the file as it
//! was), keeping every row id; it gives back the free pages at once, and from then on
//! `Datastore::reclaim_space` gives back those later deletions free, while serving.

use std::time::Instant;

use serde::Serialize;

use crate::error::{DatastoreError, Result};
use crate::file::encryption::{self, DbPassword};
use crate::file::DatabaseFile;

/// What a compaction did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Compacted {
    /// The file's `auto_vacuum` mode before (`none`, `full` or `incremental`); after, it is
    /// `incremental`.
    pub auto_vacuum_before: &'static str,
    /// The file's size before, in bytes (its WAL was copied into it first).
    pub bytes_before: u64,
    /// Its size after.
    pub bytes_after: u64,
    /// How long the rewrite took, in milliseconds.
    pub took_ms: u64,
}

impl DatabaseFile {
    /// Rewrites the file whole in `auto_vacuum=INCREMENTAL` mode (see the module docs).
    /// The journal's held writes must have been applied first
    /// ([`DatabaseFile::apply_held_writes`]); the state kept beside the file is dropped
    /// (it names the file as it was).
    pub fn compact(&self, password: Option<&DbPassword>) -> Result<Compacted> {
        self.require_lock("compact")?;
        let path = self.path();
        let conn = rusqlite::Connection::open(path)
            .map_err(|e| DatastoreError::sqlite("open", path, &e))?;
        encryption::unlock(&conn, password, path)?;
        crate::store::schema::configure(&conn)?;
        let began = Instant::now();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        let size = || std::fs::metadata(path).map_or(0, |m| m.len());
        let bytes_before = size();
        let mode = crate::store::pragma(&conn, "auto_vacuum")?;
        conn.execute_batch("PRAGMA auto_vacuum=INCREMENTAL; VACUUM;")?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        let now = crate::store::pragma(&conn, "auto_vacuum")?;
        conn.close().map_err(|(_, e)| DatastoreError::from(e))?;
        if now != 2 {
            return Err(DatastoreError::Sql(
                format!("SQLite left the file in auto_vacuum mode {now}, not incremental").into(),
            ));
        }
        crate::file::derived::discard(path);
        Ok(Compacted {
            auto_vacuum_before: match mode {
                1 => "full",
                2 => "incremental",
                _ => "none",
            },
            bytes_before,
            bytes_after: size(),
            took_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
}
