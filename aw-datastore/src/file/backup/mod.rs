//! Backups of the database: consistent, verified copies (`copy.rs`), and their files'
//! names, listing and rotation (`rotation.rs`).

mod copy;
mod rotation;

pub(crate) use copy::write_unchecked_version;
pub use copy::{copy_verified, verify_backup, BackupSource};
pub(crate) use rotation::migration_target;
pub use rotation::{
    list_backups, rotate_backups, rotation, write_backup, BackupFile, BackupKind,
    KEEP_BEFORE_REWRITE,
};

/// The folder beside the database where backups go unless configured otherwise.
pub const BACKUP_FOLDER: &str = "backups";
