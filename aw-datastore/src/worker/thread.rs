//! The worker thread's life: its start (the open, with the salvage it may need), its loop
//! (`run.rs`), and its end (the connection closed, then the derived state saved and the
//! file's lock released, then the caller of `close` answered).

use crossbeam_channel::{Receiver, Sender};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use crate::error::{DatastoreError, Failure, Result};
use crate::file::open::{open_store, Opened};
use crate::file::{derived, DatabaseFile, OpenOptions};
use crate::worker::batch::Batch;
use crate::worker::live_salvage::Salvager;
use crate::worker::request::Message;
use crate::worker::run::{run, Closed};
use crate::worker::shared::Shared;

/// A worker thread that is opening its file.
pub(crate) struct Started {
    /// Where messages to the worker go.
    pub messages: Sender<Message>,
    /// What the worker shares with the handles.
    pub shared: Arc<Shared>,
    /// Says when the open is done: the Python server's database to import, if this file
    /// was just made and that one exists; or why the open failed.
    pub ready: Receiver<Result<Option<PathBuf>>>,
}

/// Starts the worker on `file`; [`Started::ready`] says when it is ready (and reports every
/// failure to open: read-only, newer schema, damage that could not be salvaged).
pub(crate) fn start(file: DatabaseFile, options: OpenOptions) -> Result<Started> {
    let (messages, receiver) = crossbeam_channel::unbounded();
    let (ready_tx, ready) = crossbeam_channel::bounded(1);
    let shared = Arc::new(Shared::default());
    let theirs = shared.clone();
    let thread = std::thread::Builder::new()
        .name("aw-datastore".into())
        .spawn(move || {
            // Requests wait on this thread: it takes the CPU back at once when it wakes.
            aw_platform::sched::short_slices();
            let opened = open_or_salvage(&file, &options, &theirs);
            // The password (if any) is no longer needed once the file is open: wiped now,
            // not when the worker ends; unless a salvage while serving may reopen it.
            let salvager = options.salvage_on_damage.then(|| Salvager {
                options: options.clone(),
                failed_at: std::cell::Cell::new(None),
            });
            drop(options);
            match opened {
                Ok(opened) => serve(
                    opened,
                    file,
                    receiver,
                    &theirs,
                    &ready_tx,
                    salvager.as_ref(),
                ),
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            }
        })
        .map_err(|e| {
            let mut failure = Failure::from(&e);
            failure.message = format!("cannot start the worker thread: {e}");
            DatastoreError::Io(failure)
        })?;
    *shared.thread.lock().unwrap_or_else(PoisonError::into_inner) = Some(thread);
    Ok(Started {
        messages,
        shared,
        ready,
    })
}

/// Publishes what the open found, says the worker is ready, runs the loop, and finishes a
/// `close`: the lock is released only after the connection is closed (`run` has dropped
/// the store), and `close` is answered only after both.
fn serve(
    opened: Opened,
    file: DatabaseFile,
    receiver: Receiver<Message>,
    shared: &Arc<Shared>,
    ready: &Sender<Result<Option<PathBuf>>>,
    salvager: Option<&Salvager>,
) {
    let Opened {
        store,
        journal,
        held,
        legacy,
        backup_source,
        derived,
    } = opened;
    let left = &shared.left;
    left.derived
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .opened(file.path(), derived);
    *left
        .backup_source
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = backup_source;
    shared.turns.alive.store(true, Ordering::Release);
    let _ = ready.send(Ok(legacy));
    let batch = match journal {
        Some(journal) => Batch::with_journal(journal, held),
        None => Batch::default(),
    };
    let closing = run(store, receiver, shared, &file, batch, salvager);
    shared.turns.alive.store(false, Ordering::Release);
    if let Some(Closed {
        reply,
        result,
        data_version,
        journal_last,
    }) = closing
    {
        // With the connection closed and the lock still held: the state is saved for the
        // file exactly as this stop leaves it.
        let mut kept = left.derived.lock().unwrap_or_else(PoisonError::into_inner);
        if result.is_ok() {
            kept.save_at_stop(data_version, journal_last);
        } else {
            derived::discard(file.path());
        }
        drop(kept);
        drop(file);
        let _ = reply.send(result);
    }
}

/// [`open_store`], with the salvage `options.salvage_on_damage` asks for: when the marker
/// of a damage met while serving is there, and when the open itself meets damage.
fn open_or_salvage(file: &DatabaseFile, options: &OpenOptions, shared: &Shared) -> Result<Opened> {
    let path = file.path();
    if options.salvage_on_damage {
        file.salvage_if_marked(options.password.as_ref())?;
    }
    let published = &shared.published;
    match open_store(path, options, published.clone(), true) {
        Err(DatastoreError::Damaged(e)) if options.salvage_on_damage && file.is_locked() => {
            log::error!(
                "The database {} is damaged ({e}); salvaging what can be read",
                path.display()
            );
            file.salvage(options.password.as_ref())?;
            open_store(path, options, published.clone(), true)
        }
        other => other,
    }
}
