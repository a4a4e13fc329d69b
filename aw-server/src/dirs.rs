//! Where the server's files live, under the platform's directories ([`aw_platform::dirs`]).

use aw_platform::dirs::{app_dir, config_root, data_root, SERVER};
use std::path::PathBuf;

/// `<data>/activitywatch/aw-server-rust`: the database and the device id.
pub(crate) fn data_dir() -> PathBuf {
    app_dir(data_root(), SERVER)
}

/// `<config>/activitywatch/aw-server-rust`: config.toml.
pub(crate) fn config_dir() -> PathBuf {
    app_dir(config_root(), SERVER)
}

/// The log directory (`$XDG_CACHE_HOME/activitywatch/log/aw-server-rust` on Linux).
pub(crate) fn log_dir() -> PathBuf {
    aw_platform::dirs::log_dir(SERVER)
}

/// The Python aw-server's database, the source of the one-time legacy import.
pub(crate) fn legacy_db_path() -> PathBuf {
    app_dir(data_root(), "aw-server").join("peewee-sqlite.v2.db")
}
