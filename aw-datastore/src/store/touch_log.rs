//! What each commit changed, kept in the database itself: how state derived from the data
//! and saved while the server runs (`file/derived.rs`) stays usable after a crash.
//!
//! State saved at a moment names the journal number of the last write it had heard of.
//! Every commit adds here, in the same transaction as its writes, the regions they changed
//! (the [`Touched`] its writes told the listeners, coalesced per bucket) tagged with the
//! journal number of the commit's last write; the journal's writes a crash left uncommitted
//! add theirs when the next open applies them (`file/recovery.rs`, [`touched_by`]). So the
//! regions changed since a save are exactly those tagged above its number, whatever
//! happened in between: commits, a kill, writes applied again from the journal.
//!
//! Not part of the reference's schema; like the long-events index, a file that has the
//! table opens and works there (the reference never reads or writes it, and its own writes
//! are seen another way: `derived.rs`). Rows at or below the number of the last state kept
//! are removed at the next commit, so the table holds a few rows per bucket and commit
//! since then.

use rusqlite::{params, Connection, OptionalExtension};

use crate::store::change::Change;

use crate::store::write_listeners::Touched;

/// Creates the table if the file lacks it (a new file, one the reference wrote).
pub(crate) const CREATE_TOUCH_LOG: &str = "CREATE TABLE IF NOT EXISTS derived_touches (
     seq INTEGER NOT NULL, bucket TEXT, starttime INTEGER NOT NULL, endtime INTEGER NOT NULL);
     CREATE INDEX IF NOT EXISTS derived_touches_by_seq ON derived_touches(seq)";

/// Removes the rows a kept state no longer needs.
const FORGET_SQL: &str = "DELETE FROM derived_touches WHERE seq <= ?1";

const INSERT_SQL: &str =
    "INSERT INTO derived_touches (seq, bucket, starttime, endtime) VALUES (?1, ?2, ?3, ?4)";

/// A region of the data a write changed, owned: what [`Touched`] names, kept past the
/// write. A bucket's whole span is `i64::MIN..=i64::MAX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changed {
    /// Events of `bucket` overlapping `[start, end]` (ns) changed.
    Events {
        /// The bucket's id.
        bucket: String,
        /// Earliest instant, ns.
        start: i64,
        /// Latest instant, ns.
        end: i64,
    },
    /// The bucket itself (created, deleted, renamed) and all its events.
    Bucket(String),
    /// Anything.
    Everything,
}

impl Changed {
    fn of(change: Touched<'_>) -> Changed {
        match change {
            Touched::Events { bucket, start, end } => Changed::Events {
                bucket: bucket.to_string(),
                start,
                end,
            },
            Touched::Bucket(bucket) => Changed::Bucket(bucket.to_string()),
            Touched::Everything => Changed::Everything,
        }
    }

    /// As a row: the bucket (`None`: everything) and the span.
    fn row(&self) -> (Option<&str>, i64, i64) {
        match self {
            Changed::Events { bucket, start, end } => (Some(bucket), *start, *end),
            Changed::Bucket(bucket) => (Some(bucket), i64::MIN, i64::MAX),
            Changed::Everything => (None, i64::MIN, i64::MAX),
        }
    }

    fn from_row(bucket: Option<String>, start: i64, end: i64) -> Changed {
        match bucket {
            None => Changed::Everything,
            Some(b) if start == i64::MIN && end == i64::MAX => Changed::Bucket(b),
            Some(bucket) => Changed::Events { bucket, start, end },
        }
    }
}

/// The regions changed since the last commit, in memory on the worker thread until the
/// commit writes them ([`TouchLog::write`]).
#[derive(Debug, Default)]
pub(crate) struct TouchLog {
    pending: Vec<Changed>,
    /// Rows at or below this number are no longer needed (a state naming it was kept)...
    forget: u64,
    /// ... and those at or below this one are gone.
    forgotten: u64,
}

/// More regions than this in one commit are kept as one: everything.
const MAX_PENDING: usize = 4096;

impl TouchLog {
    /// Notes a change told to the listeners (a heartbeat that extends the region of its
    /// bucket's last change costs a comparison, no allocation).
    pub(crate) fn note(&mut self, change: Touched<'_>) {
        if let Touched::Events { bucket, start, end } = change {
            if self.widen(bucket, start, end) {
                return;
            }
        }
        self.push(Changed::of(change));
    }

    /// Widens a pending region of `bucket` that overlaps `[start, end]` or lies within an
    /// hour of it (heartbeats: one region per bucket and commit); whether there was one.
    fn widen(&mut self, bucket: &str, start: i64, end: i64) -> bool {
        const NEAR: i64 = 3_600_000_000_000;
        self.pending.iter_mut().rev().any(|p| match p {
            Changed::Events {
                bucket: b,
                start: s,
                end: e,
            } if b == bucket
                && start <= e.saturating_add(NEAR)
                && end >= s.saturating_sub(NEAR) =>
            {
                *s = (*s).min(start);
                *e = (*e).max(end);
                true
            }
            _ => false,
        })
    }

    fn push(&mut self, changed: Changed) {
        if self.pending.last() == Some(&Changed::Everything) || self.pending.contains(&changed) {
            return;
        }
        if let Changed::Events { bucket, start, end } = &changed {
            if self.widen(bucket, *start, *end) {
                return;
            }
        }
        if self.pending.len() >= MAX_PENDING || changed == Changed::Everything {
            self.pending = vec![Changed::Everything];
            return;
        }
        self.pending.push(changed);
    }

    /// Rows at or below `seq` may go at the next commit.
    pub(crate) fn forget_upto(&mut self, seq: u64) {
        self.forget = self.forget.max(seq);
    }

    /// Writes the pending regions tagged `seq` (in the commit's transaction), and removes
    /// the rows no longer needed. The regions stay pending until [`TouchLog::committed`]:
    /// a commit that fails writes them again.
    pub(crate) fn write(&self, conn: &Connection, seq: u64) -> rusqlite::Result<()> {
        if self.forget > self.forgotten {
            conn.prepare_cached(FORGET_SQL)?
                .execute([self.forget as i64])?;
        }
        insert(conn, seq, &self.pending)
    }

    /// The commit that wrote them succeeded.
    pub(crate) fn committed(&mut self) {
        self.pending.clear();
        self.forgotten = self.forget;
    }
}

fn insert(conn: &Connection, seq: u64, changes: &[Changed]) -> rusqlite::Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(INSERT_SQL)?;
    for change in changes {
        let (bucket, start, end) = change.row();
        stmt.execute(params![seq as i64, bucket, start, end])?;
    }
    Ok(())
}

/// The regions changed after journal number `seq` (see the module docs).
pub(crate) fn changed_since(conn: &Connection, seq: u64) -> rusqlite::Result<Vec<Changed>> {
    let mut stmt = conn.prepare(
        "SELECT bucket, starttime, endtime FROM derived_touches WHERE seq > ?1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([seq as i64], |r| {
        Ok(Changed::from_row(r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    rows.collect()
}

/// Removes the rows at or below `seq` (every row with `None`), in its own transaction.
pub(crate) fn forget(conn: &Connection, upto: Option<u64>) -> rusqlite::Result<()> {
    match upto {
        Some(seq) => conn.execute(FORGET_SQL, [seq as i64]),
        None => conn.execute("DELETE FROM derived_touches", []),
    }
    .map(drop)
}

/// Keeps `touched`, tagged `seq`, in the caller's transaction: what the journal's writes
/// applied at open changed ([`touched_by`], read before each was applied).
pub(crate) fn keep_applied(
    conn: &Connection,
    seq: u64,
    touched: Vec<Changed>,
) -> rusqlite::Result<()> {
    let mut log = TouchLog::default();
    touched.into_iter().for_each(|t| log.push(t));
    insert(conn, seq, &log.pending)
}

/// The regions one recorded change reaches on `conn` as it is before the change.
pub(crate) fn touched_by(conn: &Connection, change: &Change) -> rusqlite::Result<Vec<Changed>> {
    let name = |row: i64| -> rusqlite::Result<Option<String>> {
        conn.prepare_cached("SELECT name FROM buckets WHERE id = ?1")?
            .query_row([row], |r| r.get(0))
            .optional()
    };
    let event = |id: i64| -> rusqlite::Result<Option<(i64, i64, i64)>> {
        conn.prepare_cached("SELECT bucketrow, starttime, endtime FROM events WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
    };
    let span = |row: i64, start: i64, end: i64| -> rusqlite::Result<Option<Changed>> {
        Ok(name(row)?.map(|bucket| Changed::Events {
            bucket,
            start: start.min(end),
            end: start.max(end),
        }))
    };
    let whole =
        |row: i64| -> rusqlite::Result<Option<Changed>> { Ok(name(row)?.map(Changed::Bucket)) };
    let mut out = Vec::new();
    match change {
        Change::CreateBucket { columns, .. } => out.push(Some(Changed::Bucket(columns[0].clone()))),
        Change::DeleteBucket { row } => out.push(whole(*row)?),
        Change::RenameBucket { row, name: new, .. } => {
            out.push(whole(*row)?);
            out.push(Some(Changed::Bucket(new.clone())));
        }
        Change::MergeBuckets { from, into } => {
            out.push(whole(*from)?);
            out.push(whole(*into)?);
        }
        Change::InsertEvent {
            bucketrow,
            start,
            end,
            ..
        } => out.push(span(*bucketrow, *start, *end)?),
        Change::ReplaceEvent { id, start, end, .. }
        | Change::ResizeEvent { id, start, end, .. } => {
            if let Some((row, s, e)) = event(*id)? {
                out.push(span(row, s, e)?);
                out.push(span(row, *start, *end)?);
            }
        }
        Change::MoveEvent { id, into, .. } => {
            if let Some((row, s, e)) = event(*id)? {
                out.push(span(row, s, e)?);
                out.push(span(*into, s, e)?);
            }
        }
        Change::RedactEvent { id, .. } | Change::DeleteEvent { id, .. } => {
            if let Some((row, s, e)) = event(*id)? {
                out.push(span(row, s, e)?);
            }
        }
        Change::SetKeyValue { .. } | Change::DeleteKeyValue { .. } => {}
    }
    Ok(out.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(bucket: &str, start: i64, end: i64) -> Touched<'_> {
        Touched::Events { bucket, start, end }
    }

    #[test]
    fn heartbeats_make_one_region_per_bucket() {
        let mut log = TouchLog::default();
        for i in 0..100 {
            log.note(events("window", i * 5_000_000_000, i * 5_000_000_000 + 1));
            log.note(events("afk", i * 5_000_000_000, i * 5_000_000_000 + 1));
        }
        assert_eq!(log.pending.len(), 2);
        log.note(events(
            "window",
            10 * 86_400_000_000_000,
            10 * 86_400_000_000_000,
        ));
        assert_eq!(log.pending.len(), 3);
        log.note(Touched::Bucket("afk"));
        assert_eq!(log.pending.len(), 4);
        log.note(Touched::Everything);
        assert_eq!(log.pending, vec![Changed::Everything]);
        log.note(events("x", 0, 1));
        assert_eq!(log.pending, vec![Changed::Everything]);
    }

    #[test]
    fn rows_come_back_after_their_number() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(CREATE_TOUCH_LOG).unwrap();
        let mut log = TouchLog::default();
        log.note(events("a", 1, 2));
        log.write(&conn, 5).unwrap();
        log.committed();
        log.note(Touched::Bucket("b"));
        log.note(Touched::Everything);
        log.write(&conn, 7).unwrap();
        log.committed();
        assert_eq!(changed_since(&conn, 7).unwrap(), vec![]);
        assert_eq!(changed_since(&conn, 5).unwrap(), vec![Changed::Everything]);
        assert_eq!(
            changed_since(&conn, 4).unwrap(),
            vec![
                Changed::Events {
                    bucket: "a".into(),
                    start: 1,
                    end: 2
                },
                Changed::Everything
            ]
        );
        log.forget_upto(5);
        log.write(&conn, 8).unwrap();
        log.committed();
        assert_eq!(changed_since(&conn, 0).unwrap(), vec![Changed::Everything]);
        forget(&conn, None).unwrap();
        assert_eq!(changed_since(&conn, 0).unwrap(), vec![]);
    }
}
