//! The on-disk schema, identical to aw-server-rust's (`user_version` 5), and its migrations.
//!
//! Keeping the reference's file format means a user can point this server at an existing
//! `sqlite.db` in place, and go back, without an export.

use rusqlite::{Connection, OptionalExtension};

use crate::error::{DatastoreError, Result};

/// The schema version this code reads and writes.
pub const SCHEMA_VERSION: i64 = 5;

/// Sets the connection pragmas: WAL (so a crash never leaves a half-written page) with
/// `synchronous=FULL` (so a committed transaction survives power loss).
pub(crate) fn configure(conn: &Connection) -> Result<()> {
    configure_as(conn, Durability::Full)
}

/// When a connection's commits reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Each commit is synced (`synchronous=FULL`): every open of a file that exists.
    Full,
    /// Nothing is synced until `finish_creation` (`file/open.rs`): a file being created, which holds no
    /// data yet, so a crash before it is synced loses nothing anyone was told was stored.
    /// The switch to WAL and the first commit then cost three syncs instead of ten.
    Creating,
}

/// [`configure`], or with syncs deferred to `finish_creation` (`file/open.rs`) for a file being created.
pub(crate) fn configure_as(conn: &Connection, durability: Durability) -> Result<()> {
    if durability == Durability::Creating {
        // Before the switch to WAL: on an empty file that switch is itself a write (the
        // header's version bytes), made through a rollback journal with four syncs.
        conn.execute_batch("PRAGMA synchronous=OFF;")?;
        // Also before it, the one moment a file takes this mode without a VACUUM: pages
        // a deletion frees can then go back to the file system while serving
        // (`store/reclaim.rs`). The reference opens and writes such files as any other.
        conn.execute_batch("PRAGMA auto_vacuum=INCREMENTAL;")?;
    }
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        log::warn!("SQLite refused WAL mode (journal_mode is {mode}); continuing");
    }
    if durability == Durability::Full {
        conn.execute_batch("PRAGMA synchronous=FULL;")?;
    }
    // Space a write frees inside a page it writes anyway is zeroed: without it, a page
    // split leaves the old cells' bytes in the page's free area (seen: the events root
    // page kept forty rows after it became an interior page), where no deletion, privacy
    // run or scrub reaches them. No extra I/O; freed whole pages are zeroed only where the
    // history is rewritten (`Store::securely`).
    conn.execute_batch("PRAGMA secure_delete = FAST;")?;
    // The cache holds every statement of the hot paths at once.
    conn.set_prepared_statement_cache_capacity(64);
    // Plans must not depend on bound values: otherwise this SQLite build (with STAT4) marks a
    // cached statement whose `LIMIT ?` or range bound the planner looked at as expired on
    // every new binding, and re-parses and re-plans it on each use. Our statements' plans
    // are fixed by design (index walks, asserted in tests), so nothing is lost.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// The reference's schema versions, each with the statements that bring a file to it from
/// the one before.
const MIGRATIONS: [(i64, &str); 5] = [
    (
        1,
        "CREATE TABLE IF NOT EXISTS buckets (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                name TEXT UNIQUE NOT NULL,
                type TEXT NOT NULL,
                client TEXT NOT NULL,
                hostname TEXT NOT NULL,
                created TEXT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS bucket_id_index ON buckets(id);
            CREATE TABLE IF NOT EXISTS events (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                bucketrow INTEGER NOT NULL,
                starttime INTEGER NOT NULL,
                endtime INTEGER NOT NULL,
                data TEXT NOT NULL,
                FOREIGN KEY (bucketrow) REFERENCES buckets(id)
            );
            CREATE INDEX IF NOT EXISTS events_bucketrow_index ON events(bucketrow);
            CREATE INDEX IF NOT EXISTS events_starttime_index ON events(starttime);
            CREATE INDEX IF NOT EXISTS events_endtime_index ON events(endtime);",
    ),
    (2, "ALTER TABLE buckets ADD COLUMN data TEXT DEFAULT '{}';"),
    (
        3,
        "ALTER TABLE buckets RENAME COLUMN data TO data_deprecated;
             ALTER TABLE buckets ADD COLUMN data TEXT NOT NULL DEFAULT '{}';",
    ),
    (
        4,
        "CREATE TABLE IF NOT EXISTS key_value (
                key TEXT PRIMARY KEY,
                value TEXT,
                last_modified NUMBER NOT NULL
            );",
    ),
    (
        5,
        "DROP INDEX IF EXISTS events_bucketrow_index;
             DROP INDEX IF EXISTS events_starttime_index;
             DROP INDEX IF EXISTS events_endtime_index;
             CREATE INDEX IF NOT EXISTS events_bucketrow_starttime_endtime_index
                 ON events(bucketrow, starttime DESC, endtime);",
    ),
];

/// The schema the steps of [`MIGRATIONS`] leave, with the text SQLite then stores (a column
/// added by `ALTER TABLE` is appended to its table's text), written at once: a new file is
/// made with these statements instead of the steps, whose column renames and dropped
/// indexes took a third of an empty database's start (1.0 of 2.9 ms). A test checks that
/// both ways leave the same `sqlite_master`.
const CURRENT_SCHEMA: &str = "CREATE TABLE buckets (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                name TEXT UNIQUE NOT NULL,
                type TEXT NOT NULL,
                client TEXT NOT NULL,
                hostname TEXT NOT NULL,
                created TEXT NOT NULL
            , data_deprecated TEXT DEFAULT '{}', data TEXT NOT NULL DEFAULT '{}');
CREATE INDEX bucket_id_index ON buckets(id);
CREATE TABLE events (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                bucketrow INTEGER NOT NULL,
                starttime INTEGER NOT NULL,
                endtime INTEGER NOT NULL,
                data TEXT NOT NULL,
                FOREIGN KEY (bucketrow) REFERENCES buckets(id)
            );
CREATE TABLE key_value (
                key TEXT PRIMARY KEY,
                value TEXT,
                last_modified NUMBER NOT NULL
            );
CREATE INDEX events_bucketrow_starttime_endtime_index
                 ON events(bucketrow, starttime DESC, endtime);";

/// Brings the schema to [`SCHEMA_VERSION`]; returns the version found before migrating
/// (0 means the database was just created). On an existing file each step runs in its own
/// transaction, so an interrupted upgrade resumes where it stopped; a new file gets
/// [`CURRENT_SCHEMA`], the long-events index and what `at_creation` adds (the journal's
/// marker row, which is the file's: `file/recovery.rs`) in one transaction (one commit:
/// startup on an empty database took 17 ms against the reference's 5 with a commit per
/// step).
pub(crate) fn migrate(
    conn: &mut Connection,
    at_creation: impl FnOnce(&Connection) -> Result<()>,
) -> Result<i64> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(DatastoreError::UnsupportedDbVersion(found, SCHEMA_VERSION));
    }
    if found == 0 {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)?;
        tx.execute_batch(CURRENT_SCHEMA)?;
        tx.execute_batch(LONG_EVENTS_INDEX)?;
        at_creation(&tx)?;
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))?;
        tx.commit()?;
        return Ok(found);
    }
    migrate_in_steps(conn, found)?;
    Ok(found)
}

/// Runs each step of [`MIGRATIONS`] above `found`, each in its own transaction.
fn migrate_in_steps(conn: &mut Connection, found: i64) -> Result<()> {
    for (version, sql) in MIGRATIONS {
        if found < version {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)?;
            tx.execute_batch(sql)?;
            tx.execute_batch(&format!("PRAGMA user_version = {version};"))?;
            tx.commit()?;
            log::info!("Upgraded database schema to version {version}");
        }
    }
    Ok(())
}

/// Events longer than this (ns; one hour) are "long": range reads find them through
/// [`LONG_EVENTS_INDEX`] instead of walking the main index back to their start (see
/// `store/range_read.rs`). The number also stands, as a literal, in `long_event_condition!`
/// (SQLite uses a partial index only for a query that repeats its condition).
pub(crate) const LONG_EVENT_NS: i64 = 3_600_000_000_000;

/// A partial index of the long events only, by bucket and end: a handful of rows per day at
/// most (AFK nights, a window left open), so it costs writes almost nothing. Not part of the
/// reference's schema; the reference opens and maintains a file that has it like any other
/// index, and `user_version` stays 5.
pub(crate) const LONG_EVENTS_INDEX: &str = concat!(
    "CREATE INDEX IF NOT EXISTS events_long_by_end
     ON events(bucketrow, endtime, starttime) WHERE ",
    long_event_condition!()
);

/// Creates what this server adds to the reference's schema if the file lacks it (once per
/// file: a new database, or one written by the reference, where building
/// [`LONG_EVENTS_INDEX`] reads every event once): that index, and the table of what each
/// commit changed (`touch_log.rs`).
pub(crate) fn ensure_own_tables(conn: &Connection) -> Result<()> {
    conn.execute_batch(LONG_EVENTS_INDEX)?;
    conn.execute_batch(crate::store::touch_log::CREATE_TOUCH_LOG)?;
    Ok(())
}

/// Event ids above this are never handed out: far enough from `i64::MAX` that the
/// `AUTOINCREMENT` sequence can never run out (2^62 ids leave 2^62 more inserts).
pub(crate) const MAX_EVENT_ID: i64 = 1 << 62;

/// Undoes what a client-chosen id may have done to the event id sequence in a file written
/// by another server (COMPATIBILITY.md, server #18: the reference stores any unused id it is given, and an
/// event with id `i64::MAX` makes every later insert fail with "database or disk is full").
///
/// Events with an id above [`MAX_EVENT_ID`] get the next free ids below it (their content is
/// kept; only the id changes, and this is logged), and the sequence is set back to the
/// highest id in use. Costs two index look-ups when there is nothing to repair, so it runs
/// at every open.
pub(crate) fn repair_id_sequence(conn: &mut Connection) -> Result<()> {
    let seq: Option<i64> = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let top: Option<i64> = conn.query_row("SELECT MAX(id) FROM events", [], |r| r.get(0))?;
    if seq.unwrap_or(0) <= MAX_EVENT_ID && top.unwrap_or(0) <= MAX_EVENT_ID {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let high: Vec<i64> = tx
        .prepare("SELECT id FROM events WHERE id > ?1 ORDER BY id")?
        .query_map([MAX_EVENT_ID], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut next: i64 = tx.query_row(
        "SELECT COALESCE(MAX(id), 0) FROM events WHERE id <= ?1",
        [MAX_EVENT_ID],
        |r| r.get(0),
    )?;
    for id in &high {
        next += 1;
        tx.execute("UPDATE events SET id = ?1 WHERE id = ?2", [next, *id])?;
        log::warn!("Event id {id} is too close to the 64-bit limit; renumbered to {next}");
    }
    tx.execute(
        "UPDATE sqlite_sequence SET seq = ?1 WHERE name = 'events'",
        [next],
    )?;
    tx.commit()?;
    log::warn!("Reset the event id sequence from {seq:?} to {next}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master(conn: &Connection) -> Vec<(String, String, String, Option<String>)> {
        let mut rows = conn
            .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        rows.sort();
        rows
    }

    /// A new file made at once and one made by the reference's steps (then given what a
    /// start adds to both: our own tables and index, and the marker) have the same
    /// schema, text for text, and the same columns.
    #[test]
    fn a_new_file_gets_the_schema_the_steps_leave() {
        let mut direct = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut direct, crate::file::create_marker).unwrap(), 0);
        ensure_own_tables(&direct).unwrap();
        let mut stepped = Connection::open_in_memory().unwrap();
        migrate_in_steps(&mut stepped, 0).unwrap();
        ensure_own_tables(&stepped).unwrap();
        crate::file::marker(&stepped).unwrap();
        assert_eq!(master(&direct), master(&stepped));
        let columns =
            |conn: &Connection, table: &str| -> Vec<(String, String, bool, Option<String>)> {
                conn.prepare(&format!("PRAGMA table_info({table})"))
                    .unwrap()
                    .query_map([], |r| Ok((r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                    .unwrap()
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .unwrap()
            };
        for table in ["buckets", "events", "key_value"] {
            assert_eq!(columns(&direct, table), columns(&stepped, table), "{table}");
        }
        let version = |conn: &Connection| -> i64 {
            conn.query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(version(&direct), SCHEMA_VERSION);
        assert_eq!(version(&stepped), SCHEMA_VERSION);
    }

    /// The partial index's condition and the constant the range reads compute with must be
    /// the same hour, or long events would be missed or read twice.
    #[test]
    fn the_long_event_condition_is_long_event_ns() {
        assert_eq!(
            long_event_condition!(),
            format!("endtime - starttime > {LONG_EVENT_NS}")
        );
    }
}
