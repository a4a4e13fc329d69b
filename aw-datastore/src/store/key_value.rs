//! The key-value table (settings).

use chrono::Utc;
use rusqlite::{params, OptionalExtension};

use super::Store;
use crate::error::{DatastoreError, Result};
use crate::store::change::{Change, Changes};
use crate::store::privacy::PRIVACY_FILTERS_KEY;

impl Store {
    /// The JSON text stored under `key`.
    pub(crate) fn get_key_value(&self, key: &str) -> Result<String> {
        self.conn
            .prepare_cached("SELECT value FROM key_value WHERE key = ?1")?
            .query_row([key], |r| r.get::<_, Option<String>>(0))
            .optional()?
            .map(|v| v.unwrap_or_else(|| "null".to_string()))
            .ok_or_else(|| DatastoreError::NoSuchKey(key.to_string()))
    }

    /// Stores JSON text under `key`.
    pub(crate) fn set_key_value(
        &mut self,
        changes: &mut Changes,
        key: &str,
        value: &str,
    ) -> Result<()> {
        let modified = Utc::now().timestamp();
        changes.apply(
            &self.conn,
            Change::SetKeyValue {
                key: key.to_string(),
                value: value.to_string(),
                modified,
            },
        )?;
        if key == PRIVACY_FILTERS_KEY {
            self.load_privacy_filter(Some(value));
        }
        Ok(())
    }

    /// Deletes `key` (a missing key is not an error).
    pub(crate) fn delete_key_value(&mut self, changes: &mut Changes, key: &str) -> Result<()> {
        changes.apply(
            &self.conn,
            Change::DeleteKeyValue {
                key: key.to_string(),
            },
        )?;
        if key == PRIVACY_FILTERS_KEY {
            self.load_privacy_filter(None);
        }
        Ok(())
    }

    /// Every `(key, JSON text)` whose key starts with `prefix`.
    pub(crate) fn get_key_values(&self, prefix: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value FROM key_value WHERE substr(key, 1, ?2) = ?1")?;
        let rows = stmt
            .query_map(params![prefix, prefix.chars().count() as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or_else(|| "null".to_string())))
            .collect())
    }
}
