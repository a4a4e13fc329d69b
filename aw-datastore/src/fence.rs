//! Which requests wait while a rewrite of stored history runs.
//!
//! A range deletion over all history runs in steps (`job.rs`), and the worker answers other
//! requests between them. So that no request sees it half done, and every write is ordered
//! wholly before or after it, a request that reads or writes one of its buckets is held,
//! unanswered, until it is done; so is anything that commits or spans every bucket
//! (`ForceCommit`, `Scrub`, an import, a privacy run) and another rewrite. Requests for
//! other buckets and for settings go on between its steps.
//!
//! A rewrite starts only when no job reads or writes its buckets (a long read of one, an
//! import). From its arrival, requests for its buckets wait behind it, so a stream of reads
//! cannot hold it off; held requests are looked at again, in their order, whenever a job
//! ends.

use std::collections::VecDeque;

use crate::job::Job;
use crate::request::Request;
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
            | Request::Close(..) => Touches::Nothing,
        }
    }

    /// Whether the request is a rewrite that runs in steps, all or nothing (see the
    /// module docs): it needs an open transaction to hold its rows.
    pub(crate) fn is_rewrite(&self) -> bool {
        matches!(self, Request::DeleteRange { .. })
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
        // The common case, on every request: no rewrite anywhere.
        if !request.is_rewrite()
            && !jobs.iter().any(Job::is_rewrite)
            && !self.held.iter().any(Request::is_rewrite)
        {
            return false;
        }
        let touches = request.touches();
        let rewrites = jobs.iter().filter(|j| j.is_rewrite());
        let waiting = self.held.iter().filter(|r| r.is_rewrite());
        if rewrites
            .clone()
            .any(|job| touches.meets(job.fenced_buckets()))
            || waiting.clone().any(|r| match r.touches() {
                Touches::Buckets(names) => touches.meets(names.into_iter()),
                Touches::Nothing | Touches::Everything => false,
            })
        {
            return true;
        }
        if !request.is_rewrite() {
            return false;
        }
        // One rewrite at a time, each after the jobs on its buckets.
        if rewrites.count() > 0 || waiting.count() > 0 {
            return true;
        }
        let Touches::Buckets(names) = touches else {
            return false;
        };
        let rows: Vec<i64> = names
            .iter()
            .filter_map(|n| store.bucketrow(n).ok())
            .collect();
        jobs.iter().any(|job| match job.bucket_rows() {
            None => true,
            Some(theirs) => theirs.iter().any(|row| rows.contains(row)),
        })
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

    /// Every held request, to answer at a stop or drop.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Request> + '_ {
        self.again.drain(..).chain(self.held.drain(..))
    }
}
