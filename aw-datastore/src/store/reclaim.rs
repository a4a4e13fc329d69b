//! Giving the free pages inside the file back to the file system while serving: SQLite's
//! `incremental_vacuum`, run by the worker in steps (a job, `worker/job.rs`) so that
//! heartbeats are answered in between, in its open transaction like any write.
//!
//! A database in `auto_vacuum=INCREMENTAL` mode (every file this server creates) keeps the
//! pages a deletion freed on its free list; each step moves pages from the end of the file
//! into free ones and drops the end. The file itself becomes shorter when the WAL is copied
//! back into it, which the caller has done right after (the scrub's checkpoint,
//! `Datastore::reclaim_space`). A file in `auto_vacuum=NONE` mode (made by the reference
//! or an older version of ours) cannot give pages back this way: the answer says so, and
//! `aw-server compact` converts it.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::Result;
use crate::store::Store;

/// Pages freed per statement, between which a step looks at its time: few, since moving
/// a page rewrites its parent and the pointer map (256 at once held heartbeats for up to
/// 240 ms on the generated year).
const PAGES_PER_CALL: u32 = 8;

/// What a reclaim did.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Reclaimed {
    /// Whether the file can give pages back (`auto_vacuum=INCREMENTAL`); when not, nothing
    /// was done.
    pub incremental: bool,
    /// The page size in bytes.
    pub page_size: u64,
    /// The file's pages before.
    pub pages_before: u64,
    /// The free pages before.
    pub free_before: u64,
    /// The file's pages after (once the WAL is copied back).
    pub pages_after: u64,
    /// The free pages left (others' reads, or new deletions meanwhile, can leave some).
    pub free_after: u64,
}

impl Reclaimed {
    /// The bytes given back.
    pub fn bytes_freed(&self) -> u64 {
        self.pages_before.saturating_sub(self.pages_after) * self.page_size
    }
}

impl Store {
    /// What a reclaim starts from: the mode, the page size and the pages now.
    pub(crate) fn start_reclaim(&self) -> Result<Reclaimed> {
        let conn = self.conn();
        let mode = pragma(conn, "auto_vacuum")?;
        let (pages, free) = self.pages()?;
        Ok(Reclaimed {
            incremental: mode == 2,
            page_size: pragma(conn, "page_size")?,
            pages_before: pages,
            free_before: free,
            pages_after: pages,
            free_after: free,
        })
    }

    /// Frees pages for at most `time`; whether the free list is empty (the reclaim is
    /// done). A file that is not incremental is done at once.
    pub(crate) fn reclaim_step(
        &mut self,
        reclaimed: &mut Reclaimed,
        time: Duration,
    ) -> Result<bool> {
        if !reclaimed.incremental {
            return Ok(true);
        }
        let began = Instant::now();
        loop {
            let mut stmt = self
                .conn()
                .prepare_cached(&format!("PRAGMA incremental_vacuum({PAGES_PER_CALL})"))?;
            // Each row is one page moved: the statement runs to its end.
            let mut rows = stmt.query([])?;
            while rows.next()?.is_some() {}
            drop(rows);
            let (pages, free) = self.pages()?;
            (reclaimed.pages_after, reclaimed.free_after) = (pages, free);
            if free == 0 {
                return Ok(true);
            }
            if began.elapsed() >= time {
                return Ok(false);
            }
        }
    }

    /// The file's pages and its free pages.
    fn pages(&self) -> Result<(u64, u64)> {
        let conn = self.conn();
        Ok((pragma(conn, "page_count")?, pragma(conn, "freelist_count")?))
    }
}

/// The number a pragma that counts answers (`page_size`, `page_count`, `freelist_count`,
/// `auto_vacuum`), never negative. SQLCipher answers `page_size` as text (its column is
/// `cipher_page_size`), so either form is read.
pub(crate) fn pragma(conn: &rusqlite::Connection, name: &str) -> Result<u64> {
    use rusqlite::types::Value;
    let value: Value = conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))?;
    let n = match value {
        Value::Integer(n) => u64::try_from(n).ok(),
        Value::Text(text) => text.trim().parse().ok(),
        _ => None,
    };
    n.ok_or_else(|| {
        crate::error::DatastoreError::Sql(format!("PRAGMA {name} did not answer a count").into())
    })
}
