//! What a run of the rules over the stored history reports: per rule the events it
//! dropped or redacted, their seconds, samples, and the buckets it changed or emptied
//! (`privacy.rs` judges, `privacy_past.rs` runs).

use serde::Serialize;

/// The most samples a report gives per rule.
pub(super) const MAX_SAMPLES: usize = 5;

/// The longest sample value shown (characters); longer ones are cut.
pub(super) const SAMPLE_CHARS: usize = 120;

/// What the rules did, or would do, to the stored history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PrivacyReport {
    /// Events looked at.
    pub events: u64,
    /// Events dropped (by any rule).
    pub dropped: u64,
    /// Events redacted and kept.
    pub redacted: u64,
    /// Each enabled rule's part, in the setting's order.
    pub rules: Vec<RuleReport>,
    /// Rules of the setting that were skipped (not valid).
    pub skipped_rules: Vec<String>,
}

/// One rule's part in a run over the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuleReport {
    /// Its position in the setting's array.
    pub rule: usize,
    /// `drop` or `redact`.
    pub action: &'static str,
    /// The fields it looks at or redacts (`title`, `a.b`), joined by `, `; empty for a
    /// retention rule that deletes whole events.
    pub field: String,
    /// Its pattern (empty: every value).
    pub pattern: String,
    /// Events it dropped.
    pub dropped: u64,
    /// Events it redacted.
    pub redacted: u64,
    /// The seconds of the events it dropped or redacted.
    pub seconds: f64,
    /// Buckets it left (or a dry run would leave) without a single event.
    pub empties: Vec<String>,
    /// Buckets it changed (or would change).
    pub buckets: Vec<String>,
    /// Values the pattern could not be evaluated on (counted as no match).
    pub unevaluable: u64,
    /// Up to five of the events it matched.
    pub samples: Vec<PrivacySample>,
}

/// One event a rule matched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrivacySample {
    /// Its bucket.
    pub bucket: String,
    /// Its id.
    pub id: i64,
    /// Its start.
    pub timestamp: String,
    /// The value the rule matched (cut to 120 characters).
    pub value: String,
}
