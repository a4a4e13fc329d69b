//! A parsed program and its evaluation over one or many time periods.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

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

    /// Evaluates the program for every period (in parallel when there are several) and
    /// returns the results in period order. The first failing period (in period order) fails
    /// the whole call; later periods are then not started. Fails with
    /// [`QueryError::Timeout`] once `deadline` passes.
    pub fn run_all_until(
        &self,
        periods: &[TimeInterval],
        ds: &dyn DataSource,
        deadline: Option<Instant>,
    ) -> QueryResult<Vec<Value>> {
        let n = periods.len();
        // One memory budget for every period of the request (`memory.rs`).
        let budget = MemoryBudget::new();
        let threads = thread::available_parallelism()
            .map(|p| p.get())
            .unwrap_or(1)
            .min(n);
        if threads <= 1 {
            return periods
                .iter()
                .map(|p| self.run_until(p, ds, deadline, &budget))
                .collect();
        }

        let next = AtomicUsize::new(0);
        let first_error = AtomicUsize::new(usize::MAX);
        let worker = || {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n || i > first_error.load(Ordering::Relaxed) {
                    break;
                }
                let Some(period) = periods.get(i) else {
                    break;
                };
                let r = self.run_until(period, ds, deadline, &budget);
                if r.is_err() {
                    first_error.fetch_min(i, Ordering::Relaxed);
                }
                done.push((i, r));
            }
            done
        };

        let mut slots: Vec<Option<QueryResult<Value>>> = (0..n).map(|_| None).collect();
        thread::scope(|s| {
            let handles: Vec<_> = (1..threads)
                .filter_map(|_| {
                    thread::Builder::new()
                        .name("aw-query".to_string())
                        .stack_size(crate::EVAL_STACK)
                        .spawn_scoped(s, worker)
                        .ok()
                })
                .collect();
            // The calling thread works too, so progress is made even if no thread could be
            // spawned.
            let mut all = worker();
            for h in handles {
                // A panicking worker loses its results; reported below as missing periods.
                if let Ok(done) = h.join() {
                    all.extend(done);
                }
            }
            for (i, r) in all {
                if let Some(slot) = slots.get_mut(i) {
                    *slot = Some(r);
                }
            }
        });

        let mut out = Vec::with_capacity(n);
        for slot in slots {
            match slot {
                Some(Ok(v)) => out.push(v),
                Some(Err(e)) => return Err(e),
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
