//! The body of a query request.

use serde::{Deserialize, Serialize};

use crate::TimeInterval;

/// `{"timeperiods": ["start/end", …], "query": ["line", …]}`. The lines are joined with
/// `"\n"` into one program, which runs once per time period.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// The periods to evaluate the program over, one result each.
    pub timeperiods: Vec<TimeInterval>,
    /// The program, as lines.
    pub query: Vec<String>,
}
