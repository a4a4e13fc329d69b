//! What the long requests that rewrite history ask for (`Request::Compact`,
//! `Request::ApplyRules`): their arguments with the channel the answer goes back on,
//! read by the request table (`request.rs`) and taken whole by the job that runs them
//! (`job.rs`).

use crate::store::{Compaction, PrivacyReport};
use crate::worker::reply::Reply;

/// What `Request::Compact` asks for.
pub(crate) struct CompactionAsked {
    /// The buckets.
    pub buckets: Vec<String>,
    /// Only count.
    pub dry_run: bool,
    /// The number of events it must remove, as a preview said (as for `DeleteRange`).
    pub expect: Option<u64>,
    /// The answer.
    pub reply: Reply<Compaction>,
}

/// What `Request::ApplyRules` asks for.
pub(crate) struct RulesAsked {
    /// Which rules.
    pub rules: Rules,
    /// Only count.
    pub dry_run: bool,
    /// The answer.
    pub reply: Reply<PrivacyReport>,
}

/// The rules a run over the history applies.
pub(crate) enum Rules {
    /// The `privacy_filters` setting's.
    Privacy,
    /// The `retention_rules` setting's, with the cutoffs of `now` (ns), and the most events
    /// each may change (`store/privacy_past.rs`).
    Retention {
        /// The instant the ages count from.
        now: i64,
        /// One count per rule of the setting.
        expect: Option<Vec<u64>>,
    },
}
