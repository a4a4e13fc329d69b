//! The memory budget of one query request, shared by all its periods.
//!
//! The language has no loops, but a value can still grow exponentially by being copied
//! (`a = a + a;` repeated), a statement can hold many bucket reads at once
//! (`concat(query_bucket(b), query_bucket(b), …)`), and the JSON answer copies each event's
//! data once per occurrence (`[a, a, a, …]` of a large bucket). So every evaluation charges
//! what it holds against one budget per request ([`MAX_QUERY_MEMORY`]), shared by the periods
//! that run in parallel, and stops with [`QueryError::MemoryLimit`]:
//! * variables by their estimated size ([`DataType::weight`](crate::value::DataType::weight));
//! * copies made during a statement, before they are made;
//! * results of function calls while the statement runs;
//! * the data text read from the buckets, for the whole period;
//! * the JSON answer, estimated before it is built.
//!
//! The estimates are rough (and rather high); they are there to stop a program that would
//! take the machine's memory, not to measure a normal one, which stays far below.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::{QueryError, QueryResult};

/// The most memory (by the estimates above) one query request may hold. A year of events
/// weighs about 35 MB as a list, plus its data text.
pub const MAX_QUERY_MEMORY: usize = 1 << 30;

/// What the evaluations of one request hold, together.
#[derive(Debug, Default)]
pub(crate) struct MemoryBudget {
    used: AtomicUsize,
}

impl MemoryBudget {
    /// A budget for one request.
    pub(crate) fn new() -> Arc<MemoryBudget> {
        Arc::default()
    }

    /// The bytes charged now (for tests and logs).
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// Whether `more` bytes would fit beside what is charged now.
    pub(crate) fn check(&self, more: usize) -> QueryResult<()> {
        let total = self.used().saturating_add(more);
        if total > MAX_QUERY_MEMORY {
            return Err(QueryError::MemoryLimit(format!(
                "The query would hold about {} MB, more than the {} MB a query may use",
                total >> 20,
                MAX_QUERY_MEMORY >> 20
            )));
        }
        Ok(())
    }
}

/// One evaluation's share of a [`MemoryBudget`]: set to what the evaluation holds now, and
/// given back when it ends (dropped).
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<MemoryBudget>,
    bytes: usize,
}

impl Charge {
    /// A share of `budget`, holding nothing yet.
    pub(crate) fn new(budget: Arc<MemoryBudget>) -> Charge {
        Charge { budget, bytes: 0 }
    }

    /// Sets the share to `bytes` and checks that `more` bytes would still fit.
    pub(crate) fn set(&mut self, bytes: usize, more: usize) -> QueryResult<()> {
        if bytes >= self.bytes {
            self.budget
                .used
                .fetch_add(bytes - self.bytes, Ordering::AcqRel);
        } else {
            self.budget
                .used
                .fetch_sub(self.bytes - bytes, Ordering::AcqRel);
        }
        self.bytes = bytes;
        self.budget.check(more)
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_are_given_back() {
        let budget = MemoryBudget::new();
        let mut a = Charge::new(budget.clone());
        let mut b = Charge::new(budget.clone());
        a.set(MAX_QUERY_MEMORY / 2, 0).unwrap();
        b.set(MAX_QUERY_MEMORY / 4, 0).unwrap();
        assert!(b.set(MAX_QUERY_MEMORY / 2 + 1, 0).is_err());
        b.set(10, 0).unwrap();
        assert_eq!(budget.used(), MAX_QUERY_MEMORY / 2 + 10);
        assert!(a.set(MAX_QUERY_MEMORY / 2, MAX_QUERY_MEMORY).is_err());
        drop(a);
        drop(b);
        assert_eq!(budget.used(), 0);
    }
}
