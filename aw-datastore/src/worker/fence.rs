//! Which requests wait while a rewrite of stored history runs.
//!
//! A rewrite (`worker/rewrite.rs`) runs in steps, and the worker answers other requests between
//! them. So that no request sees it half done where that matters, and every write is
//! ordered wholly before or after it, the requests in its [`Scope`] are held, unanswered,
//! until it is done:
//!
//! * a range deletion or a merge holds every request that reads or writes one of its
//!   buckets, and anything that spans every bucket or commits (`ForceCommit`, `Scrub`, an
//!   import, another rewrite);
//! * the privacy rules applied to the past hold a change of the rules, bucket changes,
//!   imports, commits and other rewrites; heartbeats, inserts, edits, deletions by id and
//!   reads go on, because what they write passes the same rules on its way in
//!   (`store/privacy_past.rs`).
//!
//! A rewrite starts only when no job conflicts with it (a long read of one of its
//! buckets, an import). From its arrival, requests in its scope wait behind it, so a
//! stream of reads cannot hold it off; held requests are looked at again, in their order,
//! whenever a job ends.

use std::collections::VecDeque;

use crate::store::Store;
use crate::worker::job::Job;
use crate::worker::kind::{Holds, Kind, Touches};
use crate::worker::request::Message;
use crate::worker::rewrite::Rewrite;

impl<'a> Touches<'a> {
    /// Whether it reads or writes one of `names`.
    fn meets(&self, names: &[&str]) -> bool {
        match *self {
            Touches::Nothing => false,
            Touches::Everything => true,
            Touches::Buckets(one, other) => names.iter().any(|&n| n == one || Some(n) == other),
            Touches::List(list) => names.iter().any(|&n| list.iter().any(|b| b == n)),
        }
    }

    /// The buckets it names.
    fn names(&self) -> Vec<&'a str> {
        match *self {
            Touches::Nothing | Touches::Everything => Vec::new(),
            Touches::Buckets(one, other) => std::iter::once(one).chain(other).collect(),
            Touches::List(list) => list.iter().map(String::as_str).collect(),
        }
    }
}

/// What a rewrite holds back (see the module docs).
enum Scope<'a> {
    /// A range deletion's or a merge's buckets.
    Buckets(Vec<&'a str>),
    /// Every event, judged by the privacy rules.
    History,
}

impl<'a> Scope<'a> {
    /// What `kind` holds back once it runs, if it is a rewrite (from the request table).
    fn of(kind: &Kind<'a>) -> Option<Scope<'a>> {
        match kind.rewrite? {
            Holds::ItsBuckets => Some(Scope::Buckets(kind.touches.names())),
            Holds::History => Some(Scope::History),
        }
    }

    /// What the rewrite in progress holds back.
    fn running(rewrite: &'a Rewrite) -> Scope<'a> {
        match rewrite.buckets() {
            Some(buckets) => {
                Scope::Buckets(buckets.iter().map(|(name, _)| name.as_str()).collect())
            }
            None => Scope::History,
        }
    }

    /// Whether a message of `kind` waits for the rewrite.
    fn holds(&self, kind: &Kind<'_>) -> bool {
        match self {
            Scope::Buckets(names) => kind.touches.meets(names),
            Scope::History => kind.waits_for_privacy_run,
        }
    }
}

/// The requests held while a rewrite runs or waits to start.
#[derive(Default)]
pub(crate) struct Fence {
    /// Held, in arrival order.
    held: VecDeque<Message>,
    /// Held requests to look at again (a job ended), before any new one.
    again: VecDeque<Message>,
}

impl Fence {
    /// The next held request to look at again, if a job ended since it was held.
    pub(crate) fn next_again(&mut self) -> Option<Message> {
        self.again.pop_front()
    }

    /// Whether `message` must wait (see the module docs), given the jobs in progress.
    pub(crate) fn must_wait(&self, message: &Message, jobs: &VecDeque<Job>, store: &Store) -> bool {
        let kind = message.kind();
        let running = rewriting(jobs);
        // The common case, on every request: no rewrite anywhere (nothing held, no scope
        // worked out).
        if kind.rewrite.is_none() && running.is_none() && self.held.is_empty() {
            return false;
        }
        let held: Vec<Kind<'_>> = self.held.iter().map(Message::kind).collect();
        let mut waiting = held.iter().filter_map(Scope::of);
        if running.is_some_and(|r| Scope::running(r).holds(&kind))
            || waiting.any(|s| s.holds(&kind))
        {
            return true;
        }
        let Some(scope) = Scope::of(&kind) else {
            return false;
        };
        // One rewrite runs at a time, each after the jobs it would meet: a deletion or a
        // merge after the reads of its buckets and imports, a privacy run after imports.
        if running.is_some() {
            return true;
        }
        match scope {
            Scope::Buckets(names) => {
                let rows: Vec<i64> = names
                    .iter()
                    .filter_map(|n| store.bucketrow(n).ok())
                    .collect();
                jobs.iter().any(|job| match job.bucket_rows() {
                    None => true,
                    Some(theirs) => theirs.iter().any(|row| rows.contains(row)),
                })
            }
            Scope::History => jobs.iter().any(|job| job.bucket_rows().is_none()),
        }
    }

    /// Holds `request` until a job ends.
    pub(crate) fn hold(&mut self, message: Message) {
        self.held.push_back(message);
    }

    /// A job ended: every held request is looked at again, in order, before new ones.
    pub(crate) fn job_ended(&mut self) {
        while let Some(request) = self.held.pop_back() {
            self.again.push_front(request);
        }
    }

    /// Drops every held request at a stop (their callers see the worker gone).
    pub(crate) fn clear(&mut self) {
        self.again.clear();
        self.held.clear();
    }
}

/// The rewrite in progress among `jobs`, if any (one runs at a time).
pub(crate) fn rewriting(jobs: &VecDeque<Job>) -> Option<&Rewrite> {
    jobs.iter().find_map(Job::as_rewrite)
}
