//! Where the server's files live, under the platform's directories (`aw_models::dirs`).

use aw_models::dirs::{cache_root, config_root, data_root, home, APP};
use std::path::PathBuf;

const SERVER: &str = "aw-server-rust";

/// `<data>/activitywatch/aw-server-rust`: the database and the device id.
pub fn data_dir() -> PathBuf {
    data_root().join(APP).join(SERVER)
}

/// `<config>/activitywatch/aw-server-rust`: config.toml.
pub fn config_dir() -> PathBuf {
    config_root().join(APP).join(SERVER)
}

/// The log directory (`$XDG_CACHE_HOME/activitywatch/log/aw-server-rust` on Linux).
pub fn log_dir() -> PathBuf {
    if cfg!(target_os = "macos") {
        home().join("Library/Logs").join(APP).join(SERVER)
    } else if cfg!(windows) {
        cache_root().join(APP).join("Logs").join(SERVER)
    } else {
        cache_root().join(APP).join("log").join(SERVER)
    }
}

/// The Python aw-server's database, the source of the one-time legacy import.
pub fn legacy_db_path() -> PathBuf {
    data_root()
        .join(APP)
        .join("aw-server")
        .join("peewee-sqlite.v2.db")
}
