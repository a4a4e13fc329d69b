//! Backup files: their names (built and parsed here only), listing, writing with the
//! space check, and rotation.
//!
//! A name says which database a backup is of, its kind, when it was taken and a sequence
//! number: `<stem>-<time>-n<seq>.db` (scheduled or on demand),
//! `<stem>-before-schema-v<N>-<time>-n<seq>.db` (before a migration) and
//! `<stem>-before-rewrite-<time>-n<seq>.db` (before the history is rewritten). The number
//! is one more than the highest in the folder, so it orders backups even when the clock
//! does not: after the clock jumped back, the backup just written is still the newest (by
//! time it would be the oldest, and rotation would delete it at once), and a plain
//! `restore` picks it. Names of earlier versions (no number) count as number 0, ordered by
//! their time among themselves.

use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::error::{DatastoreError, Result};
use crate::file::backup::BackupSource;
use crate::file::names::FILE_TIME_FORMAT;

/// What a backup was taken for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackupKind {
    /// On the schedule, or asked for (`POST /api/0/backups`, `aw-server backup`); rotated.
    Scheduled,
    /// Before a schema migration from this version; never rotated.
    BeforeMigration(i64),
    /// Before a change that rewrites stored history (a range deleted, a bucket merged…);
    /// the newest [`KEEP_BEFORE_REWRITE`] are kept.
    BeforeRewrite,
}

impl BackupKind {
    /// The kind's name in listings: `scheduled`, `before-migration`, `before-rewrite`.
    pub fn label(self) -> &'static str {
        match self {
            BackupKind::Scheduled => "scheduled",
            BackupKind::BeforeMigration(_) => "before-migration",
            BackupKind::BeforeRewrite => "before-rewrite",
        }
    }
}

/// One backup file of a database, as its name and the file system describe it.
#[derive(Clone, Debug, PartialEq)]
pub struct BackupFile {
    /// Its file name in the backup folder.
    pub file: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was taken, by the clock of that moment.
    pub time: DateTime<Utc>,
    /// What it was taken for.
    pub kind: BackupKind,
    /// Its place in the order backups were written (0: a name of an earlier version).
    pub seq: u64,
}

const MIGRATION_TAG: &str = "before-schema-v";
const REWRITE_TAG: &str = "before-rewrite-";

fn stem(database: &Path) -> String {
    database
        .file_stem()
        .map_or("database".into(), |s| s.to_string_lossy().into_owned())
}

/// The file name of a backup of `database`.
fn name(database: &Path, kind: BackupKind, time: DateTime<Utc>, seq: u64) -> String {
    let time = time.format(FILE_TIME_FORMAT);
    let kind = match kind {
        BackupKind::Scheduled => String::new(),
        BackupKind::BeforeMigration(v) => format!("{MIGRATION_TAG}{v}-"),
        BackupKind::BeforeRewrite => REWRITE_TAG.to_string(),
    };
    format!("{}-{kind}{time}-n{seq}.db", stem(database))
}

/// The kind, time and number of a backup of `database` named `file`; `None` for any other
/// file (a temporary `.partial`, another database's backup).
fn parse(file: &str, database: &Path) -> Option<(BackupKind, DateTime<Utc>, u64)> {
    let rest = file
        .strip_prefix(&format!("{}-", stem(database)))?
        .strip_suffix(".db")?;
    let (kind, rest) = if let Some(tail) = rest.strip_prefix(MIGRATION_TAG) {
        let (version, tail) = tail.split_once('-')?;
        (BackupKind::BeforeMigration(version.parse().ok()?), tail)
    } else if let Some(tail) = rest.strip_prefix(REWRITE_TAG) {
        (BackupKind::BeforeRewrite, tail)
    } else {
        (BackupKind::Scheduled, rest)
    };
    let (time, seq) = match rest.rsplit_once("-n") {
        Some((time, seq)) if seq.bytes().all(|b| b.is_ascii_digit()) && !seq.is_empty() => {
            (time, seq.parse().ok()?)
        }
        _ => (rest, 0),
    };
    let time = NaiveDateTime::parse_from_str(time, FILE_TIME_FORMAT).ok()?;
    Some((kind, time.and_utc(), seq))
}

/// The backups of `database` in `folder`, newest first: by number, then by time.
pub fn list_backups(folder: &Path, database: &Path) -> Vec<BackupFile> {
    let mut found: Vec<BackupFile> = std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            let (kind, time, seq) = parse(&file, database)?;
            let meta = entry.metadata().ok().filter(|m| m.is_file())?;
            Some(BackupFile {
                file,
                size: meta.len(),
                time,
                kind,
                seq,
            })
        })
        .collect();
    found.sort_by(|a, b| (b.seq, b.time, &b.file).cmp(&(a.seq, a.time, &a.file)));
    found
}

/// Where the next backup of `database` of `kind` goes in `folder`: the next number, the
/// time now.
fn next_target(folder: &Path, database: &Path, kind: BackupKind) -> PathBuf {
    let seq = list_backups(folder, database)
        .iter()
        .map(|b| b.seq)
        .max()
        .unwrap_or(0)
        + 1;
    folder.join(name(database, kind, Utc::now(), seq))
}

/// Refuses a backup that would leave less than `floor` bytes free on `folder`'s disk.
fn check_space(folder: &Path, database: &Path, floor: u64) -> Result<()> {
    let Some(available) = aw_platform::disk::free_bytes(folder) else {
        return Ok(());
    };
    let needed: u64 = ["", "-wal"]
        .iter()
        .filter_map(|side| std::fs::metadata(crate::file::names::with_suffix(database, side)).ok())
        .map(|m| m.len())
        .sum();
    if available < needed.saturating_add(floor) {
        let mb = |bytes: u64| bytes >> 20;
        return Err(DatastoreError::DiskFull(
            format!(
                "not enough free space in {}: {} MiB free, the backup needs about {} MiB and {} \
             MiB must stay free",
                folder.display(),
                mb(available),
                mb(needed),
                mb(floor)
            )
            .into(),
        ));
    }
    Ok(())
}

/// Temporary files of backups a killed process left in `folder` (`.<name>.partial`).
fn remove_partials(folder: &Path) {
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.ends_with(".partial") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes a verified backup of `source`'s database of `kind` into `folder` (made private
/// when the database's folder is) when at least `floor` bytes stay free; returns it.
pub fn write_backup(
    source: &BackupSource,
    folder: &Path,
    kind: BackupKind,
    floor: u64,
) -> Result<BackupFile> {
    let database = source.database();
    crate::file::create_folder(folder, database)
        .map_err(|e| DatastoreError::io("create the backup folder", folder, &e))?;
    check_space(folder, database, floor)?;
    remove_partials(folder);
    let target = next_target(folder, database, kind);
    source.write(&target)?;
    let _ = crate::file::match_database(&target, database);
    let file = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    list_backups(folder, database)
        .into_iter()
        .find(|b| b.file == file)
        .ok_or_else(|| DatastoreError::Io(format!("{} vanished", target.display()).into()))
}

/// Where [`backup_before_migration`] writes, with the space check, for a connection that
/// is not a [`BackupSource`] (the migration's own, before the worker exists).
pub(crate) fn migration_target(folder: &Path, database: &Path, version: i64) -> Result<PathBuf> {
    crate::file::create_folder(folder, database)
        .map_err(|e| DatastoreError::io("create the backup folder", folder, &e))?;
    check_space(folder, database, 16 << 20)?;
    remove_partials(folder);
    Ok(next_target(
        folder,
        database,
        BackupKind::BeforeMigration(version),
    ))
}

/// The backups rotation removes (`backups` newest first): of the scheduled ones, all but the
/// newest of each of the last `keep_daily` days and `keep_weekly` ISO weeks (by the time in
/// their names), and never the newest by number; of those taken before rewriting history,
/// all but the newest [`KEEP_BEFORE_REWRITE`]. Those before a migration stay.
pub fn rotation(backups: &[BackupFile], keep_daily: usize, keep_weekly: usize) -> Vec<String> {
    let mut removed = scheduled_rotation(backups, keep_daily, keep_weekly);
    removed.extend(
        backups
            .iter()
            .filter(|b| b.kind == BackupKind::BeforeRewrite)
            .skip(KEEP_BEFORE_REWRITE)
            .map(|b| b.file.clone()),
    );
    removed
}

/// Backups taken before rewriting history kept (the newest, by number): each undoes one
/// operation, and ten undo steps cover a session of edits without filling the disk.
pub const KEEP_BEFORE_REWRITE: usize = 10;

/// The scheduled backups [`rotation`] removes.
fn scheduled_rotation(
    backups: &[BackupFile],
    keep_daily: usize,
    keep_weekly: usize,
) -> Vec<String> {
    use chrono::Datelike;
    let scheduled: Vec<&BackupFile> = backups
        .iter()
        .filter(|b| b.kind == BackupKind::Scheduled)
        .collect();
    let mut keep = vec![false; scheduled.len()];
    if let Some(first) = keep.first_mut() {
        *first = true;
    }
    let mut days = Vec::new();
    let mut weeks = Vec::new();
    for (i, b) in scheduled.iter().enumerate() {
        let day = b.time.date_naive();
        if !days.contains(&day) && days.len() < keep_daily {
            days.push(day);
            keep[i] = true;
        }
        let week = (b.time.iso_week().year(), b.time.iso_week().week());
        if !weeks.contains(&week) && weeks.len() < keep_weekly {
            weeks.push(week);
            keep[i] = true;
        }
    }
    scheduled
        .iter()
        .zip(keep)
        .filter(|(_, kept)| !kept)
        .map(|(b, _)| b.file.clone())
        .collect()
}

/// Removes the scheduled backups of `database` in `folder` that [`rotation`] names;
/// returns the names removed.
pub fn rotate_backups(
    folder: &Path,
    database: &Path,
    keep_daily: usize,
    keep_weekly: usize,
) -> Vec<String> {
    let mut removed = Vec::new();
    for file in rotation(&list_backups(folder, database), keep_daily, keep_weekly) {
        let path = folder.join(&file);
        match std::fs::remove_file(&path) {
            Ok(()) => removed.push(file),
            Err(e) => log::warn!("Cannot remove the old backup {}: {e}", path.display()),
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(time: &str, seq: u64) -> BackupFile {
        let time = NaiveDateTime::parse_from_str(time, "%Y-%m-%d %H:%M")
            .unwrap()
            .and_utc();
        BackupFile {
            file: name(Path::new("sqlite.db"), BackupKind::Scheduled, time, seq),
            size: 1,
            time,
            kind: BackupKind::Scheduled,
            seq,
        }
    }

    #[test]
    fn rotation_keeps_the_newest_of_each_recent_day_and_week() {
        // Newest first: two on Nov 26, one a day back to Nov 10 (a Tuesday), one on Oct 1.
        let mut backups = vec![at("2026-11-26 18:00", 100), at("2026-11-26 09:00", 99)];
        for day in (10..=25).rev() {
            backups.push(at(&format!("2026-11-{day:02} 09:00"), day));
        }
        backups.push(at("2026-10-01 09:00", 1));
        let removed = rotation(&backups, 7, 4);
        let kept: Vec<String> = backups
            .iter()
            .filter(|b| !removed.contains(&b.file))
            .map(|b| b.time.format("%m-%d %H").to_string())
            .collect();
        // 7 days (26 … 20), then the newest of the 4 most recent weeks with backups:
        // Nov 23-29 and 16-22 (kept already), Nov 9-15 (the 15th) and Sep 28-Oct 4.
        assert_eq!(
            kept,
            [
                "11-26 18", "11-25 09", "11-24 09", "11-23 09", "11-22 09", "11-21 09", "11-20 09",
                "11-15 09", "10-01 09"
            ]
        );
        assert_eq!(rotation(&backups[..1], 0, 1), Vec::<String>::new());
        // Before-migration backups are never rotated.
        let mut special = at("2020-01-01 00:00", 1);
        special.kind = BackupKind::BeforeMigration(4);
        assert!(rotation(&[at("2026-11-26 18:00", 2), special], 1, 0).is_empty());
    }

    #[test]
    fn the_backup_written_last_is_kept_whatever_the_clock_said() {
        // The clock jumped back three days: the newest by number is the oldest by time.
        let backups = [at("2026-11-23 10:00", 3), at("2026-11-26 10:00", 2)];
        assert_eq!(rotation(&backups, 1, 0), [backups[1].file.clone()]);
    }

    #[test]
    fn names_carry_kind_time_and_number() {
        let db = Path::new("/data/sqlite.db");
        let time = Utc.with_ymd_and_hms(2026, 11, 26, 10, 58, 30).unwrap();
        for kind in [
            BackupKind::Scheduled,
            BackupKind::BeforeMigration(4),
            BackupKind::BeforeRewrite,
        ] {
            let file = name(db, kind, time, 42);
            assert_eq!(parse(&file, db), Some((kind, time, 42)), "{file}");
        }
        assert_eq!(
            name(db, BackupKind::Scheduled, time, 7),
            "sqlite-2026-11-26T10-58-30Z-n7.db"
        );
        // Names of earlier versions.
        assert_eq!(
            parse("sqlite-2026-11-26T10-58-30Z.db", db),
            Some((BackupKind::Scheduled, time, 0))
        );
        assert_eq!(
            parse("sqlite-before-schema-v4-2026-11-26T10-58-30Z.db", db),
            Some((BackupKind::BeforeMigration(4), time, 0))
        );
        assert_eq!(parse(".sqlite-2026-11-26T10-58-30Z.db.partial", db), None);
        assert_eq!(parse("other-2026-11-26T10-58-30Z.db", db), None);
    }
}
