//! Encryption at rest: the SQLCipher build, and the password that unlocks a database.
//!
//! With the `encryption` feature the crate is built on SQLCipher instead of plain SQLite
//! (`encryption-vendored` also builds OpenSSL from source, so the build needs nothing from
//! the system). A database opened with a [`DbPassword`] gets `PRAGMA key` before any other
//! statement touches the file, with SQLCipher's defaults, as the reference's encrypted
//! build does: a file moves between the two servers unchanged. Right after the key, one
//! read of the schema tells a wrong password (or an encrypted file opened without one)
//! apart from a damaged file, so startup fails with a clear message instead of a
//! corrupt-database error later.
//!
//! Moving a database between plain and encrypted is `convert.rs`'s.
//!
//! Without the feature, SQLite cannot read encrypted files: a password is refused at open
//! ([`DatastoreError::Encryption`]).

use rusqlite::{Connection, ErrorCode};
use std::path::Path;
use zeroize::Zeroizing;

use crate::error::{DatastoreError, Result};

/// A database password: never empty, never printed (`Debug` shows no characters), and wiped
/// from memory when dropped. Copies made by whoever handed it over (a command-line parser,
/// the environment) are theirs to clear.
#[derive(Clone)]
pub struct DbPassword(Zeroizing<String>);

impl DbPassword {
    /// Takes `password`; an empty one is refused (it would mean "not encrypted" to SQLCipher,
    /// writing plaintext the user asked to have encrypted).
    pub fn new(password: String) -> Result<DbPassword> {
        let password = Zeroizing::new(password);
        if password.is_empty() {
            return Err(DatastoreError::Encryption(
                "the database password is empty; refusing to start".into(),
            ));
        }
        Ok(DbPassword(password))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for DbPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DbPassword(..)")
    }
}

/// Whether this build can read and write encrypted databases.
pub const AVAILABLE: bool = cfg!(feature = "encryption");

/// Applies `password` to a connection that has run no statement yet, then checks that the
/// file can be read: with the right password (or none, for a plain file) its schema reads;
/// otherwise the error says which case it is, never the password.
pub(crate) fn unlock(conn: &Connection, password: Option<&DbPassword>, path: &Path) -> Result<()> {
    if let Some(password) = password {
        if !AVAILABLE {
            return Err(DatastoreError::Encryption(
                "this build has no database encryption (build with the `encryption` feature)"
                    .into(),
            ));
        }
        // `PRAGMA key` takes no bound parameter; the value is written as a quoted literal.
        conn.pragma_update(None, "key", password.as_str())
            .map_err(|_| DatastoreError::Encryption("the database key could not be set".into()))?;
    }
    match conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    }) {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::NotADatabase => {
            Err(match password {
                Some(_) => DatastoreError::Encryption(format!(
                    "cannot read '{}' with this password: the password is wrong, or the file \
                     is not an encrypted ActivityWatch database (a plain one is encrypted with \
                     `aw-server encrypt-db`)",
                    path.display()
                )),
                // Without a password this is what a damaged file gives too.
                None if AVAILABLE => DatastoreError::Sql(
                    format!(
                        "cannot read '{}': it is encrypted (start with --db-password or \
                     AW_DB_PASSWORD) or it is not a database",
                        path.display()
                    )
                    .into(),
                ),
                None => DatastoreError::Sql(
                    format!(
                        "cannot read '{}': it is not a database, or it is encrypted (which needs \
                     a build with the `encryption` feature)",
                        path.display()
                    )
                    .into(),
                ),
            })
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_password_is_refused_and_none_is_ever_printed() {
        assert!(matches!(
            DbPassword::new(String::new()),
            Err(DatastoreError::Encryption(_))
        ));
        let password = DbPassword::new("hunter2".into()).unwrap();
        assert!(!format!("{password:?}").contains("hunter2"));
    }
}
