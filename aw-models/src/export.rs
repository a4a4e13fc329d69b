//! The export/import document.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use crate::Bucket;

/// `{"buckets": {"<id>": bucket-with-events, …}}`: what export produces and import takes.
/// On import the map keys are ignored; each bucket's own `id` names it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BucketsExport {
    /// The buckets, each with its `events`.
    pub buckets: HashMap<String, Bucket>,
}
