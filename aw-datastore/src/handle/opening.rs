//! Opening a database and handing out its handle: [`Datastore::open`],
//! [`DatabaseFile::open`] and the [`Opening`] in between.

use std::path::Path;

use crate::error::{DatastoreError, Result};
use crate::file::{legacy_import, DatabaseFile, OpenOptions};
use crate::handle::Datastore;

impl Datastore {
    /// Opens (creating and migrating as needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Datastore> {
        Datastore::open_with(path, OpenOptions::default())
    }

    /// Opens the database at `path` with options: claims the file
    /// ([`DatabaseFile::claim`]: fails at once with [`DatastoreError::Locked`] when another
    /// server has it) and opens it ([`DatabaseFile::open`]).
    pub fn open_with(path: &Path, options: OpenOptions) -> Result<Datastore> {
        DatabaseFile::claim(path)?.open(options)
    }

    /// The one-time import of the Python server's database into a new file: read here, then
    /// an ordinary import request (the worker owns every transaction). A failure is logged
    /// and the server starts with what was imported; it is not tried again (the file is no
    /// longer new).
    fn import_legacy(&self, legacy: &Path) {
        log::info!(
            "Importing the aw-server (Python) database {}",
            legacy.display()
        );
        let result = legacy_import::read_each(legacy, |bucket, events| {
            self.import_rows(vec![(bucket, events)]).wait()
        });
        match result {
            Ok(events) => log::info!("Legacy import done: {events} events"),
            Err(e) => log::error!("Legacy import failed: {e}"),
        }
    }
}

impl DatabaseFile {
    /// Opens the database for serving: salvages it first when a damage marker asks for it
    /// or the open meets damage (with `salvage_on_damage`), applies the journal's held
    /// writes, and starts the worker, which owns the file (and its lock) from then on.
    pub fn open(self, options: OpenOptions) -> Result<Datastore> {
        self.open_in_background(options)?.wait()
    }

    /// [`DatabaseFile::open`] on the worker thread while the caller goes on: a server builds
    /// its routes meanwhile (the two took 2.3 and 0.5 ms one after the other on an empty
    /// database).
    pub fn open_in_background(self, options: OpenOptions) -> Result<Opening> {
        let started = crate::worker::start(self, options)?;
        Ok(Opening {
            datastore: Datastore::new(started.messages, started.shared),
            ready: started.ready,
        })
    }
}

/// A database its worker is opening ([`DatabaseFile::open_in_background`]).
pub struct Opening {
    datastore: Datastore,
    ready: crossbeam_channel::Receiver<Result<Option<std::path::PathBuf>>>,
}

impl Opening {
    /// A handle to the datastore being opened, to hand out before it is ready: requests sent
    /// on it are answered once the open is done, and fail with
    /// [`DatastoreError::WorkerGone`] if it fails.
    pub fn handle(&self) -> Datastore {
        self.datastore.clone()
    }

    /// Waits until the database is open (then starts the import of the Python server's
    /// database, when this file was just made and that one exists).
    pub fn wait(self) -> Result<Datastore> {
        let legacy = self
            .ready
            .recv()
            .unwrap_or(Err(DatastoreError::WorkerGone))?;
        if let Some(legacy) = legacy {
            self.datastore.import_legacy(&legacy);
        }
        Ok(self.datastore)
    }
}
