//! Syncing ActivityWatch data between devices through a shared folder.
//!
//! There is no networking here: each device writes its own buckets into a SQLite file in
//! a folder that a folder-sync engine (Syncthing, Dropbox, Nextcloud, rsync…) copies
//! between devices, and imports the other devices' files into its server as
//! `<bucket>-synced-from-<host>` buckets, which the web UI shows under the other host.
//! The folder layout and file format are the reference aw-sync's (COMPATIBILITY.md, sync), so devices running either tool share one folder.
//!
//! Where this differs from the reference, on purpose (COMPATIBILITY.md, sync):
//! - one file is written, under two names: the device layout `<root>/<device_id>/test.db`
//!   and the host layout `<root>/<hostname>/<device_id>/test.db` (the only one the
//!   reference's `sync` and Android read); both are read, one file per device;
//! - only a device's first-hand buckets are pushed, and pulled buckets are never pulled
//!   again, so no device re-imports its own data;
//! - nothing is written in another device's folder; peer files are opened read-only and
//!   read as data, never as code: no view, trigger or schema function of theirs runs, and
//!   sizes, lengths and time per peer are bounded (`peer.rs`, COMPATIBILITY.md, server #19);
//! - no symbolic link below the sync folder's root is followed, reading or writing
//!   (`folder.rs`, COMPATIBILITY.md, server #21);
//! - an event whose data is over 8 MiB (`peer.rs`) is not synced either way (a
//!   bounded pass cannot carry it), and a peer's rows that cannot be synced are skipped
//!   and reported one by one, not the whole peer;
//! - this device's file is published by rename, complete and closed (`outbox.rs`);
//! - reads are exact (no event cut at a page boundary) and writes idempotent
//!   (`transfer.rs`), so an interrupted pass loses and doubles nothing;
//! - pulled buckets are keyed on the origin's device id and source bucket id;
//! - a failing peer or bucket is logged and skipped, and the daemon goes on;
//! - between devices running ours, deletions, edits, backdated events, renames, merges and
//!   privacy runs travel, by day (`day_table.rs`); an event deleted from a pulled copy stays
//!   deleted (`applied.rs`); a device running the reference's tool keeps its copies;
//! - from a reference's file, a pull resumes exactly after the last event pulled (a read
//!   position in the peer file), so events a privacy filter changed on the way in are never
//!   compared again;
//! - the API key is sent (`--api-key`, `AW_API_KEY`), and `--buckets` / `sync --host` work.
//!
//! Choices where the reference's behaviour gives no answer:
//! - `sync` is one pass in both directions (the reference's "simple" host-layout pull per
//!   host folder no longer exists); `sync --host a,b` pulls only data recorded on those
//!   hosts (origin or host folder);
//! - `--start-date` applies to a bucket's first sync: a push takes events that overlap it
//!   (whole, not cut), a pull events that start on or after it;
//! - buckets whose id contains `-synced-from-`, or whose data has `$aw.sync.device`, are
//!   imports: never pushed, never pulled;
//! - a peer's newest readable file with buckets is the one pulled; a device's files
//!   count as its own only when the folder they are in is its device id exactly;
//! - the sync files are plain SQLite, whatever the server's database is (the format is the
//!   reference's, which has no encryption).
//!
//! The same [`Syncer`] runs in the `aw-sync` binary (against a server over HTTP) and inside
//! `aw-server` (against its datastore, no HTTP hop), through the [`Server`] trait.

mod applied;
mod cursors;
mod day_table;
mod digests;
mod error;
mod folder;
#[cfg(feature = "cli")]
mod http_server;
mod outbox;
mod pass;
mod peer;
mod server;
mod transfer;

// What the two users need: the `aw-sync` binary and the sync built into `aw-server`.
pub use applied::{forget_applied_days, AppliedDays, DayToApply};
pub use cursors::forget_all as forget_pull_positions;
pub use digests::DayDigestCache;
pub use error::{Result, SyncError};
pub use folder::{Device, SyncFolder};
#[cfg(feature = "cli")]
pub use http_server::HttpServer;
pub use pass::{
    is_import, parse_list, DayChanges, Mode, PassReport, PeerReport, SyncOptions, Syncer,
    MAX_PROBLEMS,
};
pub use peer::PeerFile;
pub use server::{CachedDatastore, Server};
