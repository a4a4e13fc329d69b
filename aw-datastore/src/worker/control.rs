//! The messages about the worker itself (commit, scrub, hold, stop): carried out by its
//! loop (`run.rs`), never by the store.

use crate::error::DatastoreError;
use crate::worker::kind::{Kind, Touches};
use crate::worker::reply::send;
use crate::worker::reply::Reply;
use crate::worker::schedule::Commit;

/// An instruction to the worker itself, carried out by its loop (`run.rs`).
pub(crate) enum Control {
    /// Answered once everything before it is committed.
    ForceCommit(Reply<()>),
    /// A scrub's first half: commits, then has the checkpoint thread copy the WAL into the
    /// file while the worker goes on (answered by that thread once it did), so that the
    /// scrub's own checkpoint, in the worker's turn, copies only what came since.
    CopyWal(Reply<()>),
    /// Removes what a rewrite left readable beside the database: commits, checkpoints the
    /// WAL into the file and truncates it, and wipes the journal.
    Scrub(Reply<()>),
    /// Commit and stop; answered after the final commit.
    Close(Reply<()>),
    /// Holds the worker between two turns: answered at once, then nothing runs until the
    /// receiver's sender is dropped ([`crate::WorkerHold`]). The files are then as a kill
    /// at this instant would leave them.
    Hold(Reply<()>, crossbeam_channel::Receiver<()>),
    /// Answers the journal number of the last write (`None` without a journal): state
    /// derived from the data now has heard of every write up to it (`file/derived.rs`).
    MarkDerived(Reply<Option<u64>>),
}

impl Control {
    /// What it is (see [`Kind`]): a commit or a scrub waits for any rewrite in progress,
    /// so a rewrite's rows are never committed half done; a stop or a hold waits for
    /// nothing (a stop undoes a rewrite in progress).
    pub(crate) fn kind(&self) -> Kind<'static> {
        let (touches, waits_for_privacy_run) = match self {
            Control::ForceCommit(_) | Control::CopyWal(_) | Control::Scrub(_) => {
                (Touches::Everything, true)
            }
            Control::Close(_) | Control::Hold(..) | Control::MarkDerived(_) => {
                (Touches::Nothing, false)
            }
        };
        Kind {
            quick: false,
            writes: false,
            commit: Commit::Later,
            touches,
            waits_for_privacy_run,
            rewrite: None,
        }
    }

    /// Answers it with `error` without carrying it out.
    pub(crate) fn refuse(self, error: DatastoreError) {
        match self {
            Control::ForceCommit(r)
            | Control::CopyWal(r)
            | Control::Scrub(r)
            | Control::Close(r)
            | Control::Hold(r, _) => send(r, error),
            Control::MarkDerived(r) => send(r, error),
        }
    }
}
