//! Key-value pairs of the settings store.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One stored setting with the time it was last written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyValue {
    /// The key as stored (settings use the `settings.` prefix).
    pub key: String,
    /// Any JSON value.
    pub value: Value,
    /// When the value was last written.
    pub timestamp: Option<DateTime<Utc>>,
}
