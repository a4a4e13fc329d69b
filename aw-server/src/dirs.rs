//! Where files live: XDG directories on Linux, the platform's equivalents elsewhere.

use std::path::PathBuf;

const APP: &str = "activitywatch";
const SERVER: &str = "aw-server-rust";

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn home() -> PathBuf {
    env_dir("HOME").unwrap_or_else(|| PathBuf::from("."))
}

/// The platform data directory (`$XDG_DATA_HOME` or `~/.local/share` on Linux).
pub fn data_root() -> PathBuf {
    if cfg!(target_os = "macos") {
        home().join("Library/Application Support")
    } else if cfg!(windows) {
        env_dir("APPDATA").unwrap_or_else(home)
    } else {
        env_dir("XDG_DATA_HOME").unwrap_or_else(|| home().join(".local/share"))
    }
}

/// The platform config directory (`$XDG_CONFIG_HOME` or `~/.config` on Linux).
pub fn config_root() -> PathBuf {
    if cfg!(target_os = "macos") {
        home().join("Library/Application Support")
    } else if cfg!(windows) {
        env_dir("APPDATA").unwrap_or_else(home)
    } else {
        env_dir("XDG_CONFIG_HOME").unwrap_or_else(|| home().join(".config"))
    }
}

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
        env_dir("LOCALAPPDATA")
            .unwrap_or_else(home)
            .join(APP)
            .join("Logs")
            .join(SERVER)
    } else {
        env_dir("XDG_CACHE_HOME")
            .unwrap_or_else(|| home().join(".cache"))
            .join(APP)
            .join("log")
            .join(SERVER)
    }
}

/// The Python aw-server's database, the source of the one-time legacy import.
pub fn legacy_db_path() -> PathBuf {
    data_root()
        .join(APP)
        .join("aw-server")
        .join("peewee-sqlite.v2.db")
}
