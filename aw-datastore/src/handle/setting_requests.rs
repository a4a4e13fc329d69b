//! The requests about settings: the key-value rows (JSON text under a key).

use crate::handle::{Answer, Datastore};
use crate::worker::Request;

impl Datastore {
    /// The JSON text stored under `key`, or [`crate::DatastoreError::NoSuchKey`].
    pub fn get_key_value(&self, key: &str) -> Answer<String> {
        self.ask(|r| Request::GetKeyValue(key.to_string(), r))
    }

    /// Stores `value` (JSON text) under `key`.
    pub fn set_key_value(&self, key: &str, value: &str) -> Answer<()> {
        self.ask(|r| Request::SetKeyValue(key.to_string(), value.to_string(), r))
    }

    /// Deletes `key`; a missing key is not an error.
    pub fn delete_key_value(&self, key: &str) -> Answer<()> {
        self.ask(|r| Request::DeleteKeyValue(key.to_string(), r))
    }

    /// Every `(key, JSON text)` whose key starts with `prefix`.
    pub fn get_key_values(&self, prefix: &str) -> Answer<Vec<(String, String)>> {
        self.ask(|r| Request::GetKeyValues(prefix.to_string(), r))
    }
}
