//! A parsed program and its evaluation over one or many time periods.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use aw_models::TimeInterval;
use serde_json::Value;

use crate::datasource::DataSource;
use crate::error::{QueryError, QueryResult};
use crate::interpreter::Interpreter;
use crate::liveness::mark_last_uses;
use crate::memory::MemoryBudget;
use crate::parser::{parse, Stmt};

/// A parsed, analysed query program, so that it can be parsed once and run for many periods.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    stmts: Vec<Stmt>,
}

impl Program {
    /// Parses `code` (the request's lines joined with `"\n"`).
    pub fn parse(code: &str) -> QueryResult<Program> {
        let mut stmts = parse(code)?;
        mark_last_uses(&mut stmts);
        Ok(Program { stmts })
    }

    /// Evaluates the program for one period in a fresh environment and serialises `RETURN`;
    /// fails with [`QueryError::Timeout`] once `deadline` passes, and with
    /// [`QueryError::MemoryLimit`] when the request would pass its memory `budget`.
    pub fn run_until(
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
    pub fn run_all_until(
        &self,
        periods: &[TimeInterval],
        ds: &dyn DataSource,
        deadline: Option<Instant>,
    ) -> QueryResult<Vec<Value>> {
        // One memory budget for every period of the request (`memory.rs`).
        let budget = MemoryBudget::new();
        if periods.len() <= 1 || crate::cpu_pool::threads() <= 1 {
            return periods
                .iter()
                .map(|p| self.run_until(p, ds, deadline, &budget))
                .collect();
        }
        let first_error = AtomicUsize::new(usize::MAX);
        let results: Vec<Option<QueryResult<Value>>> = crate::cpu_pool::install(|| {
            periods
                .par_iter()
                .enumerate()
                .map(|(i, period)| {
                    if i > first_error.load(Ordering::Relaxed) {
                        return None;
                    }
                    let r = self.run_until(period, ds, deadline, &budget);
                    if r.is_err() {
                        first_error.fetch_min(i, Ordering::Relaxed);
                    }
                    Some(r)
                })
                .collect()
        });
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
}
