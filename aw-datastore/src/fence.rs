//! Which requests wait while a rewrite of stored history runs.
//!
//! A rewrite (`rewrite.rs`) runs in steps, and the worker answers other requests between
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

use crate::job::Job;
use crate::privacy::PRIVACY_FILTERS_KEY;
use crate::request::Request;
use crate::rewrite::Rewrite;
use crate::store::Store;

/// What a request reads or writes, as far as a rewrite is concerned.
enum Touches<'a> {
    /// No bucket (settings).
    Nothing,
    /// These buckets.
    Buckets(Vec<&'a str>),
    /// Every bucket, or the commit (an import, a privacy run, a forced commit).
    Everything,
}

impl Request {
    /// What the request reads or writes (see [`Touches`]).
    fn touches(&self) -> Touches<'_> {
        match self {
            Request::CreateBucket(bucket, ..) => Touches::Buckets(vec![bucket.id.as_str()]),
            Request::DeleteBucket(name, _)
            | Request::InsertEvents(name, ..)
            | Request::Heartbeat(name, ..)
            | Request::GetEvents { bucket: name, .. }
            | Request::GetEvent(name, ..)
            | Request::ReplaceEvent(name, ..)
            | Request::DeleteEvents(name, ..)
            | Request::CountEvents(name, ..) => Touches::Buckets(vec![name.as_str()]),
            Request::RenameBucket { bucket, name, .. } => Touches::Buckets(
                [Some(bucket), name.as_ref()]
                    .into_iter()
                    .flatten()
                    .map(String::as_str)
                    .collect(),
            ),
            Request::MergeBuckets { from, into, .. } => {
                Touches::Buckets(vec![from.as_str(), into.as_str()])
            }
            Request::DeleteRange { buckets, .. } => {
                Touches::Buckets(buckets.iter().map(String::as_str).collect())
            }
            Request::Import(..)
            | Request::ApplyPrivacy { .. }
            | Request::ForceCommit(..)
            | Request::Scrub(..) => Touches::Everything,
            Request::GetKeyValue(..)
            | Request::SetKeyValue(..)
            | Request::DeleteKeyValue(..)
            | Request::GetKeyValues(..)
            | Request::Close(..)
            | Request::Hold(..) => Touches::Nothing,
        }
    }

    /// Whether the request is a rewrite that runs in steps, all or nothing (see the
    /// module docs): it needs an open transaction to hold its rows.
    pub(crate) fn is_rewrite(&self) -> bool {
        matches!(
            self,
            Request::DeleteRange { .. }
                | Request::MergeBuckets { .. }
                | Request::ApplyPrivacy { .. }
        )
    }

    /// What the request holds back once it runs, if it is a rewrite: a deletion or a merge
    /// the buckets it touches. (Other requests are answered by [`Request::is_rewrite`]
    /// without working out what they touch: that is on every heartbeat's path.)
    fn scope(&self) -> Option<Scope<'_>> {
        if !self.is_rewrite() {
            return None;
        }
        match (self, self.touches()) {
            (Request::DeleteRange { .. } | Request::MergeBuckets { .. }, Touches::Buckets(b)) => {
                Some(Scope::Buckets(b))
            }
            (Request::ApplyPrivacy { .. }, _) => Some(Scope::History),
            _ => None,
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

impl Rewrite {
    /// What it holds back.
    fn scope(&self) -> Scope<'_> {
        match self.buckets() {
            Some(buckets) => {
                Scope::Buckets(buckets.iter().map(|(name, _)| name.as_str()).collect())
            }
            None => Scope::History,
        }
    }
}

impl Scope<'_> {
    /// Whether `request` waits for the rewrite.
    fn holds(&self, request: &Request) -> bool {
        match self {
            Scope::Buckets(names) => request.touches().meets(names.iter().copied()),
            Scope::History => match request {
                Request::Heartbeat(..)
                | Request::InsertEvents(..)
                | Request::ReplaceEvent(..)
                | Request::DeleteEvents(..)
                | Request::GetEvents { .. }
                | Request::GetEvent(..)
                | Request::CountEvents(..)
                | Request::GetKeyValue(..)
                | Request::GetKeyValues(..)
                | Request::Close(..)
                | Request::Hold(..) => false,
                Request::SetKeyValue(key, ..) | Request::DeleteKeyValue(key, _) => {
                    key == PRIVACY_FILTERS_KEY
                }
                Request::CreateBucket(..)
                | Request::Import(..)
                | Request::DeleteBucket(..)
                | Request::ApplyPrivacy { .. }
                | Request::Scrub(..)
                | Request::RenameBucket { .. }
                | Request::MergeBuckets { .. }
                | Request::DeleteRange { .. }
                | Request::ForceCommit(..) => true,
            },
        }
    }
}

impl Touches<'_> {
    /// Whether it reads or writes one of `buckets`.
    fn meets<'b>(&self, mut buckets: impl Iterator<Item = &'b str>) -> bool {
        match self {
            Touches::Nothing => false,
            Touches::Everything => true,
            Touches::Buckets(names) => buckets.any(|b| names.contains(&b)),
        }
    }
}

/// The requests held while a rewrite runs or waits to start.
#[derive(Default)]
pub(crate) struct Fence {
    /// Held, in arrival order.
    held: VecDeque<Request>,
    /// Held requests to look at again (a job ended), before any new one.
    again: VecDeque<Request>,
}

impl Fence {
    /// The next held request to look at again, if a job ended since it was held.
    pub(crate) fn next_again(&mut self) -> Option<Request> {
        self.again.pop_front()
    }

    /// Whether `request` must wait (see the module docs), given the jobs in progress.
    pub(crate) fn must_wait(&self, request: &Request, jobs: &VecDeque<Job>, store: &Store) -> bool {
        let running = rewriting(jobs);
        // The common case, on every request: no rewrite anywhere (nothing held, no scope
        // worked out).
        if !request.is_rewrite() && running.is_none() && self.held.is_empty() {
            return false;
        }
        let mut waiting = self.held.iter().filter_map(Request::scope);
        if running.is_some_and(|r| r.scope().holds(request)) || waiting.any(|s| s.holds(request)) {
            return true;
        }
        let Some(scope) = request.scope() else {
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
    pub(crate) fn hold(&mut self, request: Request) {
        self.held.push_back(request);
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
