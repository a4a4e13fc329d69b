//! Applying the journal's acknowledged writes at start, exactly once, to the file they were
//! written for, also when another program (the reference server can open the same file)
//! wrote to it in between.
//!
//! The database keeps its own id and the sequence number of the last journal record its
//! last commit held (`identity.rs`). The records after that number are applied in one
//! transaction that also stores the new number.
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

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::identity::{journal_cipher, journal_key, marker, store_committed};
use super::journal::{self, Contents, Journal, JournalCipher};
use crate::error::{DatastoreError, Result};
use crate::file::names::with_suffix;
use crate::store::change::{Change, INSERT_BUCKET_SQL, INSERT_EVENT_SQL, NEW_ROW};

/// What recovery hands the worker.
#[derive(Debug)]
pub(crate) struct Recovered {
    /// The journal, open for appending.
    pub journal: Journal,
    /// Acknowledged changes found in the journal that could not be committed now (a disk
    /// still full): the worker holds them as its open batch and commits them when it can.
    /// They are in the journal already.
    pub held: Vec<Change>,
    /// For the derived state of an encrypted database: the journal key with a nonce prefix
    /// of its own.
    pub derived_cipher: Option<JournalCipher>,
}

/// `<database>.pending.json`: what a stop of an earlier version could not commit.
fn legacy_pending(db: &Path) -> std::path::PathBuf {
    with_suffix(db, ".pending.json")
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
    // The journal opened for appending after `last`, going on after `contents`.
    // Whether writes of the last run were found (applied, or held).
    let open = |last: u64, contents: Option<&Contents>, held: Vec<Change>| {
        let journal = Journal::open(db, &id, last, contents, cipher()?)
            .map_err(|e| DatastoreError::io("open the journal", &path, &e))?;
        Ok(Recovered {
            journal,
            held,
            derived_cipher: cipher()?,
        })
    };
    let contents = match matching_records(&path, &id, committed, cipher()?.as_ref()) {
        Some(c) => c,
        None => match adopt_legacy_pending(db, &id, committed, cipher()?)? {
            Some(c) => c,
            None => return open(committed, None, Vec::new()),
        },
    };
    let due: Vec<&(u64, Vec<Change>)> = contents
        .records
        .iter()
        .filter(|(seq, _)| *seq > committed)
        .collect();
    let Some(last) = due.last().map(|(seq, _)| *seq) else {
        return open(committed, None, Vec::new());
    };
    let changes: Vec<Change> = due.iter().flat_map(|(_, c)| c.iter().cloned()).collect();
    let count = changes.len();
    match apply_held(conn, changes.clone(), last) {
        Ok(()) => {
            log::warn!(
                "Applied {count} acknowledged changes the last run had not committed ({})",
                path.display()
            );
            open(last, None, Vec::new())
        }
        Err(e) => {
            log::error!(
                "Cannot apply the {count} acknowledged changes of {} now ({e}): they are \
                 held and applied as soon as the database can be written",
                path.display()
            );
            // Worked out again without writing, for the worker to apply when it can.
            let held = apply_remapped_dry(conn, changes)?;
            open(committed, Some(&contents), held)
        }
    }
}

/// The journal at `path` if its records are for database `id` at a commit it holds
/// (`committed` or before); a journal of another file is kept aside. `None` also when
/// there is none, or it holds no record.
fn matching_records(
    path: &Path,
    id: &str,
    committed: u64,
    cipher: Option<&JournalCipher>,
) -> Option<Contents> {
    match journal::read(path, cipher) {
        Ok(Some(c)) if c.records.is_empty() => None,
        Ok(Some(c)) if c.names(id) && c.base() <= committed => Some(c),
        Ok(Some(c)) => {
            let why = format!(
                "it was written for database {} after its commit {}, and this file is \
                 database {id} at commit {committed}",
                c.database_id(),
                c.base()
            );
            keep_unmatched(path, &why);
            None
        }
        Ok(None) => None,
        Err(e) => {
            keep_unmatched(path, &e.to_string());
            None
        }
    }
}

/// Applies the held `changes` and stores `last` as committed, in one transaction of its
/// own (the worker's has not begun yet); nothing of it stays when it fails.
/// What they change is kept tagged `last` (`store/touch_log.rs`), as a commit keeps it.
fn apply_held(conn: &Connection, changes: Vec<Change>, last: u64) -> Result<()> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let mut touched = Vec::new();
    apply_remapped(&tx, changes, Some(&mut touched))?;
    crate::store::touch_log::keep_applied(&tx, last, touched)?;
    store_committed(&tx, last)?;
    tx.commit()?;
    Ok(())
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
/// the database leaves it (see the module docs); returns them as applied, and adds to
/// `touched` what each changed.
fn apply_remapped(
    conn: &Connection,
    changes: Vec<Change>,
    mut touched: Option<&mut Vec<crate::store::Changed>>,
) -> rusqlite::Result<Vec<Change>> {
    let mut map = IdMap::default();
    let mut applied = Vec::with_capacity(changes.len());
    for change in changes {
        if let Some(change) = remap(conn, &mut map, change)? {
            if let Some(touched) = touched.as_deref_mut() {
                touched.extend(crate::store::touch_log::touched_by(conn, &change)?);
            }
            change.apply(conn)?;
            applied.push(change);
        }
    }
    Ok(applied)
}

/// [`apply_remapped`] in a transaction that is rolled back: the changes as they would be
/// applied now, with nothing written.
fn apply_remapped_dry(conn: &Connection, changes: Vec<Change>) -> Result<Vec<Change>> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Deferred)?;
    let result = apply_remapped(&tx, changes.clone(), None);
    // Rolled back unless SQLite already did (a full disk can end the transaction itself;
    // a `ROLLBACK` then fails and the start with it).
    tx.finish()?;
    // When even that fails (nothing can be written), the records as they are.
    Ok(result.unwrap_or(changes))
}

/// The change with the ids it gets on this database; `None` when it is there already.
fn remap(conn: &Connection, map: &mut IdMap, change: Change) -> rusqlite::Result<Option<Change>> {
    match change {
        Change::CreateBucket { row, columns } => {
            let new_row = match bucket_row(conn, row, &columns)? {
                Err(existing) => {
                    map.buckets.insert(row, existing);
                    return Ok(None);
                }
                Ok(new_row) => new_row,
            };
            map.buckets.insert(row, new_row);
            Ok(Some(Change::CreateBucket {
                row: new_row,
                columns,
            }))
        }
        Change::InsertEvent {
            id,
            bucketrow,
            start,
            end,
            data,
        } => {
            let bucketrow = map.bucket(bucketrow);
            let row = (bucketrow, start, end, data);
            let Some(new_id) = event_id(conn, id, &row)? else {
                map.events.insert(id, id);
                return Ok(None);
            };
            map.events.insert(id, new_id);
            let (bucketrow, start, end, data) = row;
            Ok(Some(Change::InsertEvent {
                id: new_id,
                bucketrow,
                start,
                end,
                data,
            }))
        }
        other => Ok(Some(other.with_ids(|b| map.bucket(b), |e| map.event(e)))),
    }
}

/// The row a recorded bucket `row` gets here: `Err` with the row of a bucket of the same
/// name that exists (it takes the records' events), else `row` if it is free, else the row
/// SQLite would give a new bucket.
fn bucket_row(
    conn: &Connection,
    row: i64,
    columns: &[String; 6],
) -> rusqlite::Result<std::result::Result<i64, i64>> {
    let by_name: Option<i64> = conn
        .prepare_cached("SELECT id FROM buckets WHERE name = ?1")?
        .query_row([&columns[0]], |r| r.get(0))
        .optional()?;
    if let Some(existing) = by_name {
        return Ok(Err(existing));
    }
    let taken = conn
        .prepare_cached("SELECT 1 FROM buckets WHERE id = ?1")?
        .exists([row])?;
    if !taken {
        return Ok(Ok(row));
    }
    let [name, type_, client, hostname, created, data] = columns;
    conn.prepare_cached(INSERT_BUCKET_SQL)?.execute(params![
        NEW_ROW, name, type_, client, hostname, created, data
    ])?;
    let id = conn.last_insert_rowid();
    conn.execute("DELETE FROM buckets WHERE id = ?1", [id])?;
    Ok(Ok(id))
}

/// The id a recorded event `id` gets here: `id` if it is free, `None` if it holds this very
/// row (written before), else a fresh id: the next SQLite would give (reserved by an
/// insert that the change's own insert then replaces).
fn event_id(
    conn: &Connection,
    id: i64,
    row: &(i64, i64, i64, String),
) -> rusqlite::Result<Option<i64>> {
    let there: Option<(i64, i64, i64, String)> = conn
        .prepare_cached("SELECT bucketrow, starttime, endtime, data FROM events WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    match there {
        None => Ok(Some(id)),
        Some(there) if &there == row => Ok(None),
        Some(_) => {
            let (bucketrow, start, end, data) = row;
            conn.prepare_cached(INSERT_EVENT_SQL)?
                .execute(params![NEW_ROW, bucketrow, start, end, data])?;
            let fresh = conn.last_insert_rowid();
            conn.execute("DELETE FROM events WHERE id = ?1", [fresh])?;
            Ok(Some(fresh))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_in(dir: &tempfile::TempDir) -> (Connection, std::path::PathBuf) {
        let path = dir.path().join("sqlite.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::store::schema::migrate(&mut conn, crate::file::create_marker).unwrap();
        crate::store::schema::ensure_own_tables(&conn).unwrap();
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

    /// The held writes cannot be applied at start, and SQLite ends the transaction itself
    /// while it tries (as a full disk can; here a trigger that rolls back): the start goes
    /// on with the writes held for the worker, not with an error, and nothing is written.
    #[test]
    fn held_writes_are_kept_when_sqlite_ends_the_transaction_itself() {
        let dir = tempfile::tempdir().unwrap();
        let (conn, db) = db_in(&dir);
        let (id, committed) = marker(&conn).unwrap();
        let mut journal = Journal::open(&db, &id, committed, None, None).unwrap();
        let held = bucket_with_event(r#"{"ours":1}"#);
        journal.append(&held).unwrap();
        drop(journal);
        conn.execute_batch(
            "CREATE TEMP TRIGGER refuse BEFORE INSERT ON events
             BEGIN SELECT RAISE(ROLLBACK, 'the disk is full'); END",
        )
        .unwrap();

        let recovered = recover(&conn, &db, false).unwrap();
        assert_eq!(recovered.held, held);
        assert!(events(&conn).is_empty());
        assert_eq!(marker(&conn).unwrap().1, committed);
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
