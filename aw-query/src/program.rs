//! A parsed program and its evaluation over one or many time periods.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use aw_models::TimeInterval;
use serde_json::Value;

use crate::cache::{Key, ResultCache, Stored, Ticket};
use crate::datasource::DataSource;
use crate::error::{QueryError, QueryResult};
use crate::interpreter::Interpreter;
use crate::liveness::mark_last_uses;
use crate::memory::MemoryBudget;
use crate::parser::{parse, Stmt};
use crate::recording::Recording;
use crate::summed::{MergeKeys, Summed};

/// The longest a look waits for the results the last run kept to be read back
/// ([`ResultCache::wait_restored`]).
const RESTORE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// A parsed, analysed query program, so that it can be parsed once and run for many periods.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    stmts: Vec<Stmt>,
}

impl Program {
    /// Parses `code` (the request's lines joined with `"\n"`).
    pub(crate) fn parse(code: &str) -> QueryResult<Program> {
        let mut stmts = parse(code)?;
        mark_last_uses(&mut stmts);
        Ok(Program { stmts })
    }

    /// Evaluates the program for one period in a fresh environment and serialises `RETURN`;
    /// fails with [`QueryError::Timeout`] once `deadline` passes, and with
    /// [`QueryError::MemoryLimit`] when the request would pass its memory `budget`.
    pub(crate) fn run_until(
        &self,
        period: &TimeInterval,
        ds: &dyn DataSource,
        deadline: Option<Instant>,
        budget: &Arc<MemoryBudget>,
    ) -> QueryResult<Value> {
        let (result, charge) = Interpreter::new(ds, period, budget.clone())
            .with_deadline(deadline)
            .run(&self.stmts)?;
        let json = result.to_json();
        crate::reaper::drop_later(result);
        drop(charge);
        json
    }

    /// Evaluates the program for every period (in parallel on the CPU pool when there are
    /// several) and returns the results in period order. The first failing period (in
    /// period order) fails the whole call; later periods are then not started. Fails with
    /// [`QueryError::Timeout`] once `deadline` passes.
    pub(crate) fn run_all_until(
        &self,
        periods: &[TimeInterval],
        ds: &dyn DataSource,
        deadline: Option<Instant>,
    ) -> QueryResult<Vec<Value>> {
        // One memory budget for every period of the request (`memory.rs`).
        let budget = MemoryBudget::new();
        each_period(periods, |p| self.run_until(p, ds, deadline, &budget))
    }

    /// Each period's result as JSON text, taken from `cache` when it holds it and otherwise
    /// evaluated (in parallel, like [`Program::run_all_until`]) and stored there
    /// (`cache/`). Every period is looked up first, and `code` is parsed only if one is
    /// missing: a dashboard reload whose periods are all cached parses nothing. (Only
    /// programs that parsed are ever stored, so a cached program is a valid one.)
    pub(crate) fn run_all_cached(
        code: &str,
        periods: &[TimeInterval],
        ds: &dyn DataSource,
        deadline: Option<Instant>,
        cache: &ResultCache,
    ) -> QueryResult<Vec<Arc<str>>> {
        let code: Arc<str> = Arc::from(code);
        Program::run_all_kept(
            &code,
            periods,
            ds,
            deadline,
            Some(cache),
            Kept {
                key: |p: &TimeInterval| Key::new(&code, *p.start(), *p.end()),
                hit: Stored::into_text,
                made: |value| to_text(&value),
                keep: keep_text,
            },
        )
    }

    /// Each period's result in the summed form (`summed.rs`, its lists merged by `keys`),
    /// taken from `cache` when it holds it and otherwise evaluated and stored there, as
    /// [`Program::run_all_cached`] does for texts; without a cache, evaluated. `identity`
    /// names the program and its keys in the cache.
    pub(crate) fn run_all_summed(
        code: &str,
        keys: Option<&MergeKeys>,
        identity: &str,
        periods: &[TimeInterval],
        ds: &dyn DataSource,
        deadline: Option<Instant>,
        cache: Option<&ResultCache>,
    ) -> QueryResult<Vec<Arc<Summed>>> {
        let identity: Arc<str> = Arc::from(identity);
        Program::run_all_kept(
            code,
            periods,
            ds,
            deadline,
            cache,
            Kept {
                key: |p: &TimeInterval| Key::summed(&identity, *p.start(), *p.end()),
                hit: Stored::into_summed,
                made: |value| Ok(Arc::new(Summed::from_json(value, keys))),
                keep: ResultCache::insert_summed,
            },
        )
    }

    /// What [`Program::run_all_cached`] and [`Program::run_all_summed`] share: every period
    /// looked up in `cache` first (`code` is parsed only if one is missing), the others
    /// evaluated in parallel, each with a ticket taken before its first read, and kept.
    fn run_all_kept<T: Clone + Send + Sync>(
        code: &str,
        periods: &[TimeInterval],
        ds: &dyn DataSource,
        deadline: Option<Instant>,
        cache: Option<&ResultCache>,
        kept: Kept<
            impl Fn(&TimeInterval) -> Key,
            impl Fn(Stored) -> Option<T>,
            impl Fn(Value) -> QueryResult<T> + Sync,
            impl Fn(&ResultCache, &Ticket<'_>, Key, Vec<crate::recording::Read>, T) -> T + Sync,
        >,
    ) -> QueryResult<Vec<T>> {
        // The results the last run kept are still being read back (a look right after a
        // start): they come sooner than evaluating the periods again, on the same cores.
        if let Some(cache) = cache {
            cache.wait_restored(RESTORE_WAIT);
        }
        let lookups: Vec<(Key, Option<T>, &TimeInterval)> = periods
            .iter()
            .map(|p| {
                let key = (kept.key)(p);
                let hit = cache.and_then(|c| c.get(&key)).and_then(&kept.hit);
                (key, hit, p)
            })
            .collect();
        if lookups.iter().all(|(_, hit, _)| hit.is_some()) {
            return Ok(lookups.into_iter().filter_map(|(_, hit, _)| hit).collect());
        }
        let program = Program::parse(code)?;
        let budget = MemoryBudget::new();
        each_period(&lookups, |(key, hit, p)| {
            if let Some(hit) = hit {
                return Ok(hit.clone());
            }
            let Some(cache) = cache else {
                return (kept.made)(program.run_until(p, ds, deadline, &budget)?);
            };
            // Taken before the first read: writes from here on are checked at insert.
            let ticket = cache.ticket();
            let recording = Recording::new(ds);
            let value = (kept.made)(program.run_until(p, &recording, deadline, &budget)?)?;
            Ok((kept.keep)(
                cache,
                &ticket,
                key.clone(),
                recording.into_reads(),
                value,
            ))
        })
    }
}

/// How [`Program::run_all_kept`] keeps one form of result: its key in the cache, the form
/// of a cached result, the form made from an evaluation, and how it is stored (returning
/// the value as stored).
struct Kept<K, H, M, S> {
    key: K,
    hit: H,
    made: M,
    keep: S,
}

/// Stores a result's text (`Kept::keep` of texts) and hands it on.
fn keep_text(
    cache: &ResultCache,
    ticket: &Ticket<'_>,
    key: Key,
    reads: Vec<crate::recording::Read>,
    text: Arc<str>,
) -> Arc<str> {
    cache.insert(ticket, key, reads, text.clone());
    text
}

/// One result's JSON text.
pub(crate) fn to_text(value: &Value) -> QueryResult<Arc<str>> {
    serde_json::to_string(value)
        .map(Arc::from)
        .map_err(|e| QueryError::InvalidType(format!("result is not serialisable: {e}")))
}

/// Runs `run` for every period (in parallel on the caller's rayon pool when there are several) and
/// returns the results in period order. The first failing period (in period order) fails
/// the whole call; later periods are then not started.
fn each_period<P: Sync, T: Send>(
    periods: &[P],
    run: impl Fn(&P) -> QueryResult<T> + Sync,
) -> QueryResult<Vec<T>> {
    if periods.len() <= 1 || crate::parts::threads() <= 1 {
        return periods.iter().map(run).collect();
    }
    let first_error = AtomicUsize::new(usize::MAX);
    let results: Vec<Option<QueryResult<T>>> = periods
        .par_iter()
        .enumerate()
        .map(|(i, period)| {
            if i > first_error.load(Ordering::Relaxed) {
                return None;
            }
            let r = run(period);
            if r.is_err() {
                first_error.fetch_min(i, Ordering::Relaxed);
            }
            Some(r)
        })
        .collect();
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            // Skipped only after an earlier period failed, whose error returned above.
            None => {
                return Err(QueryError::InvalidType(
                    "internal error: a time period could not be evaluated".to_string(),
                ))
            }
        }
    }
    Ok(out)
}
