//! The journal's rows in the database: the database's identity (a random id and the
//! number of the last journal record its last commit held, `aw_server_journal`) and, for
//! an encrypted database, the key its journal's records are encrypted with
//! (`aw_server_journal_key`). The reference server never reads them; a backup or a
//! salvaged copy carries them along.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};
use zeroize::Zeroizing;

use super::journal::{self, Journal, JournalCipher, KEY_LEN};
use crate::error::{DatastoreError, Result};

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
    store_journal_key(target, &key)
}

/// Makes `key` the journal key of the database behind `conn`.
fn store_journal_key(conn: &Connection, key: &[u8]) -> Result<()> {
    conn.execute_batch(JOURNAL_KEY_SQL)?;
    conn.execute(
        "INSERT OR REPLACE INTO aw_server_journal_key (id, key) VALUES (1, ?1)",
        [key],
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
    match key {
        Some(key) => store_journal_key(conn, key.as_slice()),
        None => Ok(()),
    }
}

/// The key of the journal of the encrypted database behind `conn` (made and stored the
/// first time).
pub(super) fn journal_key(conn: &Connection) -> Result<Zeroizing<[u8; KEY_LEN]>> {
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
pub(super) fn journal_cipher(
    conn: &Connection,
    key: &Zeroizing<[u8; KEY_LEN]>,
) -> Result<JournalCipher> {
    let drawn: Vec<u8> = conn.query_row("SELECT randomblob(16)", [], |r| r.get(0))?;
    let mut prefix = [0u8; 16];
    for (to, from) in prefix.iter_mut().zip(drawn) {
        *to = from;
    }
    Ok(JournalCipher::new(key, prefix))
}
