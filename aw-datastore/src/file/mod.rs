//! The database file's life, owned in one place: [`DatabaseFile`].
//!
//! Every operation on the database file and the files beside it goes through the owner:
//! opening and migrating it (with the backup before), salvaging it (at start, while
//! serving, by command), backing it up (names, space, rotation), restoring a backup over it, keeping acknowledged writes that are
//! not committed yet (the journal), announcing the running server, replacing the file, and
//! keeping state derived from it between runs (`derived.rs`: valid only with every write
//! since it was saved known, and none by another program).
//! The invariants it keeps:
//!
//! * **No file is replaced without the lock.** The lock (`<database>.lock`, never itself
//!   replaced) is taken before anything looks at the damage marker or the file, and held
//!   for the owner's whole life. When `flock` fails with an error the database is still
//!   served, but no file is replaced: no salvage of any kind, no restore; an owner file
//!   (`<database>.owner`, `lock.rs`) keeps a second server away meanwhile.
//! * **An acknowledged write is in exactly one durable place** from its answer until its
//!   commit: the journal (`journal.rs`), which the commit then empties; after the commit,
//!   the database. The journal belongs to one database at one commit: its header names the
//!   database and a number that database holds, under a salt its records' checksums
//!   cover, so no sequence of empty commits, restores or salvages can make records apply
//!   twice, to another file, or not at all.
//! * **The database path names a complete database at every instant**: a replace keeps the
//!   old file under a second name first and renames the new one over it in one step
//!   (`replace.rs`); a replace the process did not finish is finished or undone before
//!   the next open.
//! * **Files it makes have the database's mode**, and folders it makes are private when the
//!   database's folder is (`modes.rs`).
//!
//! One file per concept: `database_file.rs` (the owner, its lock, a restore), `lock.rs`,
//! `open.rs` (pragmas, migration with its backup, repairs, the journal's held writes),
//! `journal/` (written, read back, its format and cipher), `recovery.rs` (applying held writes), `identity.rs` (the
//! journal's rows in the database), `replace.rs`, `backup/` (copies, names, rotation), `salvage.rs`,
//! `encryption.rs` (the password), `space.rs` (what takes the space), `vacuum.rs` (a file rewritten to give space back), `convert.rs` (to and from encrypted), `modes.rs`, `derived.rs`, `checkpointer.rs` (the WAL copied off the worker's turn), `legacy_import.rs`, `announcement.rs`,
//! `names.rs` (side-file names) and `faults.rs` (failures tests switch on).

mod announcement;
pub(crate) mod backup;
pub(crate) mod checkpointer;
mod convert;
mod database_file;
pub(crate) mod derived;
pub(crate) mod encryption;
pub(crate) mod faults;
mod identity;
pub(crate) mod journal;
pub(crate) mod legacy_import;
mod lock;
mod modes;
pub(crate) mod names;
pub(crate) mod open;
mod recovery;
mod replace;
pub(crate) mod salvage;
mod space;
mod vacuum;

pub use announcement::{announce, announcement_path, withdraw_announcement};
pub use backup::{
    copy_verified, list_backups, rotate_backups, rotation, verify_backup, write_backup, BackupFile,
    BackupKind, BackupSource, BACKUP_FOLDER, KEEP_BEFORE_REWRITE,
};
pub use convert::{convert, Converted, Direction};
pub use database_file::DatabaseFile;
pub use derived::{KeptState, Producer};
pub use encryption::DbPassword;
pub use faults::Faults;
pub(crate) use identity::{
    adopt_identity, copy_journal_key, create_marker, marker, salvage_identity, set_identity,
    store_committed,
};
pub(crate) use journal::Journal;
pub use lock::lock_file;
pub(crate) use modes::{create_file, create_folder, match_database};
pub use names::{with_suffix, FILE_TIME_FORMAT};
pub use open::OpenOptions;
pub(crate) use recovery::recover;
pub(crate) use replace::sync_folder_of;
pub use salvage::{damage_marker, salvage, LostRange, SalvageReport};
pub use space::{BucketSpace, SpaceMeasure, StructureSpace, YearSpace, ROW_COST};
pub use vacuum::Compacted;
