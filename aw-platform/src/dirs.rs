//! The user's directories on this platform (XDG on Linux, the platform's equivalents
//! elsewhere), computed from environment variables only. Shared by the server and aw-sync,
//! which must agree on where ActivityWatch keeps its files: aw-sync reads the server's
//! config file for its port.

use std::path::PathBuf;

/// The folder every ActivityWatch program keeps its files under, in each root.
pub const APP: &str = "activitywatch";

/// The server's folder under [`APP`] (the reference server's name, so that both find the
/// same database and config).
pub const SERVER: &str = "aw-server-rust";

/// `<root>/activitywatch/<program>`: a program's folder in one of the roots.
pub fn app_dir(root: PathBuf, program: &str) -> PathBuf {
    root.join(APP).join(program)
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The home directory (`$HOME`, else the current directory).
pub fn home() -> PathBuf {
    env_dir("HOME").unwrap_or_else(|| PathBuf::from("."))
}

/// The data directory (`$XDG_DATA_HOME` or `~/.local/share` on Linux).
pub fn data_root() -> PathBuf {
    platform_root(
        "Library/Application Support",
        "APPDATA",
        "XDG_DATA_HOME",
        ".local/share",
    )
}

/// The config directory (`$XDG_CONFIG_HOME` or `~/.config` on Linux).
pub fn config_root() -> PathBuf {
    platform_root(
        "Library/Application Support",
        "APPDATA",
        "XDG_CONFIG_HOME",
        ".config",
    )
}

/// The cache directory (`$XDG_CACHE_HOME` or `~/.cache` on Linux).
pub fn cache_root() -> PathBuf {
    platform_root("Library/Caches", "LOCALAPPDATA", "XDG_CACHE_HOME", ".cache")
}

/// One of the user's base directories: `~/<macos>` on macOS, `%<windows_var>%` on Windows
/// (else home), `$<xdg_var>` elsewhere (else `~/<xdg_default>`).
fn platform_root(macos: &str, windows_var: &str, xdg_var: &str, xdg_default: &str) -> PathBuf {
    if cfg!(target_os = "macos") {
        home().join(macos)
    } else if cfg!(windows) {
        env_dir(windows_var).unwrap_or_else(home)
    } else {
        env_dir(xdg_var).unwrap_or_else(|| home().join(xdg_default))
    }
}

/// Where `program` writes its log files: `~/Library/Logs/activitywatch/<program>` on macOS,
/// `<cache>/activitywatch/Logs/<program>` on Windows, `<cache>/activitywatch/log/<program>`
/// elsewhere (`$XDG_CACHE_HOME` or `~/.cache` on Linux). The server and aw-sync log side by
/// side on every platform.
pub fn log_dir(program: &str) -> PathBuf {
    if cfg!(target_os = "macos") {
        home().join("Library/Logs").join(APP).join(program)
    } else if cfg!(windows) {
        cache_root().join(APP).join("Logs").join(program)
    } else {
        cache_root().join(APP).join("log").join(program)
    }
}

/// `path` with a leading `~` replaced by the home directory.
pub fn expand_home(path: &std::path::Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => home().join(rest),
        Err(_) => path.to_path_buf(),
    }
}
