//! Where the worker's answers go: a reply channel per request, or, for an event read, the
//! channel its rows go down as they are read.

use aw_models::raw_event::{EventRows, TextRows};
use tokio::sync::oneshot;

use crate::error::{DatastoreError, Result};
use crate::store::change::Changes;
use crate::store::Store;
use crate::worker::batch::Batch;

/// Where the worker sends a reply; the caller awaits or blocks on the other end.
pub(crate) type Reply<T> = oneshot::Sender<Result<T>>;

/// Where the rows of an event read go.
pub(crate) enum RowSink {
    /// All of them in one answer.
    Whole(Reply<EventRows>),
    /// Each step's rows as soon as they are read, with their data texts as stored, so the
    /// caller works on them while the rest are read; the channel closes after the last (an
    /// error ends it).
    Texts(crossbeam_channel::Sender<Result<TextRows>>),
}

impl RowSink {
    /// Ends the read with `error` (a caller that went away is no error).
    pub(crate) fn fail(self, error: DatastoreError) {
        match self {
            RowSink::Whole(reply) => {
                let _ = reply.send(Err(error));
            }
            RowSink::Texts(parts) => {
                let _ = parts.send(Err(error));
            }
        }
    }
}

/// Sends a request's answer (a caller that went away is no error), noting first whether it
/// met a damaged file: the worker salvages after the turn (`worker/live_salvage.rs`).
pub(crate) fn answer<T>(store: &mut Store, reply: Reply<T>, result: Result<T>) {
    store.note(&result);
    let _ = reply.send(result);
}

/// Runs a write and answers it once its changes are sealed in the journal (its error
/// otherwise: the worker then undoes them).
pub(crate) fn write<T>(
    store: &mut Store,
    batch: &mut Batch,
    reply: Reply<T>,
    op: impl FnOnce(&mut Store, &mut Changes) -> crate::error::Result<T>,
) {
    let result = op(store, batch.changes());
    answer(store, reply, batch.sealed_result(result));
}

/// Runs a read and answers it.
pub(crate) fn read<T>(
    store: &mut Store,
    reply: Reply<T>,
    op: impl FnOnce(&mut Store) -> crate::error::Result<T>,
) {
    let result = op(store);
    answer(store, reply, result);
}

/// Sends `error` as the answer (a caller that went away is no error).
pub(crate) fn send<T>(reply: Reply<T>, error: DatastoreError) {
    let _ = reply.send(Err(error));
}
