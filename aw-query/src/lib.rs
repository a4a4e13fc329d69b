//! The ActivityWatch query language ("query2"), as served by `POST /api/0/query/`.
//!
//! A program is parsed once and evaluated once per requested time period (`program.rs`),
//! each period in a fresh environment where `TIMEINTERVAL` holds the period. Bucket data
//! comes from a [`DataSource`] the server provides. [`query`] (or [`query_until`], with a
//! time budget) does both steps and is what the server calls.
//!
//! Design notes:
//! * event lists move through the built-in functions: a function consumes its argument
//!   lists, and reading a variable copies its value only when a later statement may still
//!   read it (see `liveness`); event data is reference-counted, so even a copy is cheap;
//! * events with identical data share one compact data object (see `event::intern_rows` and
//!   `data`), so per-object work (categorising, URL splitting, filtering, grouping) is done
//!   once per distinct object, not once per event;
//! * regular expressions are compiled once and kept across calls and queries (see
//!   `regex_cache`), and their results cached per distinct string; `merge_events_by_keys`
//!   is one hash lookup per event;
//! * freeing the millions of small allocations of a long query happens on a background
//!   thread (see `reaper`);
//! * every recursive walk is bounded by [`MAX_NESTING`] (syntax) and a value depth limit, and
//!   runs on a thread with [`EVAL_STACK`], so no input can overflow the stack; no input makes
//!   the interpreter panic;
//! * several periods, and long lists within a period, are worked on in parallel on the
//!   rayon pool the caller runs the query on (the server's CPU pool, `aw-server/src/cpu.rs`);
//!   called from any other thread, a query runs on that thread alone (see `parts::threads`).

mod bounded_table;
mod budget;
mod builtin;
mod cache;
mod cache_file;
mod data;
mod data_text;
mod datasource;
mod error;
mod event;
mod functions;
mod fxhash;
mod interpreter;
mod key;
mod lexer;
mod liveness;
mod memory;
mod parser;
mod parts;
mod program;
mod reaper;
mod recording;
mod regex_cache;
mod summed;
mod transforms;
mod value;

pub use cache::{CacheStats, RestoreTicket, ResultCache, DEFAULT_CACHE_BYTES};
pub use datasource::{DataSource, DataSourceError, MemoryDataSource, RowChunks, StorageTrouble};
pub use error::{BucketFailure, QueryError};
pub use memory::MAX_QUERY_MEMORY;
pub use parser::MAX_NESTING;
pub use summed::MergeKeys;
pub use value::MAX_VALUE_DEPTH;

/// The stack size of every thread that parses, evaluates, serialises or drops query values
/// (the server's CPU pool, the reaper, the parser's thread for deep input). The recursive walks are
/// bounded by [`MAX_NESTING`] and the value depth limit, which need a few MB at most in a
/// release build; debug builds use far larger frames, hence the margin. It is reserved
/// address space: only the pages a walk touches are ever committed.
pub const EVAL_STACK: usize = 256 << 20;
use program::Program;

use aw_models::TimeInterval;

/// Parses `code` once and evaluates it for every period, returning one JSON value per
/// period in order. An error in any period fails the whole call.
/// With no periods the result is empty and the program is not even parsed, as in the
/// reference (which parses per period).
pub fn query(
    code: &str,
    periods: &[TimeInterval],
    ds: &dyn DataSource,
) -> Result<Vec<serde_json::Value>, QueryError> {
    query_until(code, periods, ds, None)
}

/// [`query`] with a time budget: evaluation stops with [`QueryError::Timeout`] soon after
/// `deadline` (checked at every statement and call, and inside long transform loops; see
/// `budget.rs`).
pub fn query_until(
    code: &str,
    periods: &[TimeInterval],
    ds: &dyn DataSource,
    deadline: Option<std::time::Instant>,
) -> Result<Vec<serde_json::Value>, QueryError> {
    if periods.is_empty() {
        return Ok(Vec::new());
    }
    Program::parse(code)?.run_all_until(periods, ds, deadline)
}

/// Whether `code` parses: what a caller that keeps a program to evaluate later checks
/// first (the error names the fault, as an evaluation's would).
pub fn check(code: &str) -> Result<(), QueryError> {
    Program::parse(code).map(drop)
}

/// [`query_until`] answered as the response's JSON text (an array, one result per period),
/// with each period's result taken from `cache` when it holds it and stored there when it
/// is computed (see [`ResultCache`] for when an entry is valid). Only results of programs
/// that parsed and ran are stored: errors are evaluated again every time.
pub fn query_json(
    code: &str,
    periods: &[TimeInterval],
    ds: &dyn DataSource,
    deadline: Option<std::time::Instant>,
    cache: Option<&ResultCache>,
) -> Result<String, QueryError> {
    let parts: Vec<std::sync::Arc<str>> = match cache {
        _ if periods.is_empty() => Vec::new(),
        Some(cache) => Program::run_all_cached(code, periods, ds, deadline, cache)?,
        None => Program::parse(code)?
            .run_all_until(periods, ds, deadline)?
            .iter()
            .map(program::to_text)
            .collect::<Result<_, _>>()?,
    };
    let mut out = String::with_capacity(2 + parts.iter().map(|p| p.len() + 1).sum::<usize>());
    out.push('[');
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(part);
    }
    out.push(']');
    Ok(out)
}

/// The name of `code`'s summed results in the cache: the keys change what is kept of each
/// period, so they are part of it (after a NUL, which no program text holds at that place
/// with the same meaning).
fn sum_identity(code: &str, keys: Option<&MergeKeys>) -> String {
    match keys {
        Some(keys) => format!("{code}\u{0}sum by {keys:?}"),
        None => format!("{code}\u{0}sum"),
    }
}

impl ResultCache {
    /// The `periods` whose result of `code`, as [`query_sum`] with these `keys` uses it, the
    /// cache does not hold (not counted as hits or misses).
    pub fn sums_missing(
        &self,
        code: &str,
        keys: Option<&MergeKeys>,
        periods: &[TimeInterval],
    ) -> Vec<TimeInterval> {
        let identity: std::sync::Arc<str> = std::sync::Arc::from(sum_identity(code, keys));
        periods
            .iter()
            .filter(|p| !self.holds(&cache::Key::summed(&identity, *p.start(), *p.end())))
            .cloned()
            .collect()
    }
}

/// How [`query_sum`] adds the periods' results up, and what else it answers.
#[derive(Debug, Clone, Default)]
pub struct SumOptions {
    /// The keys the result's event lists are merged by (all of their data where it names
    /// none).
    pub keys: Option<MergeKeys>,
    /// Events kept in each list of the sum, longest first (all when `None`).
    pub limit: Option<usize>,
    /// Values answered for each period besides the sum, each named by its path in the
    /// result (`["window", "duration"]`); with any, the answer is `{"sum", "each"}`.
    pub each: Vec<Vec<String>>,
}

/// The results of `code` over every period added up into one (see `summed.rs` for how
/// values add up: numbers summed, event lists merged by data, or by the [`MergeKeys`]
/// named for them, and cut to the limit), as JSON text; with [`SumOptions::each`], the
/// sum and each period's values at those paths, `{"sum": …, "each": [{…}, …]}`. Each
/// period's result is taken from `cache` when it holds it, and stored there in the form it
/// is added up in, so asking for a year as its 365 days evaluates only the days a write
/// reached since. An error in any period fails the whole call; with no periods the sum is
/// `null`.
pub fn query_sum(
    code: &str,
    periods: &[TimeInterval],
    ds: &dyn DataSource,
    deadline: Option<std::time::Instant>,
    cache: Option<&ResultCache>,
    options: &SumOptions,
) -> Result<String, QueryError> {
    let parts = if periods.is_empty() {
        Vec::new()
    } else {
        let keys = options.keys.as_ref();
        let identity = sum_identity(code, keys);
        Program::run_all_summed(code, keys, &identity, periods, ds, deadline, cache)?
    };
    let refs: Vec<&summed::Summed> = parts.iter().map(|p| &**p).collect();
    let sum = summed::Summed::add_up(&refs, options.limit);
    let answer = if options.each.is_empty() {
        sum
    } else {
        let each: Vec<serde_json::Value> =
            refs.iter().map(|part| part.picked(&options.each)).collect();
        serde_json::json!({"sum": sum, "each": each})
    };
    crate::reaper::drop_later(parts);
    Ok(answer.to_string())
}
