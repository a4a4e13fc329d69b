//! The ActivityWatch event store: one SQLite worker thread behind a cloneable handle.
//!
//! [`Datastore`] is a cheap, `Clone + Send + Sync` handle (a channel sender, no mutex). Every
//! operation becomes a message to the single worker thread that owns the only
//! `rusqlite::Connection`; the answer comes back as a [`Answer`] that async code `.await`s
//! and threads [`Answer::wait`] on. Requests run in arrival order.
//!
//! # The crate's rooms
//! From the top down; a room imports only from the rooms below it (`scripts/layers.py`
//! checks it, with ARCHITECTURE.md's map):
//! * `handle/`: the [`Datastore`] handle callers hold, its methods (one per request), the
//!   [`Answer`] they wait on, and the open that hands one out.
//! * `worker/`: the thread that owns the connection: the requests it serves and the table
//!   of what each one is (`worker/request.rs`), its loop and schedule, the group commit
//!   and its batch, long jobs and rewrites and the fence that orders them, the salvage
//!   while serving, and the state it publishes for handles.
//! * `file/`: the database file's life: lock, open, journal, recovery, backups, restore,
//!   salvage, replace, encryption, modes, derived state, legacy import, side-file names.
//! * `store/`: all SQL on buckets, events and settings (schema and migrations included)
//!   and the caches that mirror them; the row-level changes a write records.
//! * `error.rs`, `new_event.rs`: the vocabulary every room shares.
//!
//! # Storage
//! The file format is aw-server-rust's (schema `user_version` 5; see `store/schema.rs`): an
//! existing reference `sqlite.db` (v4 or v5, or older) opens in place and is migrated. Events
//! are stored as integer nanoseconds with `data` as compact JSON text with sorted keys, and
//! read through the composite index `(bucketrow, starttime DESC, endtime)`.
//! The database runs in WAL mode with `synchronous=FULL`; writes are group-committed (see
//! `worker/` for the exact policy, which also commits after a short idle period).
//!
//! # Choices where the reference has hazards
//! * Events whose timestamp or end do not fit `i64` nanoseconds are refused with
//!   [`DatastoreError::InvalidEvent`] (the reference's worker panicked).
//! * An event `id` only ever addresses an event of the same bucket: inserting an event whose
//!   id belongs to another bucket fails before anything is written; an id that names no
//!   event gets a fresh id instead (so a client can never push the id sequence to its
//!   64-bit end, COMPATIBILITY.md, server #18; files where another server did are repaired at open); creating
//!   a bucket with events and importing ignore event ids (new ids are assigned).
//! * One failing request never loses another's acknowledged write: when SQLite rolls back
//!   the whole open transaction (full disk, I/O error), the writes it held are applied again
//!   from the batch that records them (`worker/batch.rs`, `worker/group_commit.rs`).
//! * An import keeps every event that can be stored and reports each one that cannot
//!   ([`ImportDocument`]); the reference skipped them silently.
//! * The last-heartbeat cache is cleared whenever the data it mirrors changes: on insert,
//!   on event delete and on bucket delete, so a deleted-and-recreated bucket merges correctly.
//! * A missing event is [`DatastoreError::NoSuchEvent`] (the reference answered an internal
//!   error); event counts honour `start`/`end`; events before 1970 are returned like others.
//! * Rows whose stored `data` is not a JSON object are skipped with a warning.
//! * A second process opening the same file fails at once with [`DatastoreError::Locked`],
//!   before it looks at or changes any file (`file/`).
//!
//! # When a hand-off polls instead of sleeping
//! Handing a request to the worker and the answer back puts a thread to sleep and wakes it
//! twice per request; on a virtual machine each wake-up of an idle CPU costs more than a
//! heartbeat's whole work. So while one client sends quick requests back to back (a
//! watcher's queue being flushed, a script), the worker polls its queue briefly after each
//! answer and the caller polls briefly for its answer, and such requests cross threads
//! without sleeping. Watchers at one heartbeat a second and many connections at once never
//! make either side poll: there it would only burn CPU (`worker/handoff.rs` has the rules).
//!
//! # Heartbeats
//! A heartbeat `H` merges into the bucket's last event `L` iff `H.data == L.data` and
//! `L.start <= H.start <= L.end + pulsetime` (inclusive). The merge keeps `L`'s id, start
//! and data and extends its end to `max(L.end, H.end)`; otherwise `H` is stored as a new
//! event. `L` comes from a per-bucket cache, else from the database.

/// The SQL condition that makes an event "long" (longer than `schema::LONG_EVENT_NS`, one
/// hour), as text for `concat!`: SQLite uses the partial index `events_long_by_end` only for
/// a query that repeats the index's condition word for word, so the index and every query
/// that uses it take it from here (a test checks the number against `LONG_EVENT_NS`).
macro_rules! long_event_condition {
    () => {
        "endtime - starttime > 3600000000000"
    };
}

mod error;
mod file;
mod handle;
mod new_event;
mod store;
mod worker;

pub use aw_models::raw_event::{EventRows, RawEvent, TextRow, TextRows};
pub use error::{DatastoreError, Failure, Result};
pub use file::encryption::AVAILABLE as ENCRYPTION_AVAILABLE;
pub use file::{
    announce, announcement_path, convert, copy_verified, damage_marker, list_backups, lock_file,
    rotate_backups, rotation, salvage, verify_backup, with_suffix, withdraw_announcement,
    write_backup, BackupFile, BackupKind, BackupSource, BucketSpace, Compacted, Converted,
    DatabaseFile, DbPassword, Direction, Faults, KeptState, LostRange, OpenOptions, Producer,
    SalvageReport, SpaceMeasure, StructureSpace, YearSpace, BACKUP_FOLDER, FILE_TIME_FORMAT,
    KEEP_BEFORE_REWRITE, ROW_COST,
};
pub use handle::{
    parse_import_document, Answer, AnswerFuture, Datastore, ImportDocument, ImportProblem, Opening,
    TextParts, WorkerHold, MAX_PROBLEMS,
};
pub use new_event::NewEvent;
pub use store::schema::SCHEMA_VERSION;
pub use store::{
    check_retention_rules, created_from_text, day_of, day_span, local_rule_cutoffs,
    BucketCompaction, Changed, Compaction, DayDigest, DayDigests, Merge, MirroredDay,
    PrivacyReport, PrivacySample, PulledDay, PulledDayApplied, RangeDeletion, Reclaimed,
    RuleReport, Touched, WriteListener, DAY_NS, FLOODED_TYPES, FLOOD_GAP_NS, PRIVACY_FILTERS_KEY,
    RETENTION_RULES_KEY,
};
pub use worker::{COMMIT_INTERVAL, IDLE_COMMIT_DELAY, MAX_UNCOMMITTED_EVENTS};
