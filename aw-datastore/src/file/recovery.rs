//! Applying the journal's acknowledged writes at start, exactly once, to the file they were
//! written for, also when another program (the reference server can open the same file)
//! wrote to it in between.
//!
//! The database keeps its own id and the sequence number of the last journal record its
//! last commit held, in a table of ours (`aw_server_journal`, one row; the reference
//! server never reads it, and a backup or a salvaged copy carries it along). The records
//! after that number are applied in one transaction that also stores the new number.
//!
//! Ids. The records name the rows they wrote by the ids SQLite gave them. Another program
//! that wrote in between may have taken those ids (its inserts do not see our uncommitted
//! ones), so each insert is checked first: an id that is free is used as recorded; one that
//! holds the very same row (written before, in autocommit mode) is taken as done; any
//! other gets a new id, and later records that name the old one are pointed at the new
//! one. A bucket whose name exists by then (the other program created it) takes the
//! records' events.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use super::journal::{self, Contents, Journal};
use super::journal_cipher::{JournalCipher, KEY_LEN};
use crate::error::{DatastoreError, Result};
use crate::file::names::with_suffix;
use crate::store::change::{Change, NEW_ROW};
use zeroize::Zeroizing;

/// The database's id and its last committed journal number.
const MARKER_SQL: &str = "CREATE TABLE IF NOT EXISTS aw_server_journal (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    database TEXT NOT NULL,
    committed INTEGER NOT NULL
)";

/// Reads the database's id and last committed journal number, creating the row (a new
/// random id, number 0) when the file has none (new, or written by another server).
pub(crate) fn marker(conn: &Connection) -> Result<(String, u64)> {
    conn.execute_batch(MARKER_SQL)?;
    let found = conn
        .query_row(
            "SELECT database, committed FROM aw_server_journal WHERE id = 1",
            [],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)),
        )
        .optional()?;
    match found {
        Some((id, committed)) => Ok((id, u64::try_from(committed).unwrap_or(0))),
        None => {
            conn.execute(
                "INSERT INTO aw_server_journal (id, database, committed)
                 VALUES (1, lower(hex(randomblob(16))), 0)",
                [],
            )?;
            marker(conn)
        }
    }
}

/// [`marker`] for a new file's schema (`store::schema::migrate`), in its one transaction.
pub(crate) fn create_marker(conn: &Connection) -> Result<()> {
    marker(conn).map(drop)
}

/// Stores `last` as the last committed journal number, inside the caller's transaction
/// (the commit that holds that record's changes).
pub(crate) fn store_committed(conn: &Connection, last: u64) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE aw_server_journal SET committed = ?1 WHERE id = 1")?
        .execute([i64::try_from(last).unwrap_or(i64::MAX)])?;
    Ok(())
}

/// What recovery hands the worker.
#[derive(Debug)]
pub(crate) struct Recovered {
    /// The journal, open for appending.
    pub journal: Journal,
    /// Acknowledged changes found in the journal that could not be committed now (a disk
    /// still full): the worker holds them as its open batch and commits them when it can.
    /// They are in the journal already.
    pub held: Vec<Change>,
    /// Whether acknowledged writes of the last run were found and applied (or held): then
    /// no state derived from the file as the last run left it is valid
    /// (`derived.rs`).
    pub replayed: bool,
    /// For the derived state of an encrypted database: the journal key with a nonce prefix
    /// of its own.
    pub derived_cipher: Option<JournalCipher>,
}

/// `<database>.pending.json`: what a stop of an earlier version could not commit.
fn legacy_pending(db: &Path) -> std::path::PathBuf {
    with_suffix(db, ".pending.json")
}

/// The key that encrypts the journal's records of an encrypted database (`journal_cipher.rs`),
/// kept in the database itself: made (random, by SQLite's generator) the first time.
const JOURNAL_KEY_SQL: &str = "CREATE TABLE IF NOT EXISTS aw_server_journal_key (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    key BLOB NOT NULL
)";

/// Copies the journal key of `source` (if it has one) into `target`: a salvaged copy is the
/// same database as far as the journal is concerned (its marker is copied too), and the
/// journal's records are encrypted with that key; a new key would leave them unreadable.
pub(crate) fn copy_journal_key(source: &Connection, target: &Connection) -> Result<()> {
    let Ok(key) = source.query_row(
        "SELECT key FROM aw_server_journal_key WHERE id = 1",
        [],
        |r| r.get::<_, Vec<u8>>(0),
    ) else {
        return Ok(());
    };
    let key = Zeroizing::new(key);
    target.execute_batch(JOURNAL_KEY_SQL)?;
    target.execute(
        "INSERT OR REPLACE INTO aw_server_journal_key (id, key) VALUES (1, ?1)",
        [key.as_slice()],
    )?;
    Ok(())
}

/// The journal identity a salvaged copy of `db` must carry (the database id and last
/// committed number) so that the journal's held writes apply to it: the damaged file's own
/// row when it can be read, else what the journal's header names. That row is rewritten at
/// every commit, so its page is a likely one to be damaged; without this the copy would
/// get a new identity and every acknowledged write the journal holds would be set aside.
pub(crate) fn salvage_identity(source: &Connection, db: &Path) -> Option<(String, u64)> {
    source
        .query_row(
            "SELECT database, committed FROM aw_server_journal WHERE id = 1",
            [],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)),
        )
        .ok()
        .map(|(id, committed)| (id, u64::try_from(committed).unwrap_or(0)))
        .or_else(|| journal::identity(&journal::journal_path(db)))
}

/// Makes the database behind `conn` database `id` at journal number `committed`.
pub(crate) fn set_identity(conn: &Connection, id: &str, committed: u64) -> rusqlite::Result<()> {
    conn.execute_batch(MARKER_SQL)?;
    conn.execute(
        "INSERT OR REPLACE INTO aw_server_journal (id, database, committed) VALUES (1, ?1, ?2)",
        params![id, i64::try_from(committed).unwrap_or(i64::MAX)],
    )?;
    Ok(())
}

/// Writes the identity of the worker's `journal` into a salvaged copy it goes on with
/// (`worker/live_salvage.rs`): its database id, committed number and (encrypted) key, whatever
/// the salvage could read of the damaged file's own rows.
pub(crate) fn adopt_identity(conn: &Connection, journal: &Journal) -> Result<()> {
    let (id, committed, key) = journal.identity();
    set_identity(conn, id, committed)?;
    if let Some(key) = key {
        conn.execute_batch(JOURNAL_KEY_SQL)?;
        conn.execute(
            "INSERT OR REPLACE INTO aw_server_journal_key (id, key) VALUES (1, ?1)",
            [key.as_slice()],
        )?;
    }
    Ok(())
}

/// The key of the journal of the encrypted database behind `conn` (made and stored the
/// first time).
fn journal_key(conn: &Connection) -> Result<Zeroizing<[u8; KEY_LEN]>> {
    conn.execute_batch(JOURNAL_KEY_SQL)?;
    conn.execute(
        "INSERT OR IGNORE INTO aw_server_journal_key (id, key) VALUES (1, randomblob(?1))",
        [KEY_LEN as i64],
    )?;
    let mut key = Zeroizing::new([0u8; KEY_LEN]);
    let stored: Zeroizing<Vec<u8>> = Zeroizing::new(conn.query_row(
        "SELECT key FROM aw_server_journal_key WHERE id = 1",
        [],
        |r| r.get(0),
    )?);
    if stored.len() != KEY_LEN {
        return Err(DatastoreError::Damaged(
            format!(
                "the journal key stored in the database has {} bytes, not {KEY_LEN}",
                stored.len()
            )
            .into(),
        ));
    }
    key.copy_from_slice(&stored);
    Ok(key)
}

/// A cipher with `key` and a nonce prefix of its own (random, by SQLite's generator): each
/// journal opened gets one, so no two ever share a nonce.
fn journal_cipher(conn: &Connection, key: &Zeroizing<[u8; KEY_LEN]>) -> Result<JournalCipher> {
    let drawn: Vec<u8> = conn.query_row("SELECT randomblob(16)", [], |r| r.get(0))?;
    let mut prefix = [0u8; 16];
    for (to, from) in prefix.iter_mut().zip(drawn) {
        *to = from;
    }
    Ok(JournalCipher::new(key, prefix))
}

/// Brings the journal of `db` (served through `conn`, schema current, no transaction open)
/// into the database; see the module docs. Records that belong to another file are kept
/// aside and reported. With `encrypted`, the journal's records are encrypted (and
/// encrypted ones can be read).
pub(crate) fn recover(conn: &Connection, db: &Path, encrypted: bool) -> Result<Recovered> {
    let (id, committed) = marker(conn)?;
    let key = if encrypted {
        Some(journal_key(conn)?)
    } else {
        None
    };
    // A cipher for each journal opened (and one to read with).
    let cipher = || -> Result<Option<JournalCipher>> {
        key.as_ref()
            .map(|key| journal_cipher(conn, key))
            .transpose()
    };
    let path = journal::journal_path(db);
    let opening = |e: std::io::Error| DatastoreError::io("open the journal", &path, &e);
    let contents = match journal::read(&path, cipher()?.as_ref()) {
        Ok(Some(c)) if c.records.is_empty() => None,
        Ok(Some(c)) if c.names(&id) && c.base() <= committed => Some(c),
        Ok(Some(c)) => {
            keep_unmatched(
                &path,
                &format!(
                    "it was written for database {} after its commit {}, and this file is \
                 database {id} at commit {committed}",
                    c.database_id(),
                    c.base()
                ),
            );
            None
        }
        Ok(None) => None,
        Err(e) => {
            keep_unmatched(&path, &e.to_string());
            None
        }
    };
    let contents = match contents {
        Some(c) => c,
        None => match adopt_legacy_pending(db, &id, committed, cipher()?)? {
            Some(c) => c,
            None => {
                return Ok(Recovered {
                    journal: Journal::open(db, &id, committed, None, cipher()?).map_err(opening)?,
                    held: Vec::new(),
                    replayed: false,
                    derived_cipher: cipher()?,
                })
            }
        },
    };
    let due: Vec<&(u64, Vec<Change>)> = contents
        .records
        .iter()
        .filter(|(seq, _)| *seq > committed)
        .collect();
    let Some(last) = due.last().map(|(seq, _)| *seq) else {
        return Ok(Recovered {
            journal: Journal::open(db, &id, committed, None, cipher()?).map_err(opening)?,
            held: Vec::new(),
            replayed: false,
            derived_cipher: cipher()?,
        });
    };
    let changes: Vec<Change> = due.iter().flat_map(|(_, c)| c.iter().cloned()).collect();
    let count = changes.len();
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let applied = apply_remapped(conn, changes.clone())
        .and_then(|remapped| store_committed(conn, last).map(|()| remapped))
        .and_then(|remapped| conn.execute_batch("COMMIT").map(|()| remapped));
    match applied {
        Ok(_) => {
            log::warn!(
                "Applied {count} acknowledged changes the last run had not committed ({})",
                path.display()
            );
            Ok(Recovered {
                journal: Journal::open(db, &id, last, None, cipher()?).map_err(opening)?,
                held: Vec::new(),
                replayed: true,
                derived_cipher: cipher()?,
            })
        }
        Err(e) => {
            if !conn.is_autocommit() {
                conn.execute_batch("ROLLBACK")?;
            }
            log::error!(
                "Cannot apply the {count} acknowledged changes of {} now ({e}): they are \
                 held and applied as soon as the database can be written",
                path.display()
            );
            // Worked out again without writing, for the worker to apply when it can.
            let held = apply_remapped_dry(conn, changes)?;
            Ok(Recovered {
                journal: Journal::open(db, &id, committed, Some(&contents), cipher()?)
                    .map_err(opening)?,
                held,
                replayed: true,
                derived_cipher: cipher()?,
            })
        }
    }
}

/// Keeps a journal that must not be applied here aside, and says so.
fn keep_unmatched(path: &Path, why: &str) {
    let aside = super::replace::free_aside_name(path, "unmatched");
    match std::fs::rename(path, &aside) {
        Ok(()) => log::error!(
            "The journal {} is not this database's ({why}): its acknowledged writes are \
             not applied; it is kept at {}",
            path.display(),
            aside.display()
        ),
        Err(e) => log::error!(
            "The journal {} is not this database's ({why}) and cannot be moved aside: {e}",
            path.display()
        ),
    }
}

/// An earlier version kept what a stop could not commit in `<database>.pending.json`: it
/// becomes the first record of a new journal (synced), and the file is renamed
/// `….applied`.
fn adopt_legacy_pending(
    db: &Path,
    id: &str,
    committed: u64,
    cipher: Option<JournalCipher>,
) -> Result<Option<Contents>> {
    let pending = legacy_pending(db);
    let Ok(bytes) = std::fs::read(&pending) else {
        return Ok(None);
    };
    let changes: Vec<Change> = serde_json::from_slice(&bytes).map_err(|e| {
        DatastoreError::io(
            "read",
            &pending,
            &std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })?;
    let journal_file = journal::journal_path(db);
    let in_journal = |e: std::io::Error| {
        DatastoreError::io(
            "move earlier held writes into the journal",
            &journal_file,
            &e,
        )
    };
    let mut journal = Journal::open(db, id, committed, None, cipher).map_err(in_journal)?;
    journal.append(&changes).map_err(in_journal)?;
    journal.sync().map_err(in_journal)?;
    std::fs::rename(&pending, with_suffix(&pending, ".applied"))
        .map_err(|e| DatastoreError::io("rename", &pending, &e))?;
    journal.read_back().map_err(in_journal)
}

/// Ids as the records name them → ids as applied.
#[derive(Default)]
struct IdMap {
    buckets: HashMap<i64, i64>,
    events: HashMap<i64, i64>,
}

impl IdMap {
    fn bucket(&self, row: i64) -> i64 {
        self.buckets.get(&row).copied().unwrap_or(row)
    }
    fn event(&self, id: i64) -> i64 {
        self.events.get(&id).copied().unwrap_or(id)
    }
}

/// Applies `changes` in order on `conn` (in the caller's transaction), each with the ids
/// the database leaves it (see the module docs); returns them as applied.
fn apply_remapped(conn: &Connection, changes: Vec<Change>) -> rusqlite::Result<Vec<Change>> {
    let mut map = IdMap::default();
    let mut applied = Vec::with_capacity(changes.len());
    for change in changes {
        if let Some(change) = remap(conn, &mut map, change)? {
            change.apply(conn)?;
            applied.push(change);
        }
    }
    Ok(applied)
}

/// [`apply_remapped`] in a transaction that is rolled back: the changes as they would be
/// applied now, with nothing written.
fn apply_remapped_dry(conn: &Connection, changes: Vec<Change>) -> Result<Vec<Change>> {
    conn.execute_batch("BEGIN")?;
    let result = apply_remapped(conn, changes.clone());
    if !conn.is_autocommit() {
        conn.execute_batch("ROLLBACK")?;
    }
    // When even that fails (nothing can be written), the records as they are.
    Ok(result.unwrap_or(changes))
}

/// The change with the ids it gets on this database; `None` when it is there already.
fn remap(conn: &Connection, map: &mut IdMap, change: Change) -> rusqlite::Result<Option<Change>> {
    Ok(Some(match change {
        Change::CreateBucket { row, columns } => {
            let by_name: Option<i64> = conn
                .prepare_cached("SELECT id FROM buckets WHERE name = ?1")?
                .query_row([&columns[0]], |r| r.get(0))
                .optional()?;
            if let Some(existing) = by_name {
                map.buckets.insert(row, existing);
                return Ok(None);
            }
            let taken = conn
                .prepare_cached("SELECT 1 FROM buckets WHERE id = ?1")?
                .exists([row])?;
            let new_row = if taken {
                let [name, type_, client, hostname, created, data] = &*columns;
                conn.prepare_cached(crate::store::change::INSERT_BUCKET_SQL)?
                    .execute(params![
                        NEW_ROW, name, type_, client, hostname, created, data
                    ])?;
                let id = conn.last_insert_rowid();
                conn.execute("DELETE FROM buckets WHERE id = ?1", [id])?;
                id
            } else {
                row
            };
            map.buckets.insert(row, new_row);
            Change::CreateBucket {
                row: new_row,
                columns,
            }
        }
        Change::DeleteBucket { row } => Change::DeleteBucket {
            row: map.bucket(row),
        },
        Change::RenameBucket {
            row,
            name,
            hostname,
        } => Change::RenameBucket {
            row: map.bucket(row),
            name,
            hostname,
        },
        Change::MergeBuckets { from, into } => Change::MergeBuckets {
            from: map.bucket(from),
            into: map.bucket(into),
        },
        Change::MoveEvent {
            id,
            bucketrow,
            into,
        } => Change::MoveEvent {
            id: map.event(id),
            bucketrow: map.bucket(bucketrow),
            into: map.bucket(into),
        },
        Change::InsertEvent {
            id,
            bucketrow,
            start,
            end,
            data,
        } => {
            let bucketrow = map.bucket(bucketrow);
            let there: Option<(i64, i64, i64, String)> = conn
                .prepare_cached(
                    "SELECT bucketrow, starttime, endtime, data FROM events WHERE id = ?1",
                )?
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .optional()?;
            let new_id = match there {
                None => id,
                Some(row) if row == (bucketrow, start, end, data.clone()) => {
                    map.events.insert(id, id);
                    return Ok(None);
                }
                Some(_) => {
                    // A fresh id: the next SQLite would give (reserved by an insert that
                    // the change's own insert then replaces).
                    conn.prepare_cached(crate::store::change::INSERT_EVENT_SQL)?
                        .execute(params![NEW_ROW, bucketrow, start, end, data])?;
                    let fresh = conn.last_insert_rowid();
                    conn.execute("DELETE FROM events WHERE id = ?1", [fresh])?;
                    fresh
                }
            };
            map.events.insert(id, new_id);
            Change::InsertEvent {
                id: new_id,
                bucketrow,
                start,
                end,
                data,
            }
        }
        Change::ReplaceEvent {
            id,
            start,
            end,
            data,
        } => Change::ReplaceEvent {
            id: map.event(id),
            start,
            end,
            data,
        },
        Change::RedactEvent {
            id,
            bucketrow,
            texts,
        } => Change::RedactEvent {
            id: map.event(id),
            bucketrow: map.bucket(bucketrow),
            texts,
        },
        Change::ResizeEvent {
            id,
            bucketrow,
            start,
            end,
        } => Change::ResizeEvent {
            id: map.event(id),
            bucketrow: map.bucket(bucketrow),
            start,
            end,
        },
        Change::DeleteEvent { id, bucketrow } => Change::DeleteEvent {
            id: map.event(id),
            bucketrow: map.bucket(bucketrow),
        },
        other @ (Change::SetKeyValue { .. } | Change::DeleteKeyValue { .. }) => other,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_in(dir: &tempfile::TempDir) -> (Connection, std::path::PathBuf) {
        let path = dir.path().join("sqlite.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::store::schema::migrate(&mut conn, crate::file::create_marker).unwrap();
        (conn, path)
    }

    fn events(conn: &Connection) -> Vec<(i64, i64, i64, String)> {
        let mut stmt = conn
            .prepare("SELECT id, bucketrow, endtime, data FROM events ORDER BY id")
            .unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap();
        rows.map(std::result::Result::unwrap).collect()
    }

    /// A run's first request: bucket `b` (row 1) created with one event (id 1) of `data`.
    fn bucket_with_event(data: &str) -> Vec<Change> {
        let columns = ["b", "t", "c", "h", "2026-01-01T00:00:00Z", "{}"].map(String::from);
        vec![
            Change::CreateBucket {
                row: 1,
                columns: Box::new(columns),
            },
            Change::InsertEvent {
                id: 1,
                bucketrow: 1,
                start: 0,
                end: 1,
                data: data.into(),
            },
        ]
    }

    /// A run created a bucket, inserted and resized an event, and died before its commit;
    /// another program then created a bucket of the same name and took the event's id.
    #[test]
    fn held_writes_follow_ids_another_program_took_and_apply_once() {
        let dir = tempfile::tempdir().unwrap();
        let (conn, db) = db_in(&dir);
        let (id, committed) = marker(&conn).unwrap();
        let mut journal = Journal::open(&db, &id, committed, None, None).unwrap();
        journal.append(&bucket_with_event(r#"{"ours":1}"#)).unwrap();
        journal
            .append(&[Change::ResizeEvent {
                id: 1,
                bucketrow: 1,
                start: 0,
                end: 5,
            }])
            .unwrap();
        drop(journal);
        conn.execute_batch(
            "INSERT INTO buckets (name, type, client, hostname, created) VALUES ('x', 't', 'c', 'h', 'now');
             INSERT INTO buckets (name, type, client, hostname, created) VALUES ('b', 't', 'c', 'h', 'now');
             INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (2, 0, 9, '{\"theirs\":1}');",
        )
        .unwrap();

        let recovered = recover(&conn, &db, false).unwrap();
        assert!(recovered.held.is_empty());
        assert_eq!(
            events(&conn),
            [
                (1, 2, 9, r#"{"theirs":1}"#.to_string()),
                (2, 2, 5, r#"{"ours":1}"#.to_string())
            ],
            "into the bucket of that name, under a new id, resized"
        );
        assert_eq!(marker(&conn).unwrap().1, 2);
        drop(recovered);
        // Again: nothing is applied twice.
        recover(&conn, &db, false).unwrap();
        assert_eq!(events(&conn).len(), 2);
    }

    /// A run renamed bucket `b` and merged a second bucket into it, and died before its
    /// commit: the next start applies both once (the renamed bucket holds both events, the
    /// merged one is gone), and a second start changes nothing.
    #[test]
    fn a_rename_and_a_merge_held_in_the_journal_apply_once() {
        let dir = tempfile::tempdir().unwrap();
        let (conn, db) = db_in(&dir);
        let (id, committed) = marker(&conn).unwrap();
        let mut journal = Journal::open(&db, &id, committed, None, None).unwrap();
        let mut changes = bucket_with_event(r#"{"n":1}"#);
        let columns = ["c", "t", "c", "h", "2026-01-01T00:00:00Z", "{}"].map(String::from);
        changes.push(Change::CreateBucket {
            row: 2,
            columns: Box::new(columns),
        });
        changes.push(Change::InsertEvent {
            id: 2,
            bucketrow: 2,
            start: 5,
            end: 6,
            data: r#"{"n":2}"#.into(),
        });
        journal.append(&changes).unwrap();
        journal
            .append(&[
                Change::RenameBucket {
                    row: 1,
                    name: "renamed".into(),
                    hostname: "h2".into(),
                },
                Change::MergeBuckets { from: 2, into: 1 },
            ])
            .unwrap();
        drop(journal);

        let buckets = |conn: &Connection| -> Vec<(i64, String, String)> {
            let mut stmt = conn
                .prepare("SELECT id, name, hostname FROM buckets ORDER BY id")
                .unwrap();
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap();
            rows.map(std::result::Result::unwrap).collect()
        };
        let recovered = recover(&conn, &db, false).unwrap();
        assert!(recovered.held.is_empty());
        assert_eq!(
            buckets(&conn),
            [(1, "renamed".to_string(), "h2".to_string())]
        );
        assert_eq!(
            events(&conn),
            [
                (1, 1, 1, r#"{"n":1}"#.to_string()),
                (2, 1, 6, r#"{"n":2}"#.to_string())
            ]
        );
        drop(recovered);
        recover(&conn, &db, false).unwrap();
        assert_eq!(buckets(&conn).len(), 1);
        assert_eq!(events(&conn).len(), 2);
    }

    /// What an earlier version's stop could not commit (`pending.json`) is applied once.
    #[test]
    fn an_earlier_versions_pending_file_is_applied_once() {
        let dir = tempfile::tempdir().unwrap();
        let (conn, db) = db_in(&dir);
        let held = bucket_with_event("{}");
        std::fs::write(legacy_pending(&db), serde_json::to_vec(&held).unwrap()).unwrap();
        recover(&conn, &db, false).unwrap();
        assert_eq!(events(&conn).len(), 1);
        assert!(!legacy_pending(&db).exists());
        assert!(with_suffix(&legacy_pending(&db), ".applied").exists());
        recover(&conn, &db, false).unwrap();
        assert_eq!(events(&conn).len(), 1, "applied once");
    }
}
