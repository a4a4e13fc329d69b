//! Salvage: every readable bucket, event and setting of a damaged database copied into a
//! fresh one, reading around the damaged pages.
//!
//! A damaged page makes SQLite fail every statement that walks through it ("database disk
//! image is malformed"), so a plain `SELECT *` or an export stops at the first one, though
//! most rows sit on intact pages. Here each table is read by rowid in ranges
//! (`WHERE rowid >= ? ORDER BY rowid LIMIT n`); where a range read fails, the rows after the
//! last one read are looked up one by one by rowid (a point lookup walks one root-to-leaf
//! path, so it reaches every row whose own path is intact) until range reads work again.
//! The indexes are never used, so a damaged index costs nothing. So every event still
//! reachable by its id comes back, which is what the tests check against a point lookup of
//! every id of the original. Rows on a leaf page whose parent page is lost are not reached
//! (that would need a page-scanning reader; the bundled SQLite has no recovery extension).
//!
//! The fresh database has the reference's schema (the reference can open it), the same
//! bucket and event ids, and the settings. Events whose bucket row was lost go into a
//! recovery bucket per lost row, `aw-salvaged-bucket-<row>` (type `salvaged`), so nothing
//! read is dropped. The report says how many rows came back and which id ranges could not
//! be read.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use crate::error::{DatastoreError, Result};
use crate::file::database_file::DatabaseFile;
use crate::file::encryption::{self, DbPassword};
use crate::file::modes::match_database;
use crate::file::names::with_suffix;
use crate::file::replace;
use crate::store::change::{INSERT_BUCKET_SQL, INSERT_EVENT_SQL};
use crate::store::schema;

/// Rows read per range read.
const RANGE: i64 = 512;

/// Point lookups tried after a failed range read before a range read is tried again.
const POINT_WINDOW: i64 = 256;

/// What a salvage brought back, and what it could not read.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct SalvageReport {
    /// Buckets copied.
    pub buckets: u64,
    /// Events copied (into their own buckets or recovery buckets).
    pub events: u64,
    /// Settings (key-value rows) copied.
    pub settings: u64,
    /// Recovery buckets created for events whose bucket row was lost.
    pub recovery_buckets: Vec<String>,
    /// Rows read but not copied (values of the wrong type).
    pub unusable_rows: u64,
    /// Row id ranges that could not be read, per table (ids that never existed included:
    /// a range says only that nothing there could be read).
    pub lost: Vec<LostRange>,
}

impl SalvageReport {
    /// One line for the log: what came back, what could not be read, where the events of
    /// lost buckets went.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "{} buckets, {} events, {} settings brought back",
            self.buckets, self.events, self.settings
        );
        if !self.lost.is_empty() {
            let ranges: Vec<String> = self
                .lost
                .iter()
                .map(|l| format!("{} {}-{}", l.table, l.from, l.to))
                .collect();
            text.push_str(&format!("; unreadable id ranges: {}", ranges.join(", ")));
        }
        if !self.recovery_buckets.is_empty() {
            text.push_str(&format!(
                "; events of lost buckets are in {}",
                self.recovery_buckets.join(", ")
            ));
        }
        text
    }
}

/// Where [`salvage`] writes the copy of `db` before it replaces it.
pub(crate) fn salvage_target(db: &Path) -> std::path::PathBuf {
    let fresh = with_suffix(db, ".salvaging");
    for side in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(with_suffix(&fresh, side));
    }
    fresh
}

/// Ids of a table that could not be read.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct LostRange {
    /// `buckets`, `events` or `key_value`.
    pub table: &'static str,
    /// The first id.
    pub from: i64,
    /// The last id.
    pub to: i64,
}

/// `<database>.damaged`: written when a damaged page was met and the file not yet salvaged;
/// a start that finds it salvages first (`file/`).
pub fn damage_marker(db: &Path) -> std::path::PathBuf {
    with_suffix(db, ".damaged")
}

/// Whether `e` says the file is damaged (as opposed to busy, full, or missing).
fn is_damage(e: &rusqlite::Error) -> bool {
    crate::error::is_damage(e.sqlite_error_code())
}

/// Copies what can be read of the database at `damaged` into a new database at `fresh`
/// (which must not exist), encrypted with `password` when the original is.
pub fn salvage(
    damaged: &Path,
    fresh: &Path,
    password: Option<&DbPassword>,
) -> Result<SalvageReport> {
    if fresh.exists() {
        return Err(DatastoreError::Sql(
            format!(
                "'{}' exists already; salvage writes a new file",
                fresh.display()
            )
            .into(),
        ));
    }
    let source = Connection::open_with_flags(
        damaged,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| DatastoreError::sqlite("open", damaged, &e))?;
    encryption::unlock(&source, password, damaged)?;
    // Made with the damaged file's mode before anything is written into it (not given
    // that mode afterwards, readable by others in between).
    crate::file::create_file(fresh, damaged)
        .map_err(|e| DatastoreError::io("create", fresh, &e))?;
    let mut target =
        Connection::open(fresh).map_err(|e| DatastoreError::sqlite("create", fresh, &e))?;
    encryption::unlock(&target, password, fresh)?;
    // As every new file: its free pages can go back while serving (`store/reclaim.rs`).
    target.execute_batch("PRAGMA auto_vacuum=INCREMENTAL;")?;
    schema::configure(&target)?;
    schema::migrate(&mut target, crate::file::create_marker)?;
    let mut report = SalvageReport::default();
    let tx = target.transaction()?;
    let buckets = copy_buckets(&source, &tx, &mut report)?;
    copy_events(&source, &tx, &buckets, &mut report)?;
    copy_settings(&source, &tx, &mut report)?;
    carry_identity(&source, &tx, damaged)?;
    tx.commit()?;
    let verdict: String = target.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if verdict != "ok" {
        return Err(DatastoreError::Sql(
            format!("the salvaged copy failed its integrity check: {verdict}").into(),
        ));
    }
    target.close().map_err(|(_, e)| DatastoreError::from(e))?;
    Ok(report)
}

/// Copies the bucket rows that can be read; returns their rows.
fn copy_buckets(
    source: &Connection,
    tx: &Connection,
    report: &mut SalvageReport,
) -> Result<HashSet<i64>> {
    let mut buckets = HashSet::new();
    let columns = "name, type, client, hostname, created, data";
    let lost = each_row(source, "buckets", columns, |id, row| {
        // Column 0 is the rowid.
        let text = |i: usize| row.get::<_, String>(i + 1).ok();
        let (Some(name), Some(kind), Some(client), Some(host), Some(created)) =
            (text(0), text(1), text(2), text(3), text(4))
        else {
            report.unusable_rows += 1;
            return Ok(());
        };
        let data = text(5).unwrap_or_else(|| "{}".into());
        tx.prepare_cached(INSERT_BUCKET_SQL)?
            .execute(rusqlite::params![
                id, name, kind, client, host, created, data
            ])?;
        buckets.insert(id);
        report.buckets += 1;
        Ok(())
    })?;
    report.lost.extend(lost);
    Ok(buckets)
}

/// Copies the event rows that can be read; events of a bucket that could not be read go
/// into a recovery bucket made for it (`aw-salvaged-bucket-<row>`).
fn copy_events(
    source: &Connection,
    tx: &Connection,
    buckets: &HashSet<i64>,
    report: &mut SalvageReport,
) -> Result<()> {
    let mut recovery = HashSet::new();
    let columns = "bucketrow, starttime, endtime, data";
    let lost = each_row(source, "events", columns, |id, row| {
        let (Ok(bucket), Ok(start), Ok(end), Ok(data)) = (
            row.get::<_, i64>(1),
            row.get::<_, i64>(2),
            row.get::<_, i64>(3),
            row.get::<_, String>(4),
        ) else {
            report.unusable_rows += 1;
            return Ok(());
        };
        if !buckets.contains(&bucket) && recovery.insert(bucket) {
            let name = format!("aw-salvaged-bucket-{bucket}");
            let created = chrono::Utc::now().to_rfc3339();
            tx.prepare_cached(INSERT_BUCKET_SQL)?
                .execute(rusqlite::params![
                    bucket,
                    name,
                    "salvaged",
                    "aw-server-salvage",
                    "unknown",
                    created,
                    "{}"
                ])?;
            report.recovery_buckets.push(name);
        }
        tx.prepare_cached(INSERT_EVENT_SQL)?
            .execute(rusqlite::params![id, bucket, start, end, data])?;
        report.events += 1;
        Ok(())
    })?;
    report.lost.extend(lost);
    Ok(())
}

/// Copies the settings that can be read.
fn copy_settings(source: &Connection, tx: &Connection, report: &mut SalvageReport) -> Result<()> {
    let lost = each_row(
        source,
        "key_value",
        "key, value, last_modified",
        |_, row| {
            let (Ok(key), Ok(value)) = (row.get::<_, String>(1), row.get::<_, Option<String>>(2))
            else {
                report.unusable_rows += 1;
                return Ok(());
            };
            let modified = row.get::<_, i64>(3).unwrap_or(0);
            tx.execute(
                "INSERT OR REPLACE INTO key_value (key, value, last_modified) VALUES (?1, ?2, ?3)",
                rusqlite::params![key, value, modified],
            )?;
            report.settings += 1;
            Ok(())
        },
    )?;
    report.lost.extend(lost);
    Ok(())
}

/// Makes the copy the same database as far as the journal is concerned: its held writes
/// apply here (and can be read: an encrypted journal's key comes along), and the ids of
/// lost events are never handed out again.
fn carry_identity(source: &Connection, tx: &Connection, damaged: &Path) -> Result<()> {
    crate::file::copy_journal_key(source, tx)?;
    match crate::file::salvage_identity(source, damaged) {
        Some((id, committed)) => crate::file::set_identity(tx, &id, committed)?,
        None => {
            crate::file::marker(tx)?;
        }
    }
    if let Ok(seq) = source.query_row(
        "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
        [],
        |r| r.get::<_, i64>(0),
    ) {
        tx.execute(
            "UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'events'",
            [seq],
        )?;
    }
    Ok(())
}

/// Calls `visit(rowid, row)` for every row of `table` that can be read, in rowid order;
/// `row` holds the rowid and then `columns`. Returns the rowid ranges that could not be
/// read.
fn each_row(
    source: &Connection,
    table: &'static str,
    columns: &str,
    mut visit: impl FnMut(i64, &rusqlite::Row<'_>) -> rusqlite::Result<()>,
) -> Result<Vec<LostRange>> {
    // The last rowid: from the table, else the AUTOINCREMENT counter, else unknown (then
    // reading stops at the first range that reads nothing).
    let last = source
        .query_row(&format!("SELECT max(rowid) FROM {table}"), [], |r| {
            r.get::<_, Option<i64>>(0)
        })
        .ok()
        .flatten()
        .into_iter()
        .chain(
            source
                .query_row(
                    "SELECT seq FROM sqlite_sequence WHERE name = ?1",
                    [table],
                    |r| r.get::<_, i64>(0),
                )
                .ok(),
        )
        .max();
    let mut range = source.prepare(&format!(
        "SELECT rowid, {columns} FROM {table} WHERE rowid >= ?1 ORDER BY rowid LIMIT {RANGE}"
    ))?;
    let mut point = source.prepare(&format!(
        "SELECT rowid, {columns} FROM {table} WHERE rowid = ?1"
    ))?;
    let mut lost: Vec<LostRange> = Vec::new();
    let mut next = i64::MIN;
    let mut empty_windows = 0;
    loop {
        let mut rows = range.query([next])?;
        let mut read = 0;
        let failed = loop {
            match rows.next() {
                Ok(Some(row)) => {
                    let id: i64 = row.get(0)?;
                    visit(id, row)?;
                    next = id.saturating_add(1);
                    read += 1;
                }
                Ok(None) => break false,
                Err(e) if is_damage(&e) => break true,
                Err(e) => return Err(e.into()),
            }
        };
        drop(rows);
        if !failed {
            if read < RANGE {
                return Ok(lost);
            }
            continue;
        }
        // Damage after `next`: one by one through a window, then ranges again.
        let start = if next == i64::MIN { 1 } else { next };
        let end = start.saturating_add(POINT_WINDOW);
        let mut found = false;
        for id in start..end {
            if last.is_some_and(|last| id > last) {
                return Ok(lost);
            }
            match point.query_row([id], |row| visit(id, row)) {
                Ok(()) => found = true,
                Err(rusqlite::Error::QueryReturnedNoRows) => {}
                Err(e) if is_damage(&e) => lose(&mut lost, table, id),
                Err(e) => return Err(e.into()),
            }
        }
        // With no known last id, reading stops after a long stretch where nothing is found.
        empty_windows = if found { 0 } else { empty_windows + 1 };
        if last.is_none() && empty_windows > 64 {
            return Ok(lost);
        }
        next = end;
    }
}

/// Adds `id` to the lost ranges (extending the last one when it follows it).
fn lose(lost: &mut Vec<LostRange>, table: &'static str, id: i64) {
    match lost.last_mut() {
        Some(range) if range.table == table && range.to + 1 == id => range.to = id,
        _ => lost.push(LostRange {
            table,
            from: id,
            to: id,
        }),
    }
}

impl DatabaseFile {
    /// Whether a damage marker asks for a salvage before the file is opened.
    pub fn is_marked_damaged(&self) -> bool {
        damage_marker(self.path()).exists() && self.path().exists()
    }

    /// Writes the damage marker: the next start salvages first, if this run does not.
    pub(crate) fn mark_damaged(&self) {
        let _ = std::fs::write(damage_marker(self.path()), b"damaged; salvage pending\n");
    }

    /// Salvages the database into a fresh file and puts it in place; the damaged file (and
    /// its WAL) is kept as `<database>.damaged-<time>`. Nothing may have the database
    /// open. Returns the report and where the damaged file went.
    pub fn salvage(&self, password: Option<&DbPassword>) -> Result<(SalvageReport, PathBuf)> {
        let started = std::time::Instant::now();
        let (report, fresh) = self.salvage_copy(password)?;
        let aside = self.put_salvaged_in_place(&fresh)?;
        log::warn!(
            "Salvaged {} in {:.1?}: {}; the damaged file is kept at {}",
            self.path().display(),
            started.elapsed(),
            report.summary(),
            aside.display()
        );
        Ok((report, aside))
    }

    /// The first half of a salvage: what can be read, copied into a fresh file beside the
    /// database (the database itself may still be open, read-only).
    pub(crate) fn salvage_copy(
        &self,
        password: Option<&DbPassword>,
    ) -> Result<(SalvageReport, PathBuf)> {
        self.require_lock("salvage the database")?;
        let fresh = salvage_target(self.path());
        match salvage(self.path(), &fresh, password) {
            Ok(report) => {
                let _ = match_database(&fresh, self.path());
                Ok((report, fresh))
            }
            Err(e) => {
                let _ = std::fs::remove_file(&fresh);
                Err(e)
            }
        }
    }

    /// The second half: the salvaged copy replaces the database (closed by now), and the
    /// marker goes.
    pub(crate) fn put_salvaged_in_place(&self, fresh: &Path) -> Result<PathBuf> {
        self.require_lock("salvage the database")?;
        let aside = replace::replace(self.path(), fresh, "damaged")
            .map_err(|e| DatastoreError::io("put the salvaged copy in place of", self.path(), &e))?
            .ok_or_else(|| {
                let e = std::io::Error::from(std::io::ErrorKind::NotFound);
                DatastoreError::io("put the salvaged copy in place of", self.path(), &e)
            })?;
        let _ = std::fs::remove_file(damage_marker(self.path()));
        Ok(aside)
    }

    /// Salvages first when the marker asks for it (see [`DatabaseFile::salvage`]); without
    /// the lock the file is served as it is.
    pub(crate) fn salvage_if_marked(&self, password: Option<&DbPassword>) -> Result<()> {
        if !self.is_marked_damaged() {
            return Ok(());
        }
        log::warn!(
            "The database {} was found damaged while serving; salvaging it first",
            self.path().display()
        );
        match self.salvage(password) {
            Ok(_) => Ok(()),
            Err(DatastoreError::Unavailable(why)) => {
                log::error!("Not salvaging: {why}");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
