//! Syncing ActivityWatch data between devices through a shared folder.
//!
//! There is no networking here: each device writes its own buckets into a SQLite file in
//! a folder that a folder-sync engine (Syncthing, Dropbox, Nextcloud, rsync…) copies
//! between devices, and imports the other devices' files into its server as
//! `<bucket>-synced-from-<host>` buckets, which the web UI shows under the other host.
//! The folder layout and file format are the reference aw-sync's (`../shared/spec/SYNC.md`
//! §2–§3), so devices running either tool share one folder.
//!
//! Where this differs from the reference, on purpose (SYNC.md §6):
//! - one layout is written (`<root>/<device_id>/test.db`), both are read;
//! - only a device's first-hand buckets are pushed, and pulled buckets are never pulled
//!   again, so no device re-imports its own data;
//! - nothing is written in another device's folder; peer files are opened read-only;
//! - this device's file is published by rename, complete and closed ([`outbox`]);
//! - reads are exact (no event cut at a page boundary) and writes idempotent
//!   ([`transfer`]), so an interrupted pass loses and doubles nothing;
//! - pulled buckets are keyed on the origin's device id and source bucket id;
//! - a failing peer or bucket is logged and skipped, and the daemon goes on.
//!
//! The same [`Syncer`] runs in the `aw-sync` binary (against a server over HTTP) and inside
//! `aw-server` (against its datastore, no HTTP hop), through the [`Server`] trait.

pub mod cursors;
pub mod error;
pub mod folder;
pub mod outbox;
pub mod pass;
pub mod peer;
pub mod server;
pub mod transfer;

pub use error::{Result, SyncError};
pub use folder::SyncFolder;
pub use pass::{parse_list, Device, Mode, PassReport, PeerReport, SyncOptions, Syncer};
pub use server::Server;
