//! `config.toml`: the reference's keys, written commented-out on first start.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The server configuration file. Unknown keys are ignored; CLI flags override these.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default)]
pub(crate) struct Config {
    /// Bind address, an IP literal.
    pub address: String,
    /// Port.
    pub port: u16,
    /// Extra exact CORS origins.
    pub cors: Vec<String>,
    /// Extra CORS origin regexes, each matched against the whole origin (`security.rs`).
    pub cors_regex: Vec<String>,
    /// `[auth]`: the optional API key.
    pub auth: AuthConfig,
    /// `[custom_static]`: name → directory served under `/pages/<name>/`.
    pub custom_static: BTreeMap<String, PathBuf>,
    /// Seconds a query may evaluate before it is stopped with a `Timeout` error; `0` means
    /// no limit. Not a reference key (the reference has no limit); unknown to it, harmless.
    /// See [`Config::query_budget`] for the values that mean "no limit".
    pub query_timeout: f64,
    /// Bytes of query results kept to answer repeated dashboard queries at once (see
    /// `aw_query::ResultCache`); `0` turns the cache off. Not a reference key.
    pub query_cache_bytes: u64,
    /// `[sync]`: syncing with other devices through a shared folder, in the background.
    /// Not a reference key (the reference runs aw-sync as a second program).
    pub sync: SyncConfig,
    /// `[backup]`: automatic, verified backups of the database (`backups.rs`). Not a
    /// reference key (the reference keeps no backups).
    pub backup: crate::backups::BackupConfig,
    /// `[log]`: how much log is kept on disk. Not a reference key (the reference writes a
    /// new file per start and never removes one).
    pub log: LogConfig,
}

/// The `[log]` table: the log folder keeps the newest `files` files of the server, each of
/// at most `file_size_mb` (see `aw_platform::logging`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct LogConfig {
    /// MiB a log file holds before the next line starts a new one (at least 1).
    pub file_size_mb: u64,
    /// Files kept, the one being written included (at least 1).
    pub files: u64,
}

impl Default for LogConfig {
    fn default() -> Self {
        let limits = aw_platform::logging::LogLimits::default();
        LogConfig {
            file_size_mb: limits.file_bytes >> 20,
            files: limits.files,
        }
    }
}

impl LogConfig {
    /// The limits (checked at load: see [`Config::check`]).
    pub(crate) fn limits(&self) -> aw_platform::logging::LogLimits {
        aw_platform::logging::LogLimits {
            file_bytes: self.file_size_mb.max(1).saturating_mul(1 << 20),
            files: self.files.max(1),
        }
    }
}

/// The `[sync]` table: the server syncs with the other devices writing to `folder` (see the
/// `aw_sync` crate) every `interval` seconds. Off while `folder` is unset.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SyncConfig {
    /// The shared folder (absolute; `~/` is the home directory).
    pub folder: Option<PathBuf>,
    /// Seconds between passes (at least 1).
    pub interval: u64,
    /// `both`, `push` (only share this device's data) or `pull` (only import others').
    pub mode: aw_sync::Mode,
    /// Only these bucket ids (empty: all).
    pub buckets: Vec<String>,
    /// Where a first sync of a bucket starts, `"YYYY-MM-DD"` (unset: all history).
    pub start_date: Option<chrono::NaiveDate>,
}

/// The default seconds between sync passes (the reference aw-sync daemon's).
pub(crate) const DEFAULT_SYNC_INTERVAL: u64 = 300;

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            folder: None,
            interval: DEFAULT_SYNC_INTERVAL,
            mode: aw_sync::Mode::Both,
            buckets: Vec::new(),
            start_date: None,
        }
    }
}

impl Config {
    /// `query_timeout` as a time budget: `None` (no limit) for `0`, a negative number, NaN,
    /// infinity, or a number of seconds too large to represent (e.g. `1e300`); the query
    /// handler also treats a budget too large to add to the clock as no limit, so no
    /// setting can overflow.
    pub(crate) fn query_budget(&self) -> Option<std::time::Duration> {
        (self.query_timeout > 0.0)
            .then(|| std::time::Duration::try_from_secs_f64(self.query_timeout).ok())
            .flatten()
    }
}

/// The `[auth]` table.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(default)]
pub(crate) struct AuthConfig {
    /// When set and non-empty, `/api/` requests need `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
}

/// The default query time budget in seconds: far above what a year-long dashboard query
/// takes, low enough that a runaway query does not occupy a core for long.
pub(crate) const DEFAULT_QUERY_TIMEOUT: f64 = 120.0;

/// The default port: [`aw_models::DEFAULT_PORT`], or [`aw_models::TESTING_PORT`] in
/// testing mode.
pub(crate) fn default_port(testing: bool) -> u16 {
    if testing {
        aw_models::TESTING_PORT
    } else {
        aw_models::DEFAULT_PORT
    }
}

impl Config {
    /// The defaults for the mode.
    pub(crate) fn defaults(testing: bool) -> Config {
        Config {
            address: "127.0.0.1".to_string(),
            port: default_port(testing),
            cors: Vec::new(),
            cors_regex: Vec::new(),
            auth: AuthConfig::default(),
            custom_static: BTreeMap::new(),
            query_timeout: DEFAULT_QUERY_TIMEOUT,
            query_cache_bytes: aw_query::DEFAULT_CACHE_BYTES as u64,
            sync: SyncConfig::default(),
            backup: crate::backups::BackupConfig::default(),
            log: LogConfig::default(),
        }
    }

    /// Reads the file at `path`, first writing the commented-out defaults when it is missing.
    pub(crate) fn load(path: &Path, testing: bool) -> Result<Config, String> {
        if !path.exists() {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            }
            std::fs::write(path, default_file(testing))
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Config::parse(&text, testing).map_err(|e| format!("invalid config {}: {e}", path.display()))
    }

    /// Parses config text over the mode's defaults.
    pub(crate) fn parse(text: &str, testing: bool) -> Result<Config, String> {
        let mut value: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        // `testing` is never read from the file; the port default depends on the mode.
        value.remove("testing");
        let has_port = value.contains_key("port");
        let mut config: Config = toml::Value::Table(value)
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string())?;
        if !has_port {
            config.port = default_port(testing);
        }
        config.check()?;
        Ok(config)
    }

    /// The checks the types cannot make, all at load, each naming its key: a config that
    /// loads is one every part of the server can use as it is.
    fn check(&self) -> Result<(), String> {
        let absolute = |table: &str, folder: &Option<PathBuf>| match folder {
            Some(f) if !aw_platform::dirs::expand_home(f).is_absolute() => Err(format!(
                "[{table}] folder '{}' is not an absolute path",
                f.display()
            )),
            _ => Ok(()),
        };
        absolute("sync", &self.sync.folder)?;
        if self.sync.interval == 0 {
            return Err("[sync] interval must be at least 1 second".into());
        }
        absolute("backup", &self.backup.folder)?;
        crate::backups::check_config(&self.backup)?;
        if self.log.file_size_mb == 0 || self.log.files == 0 {
            return Err("[log] file_size_mb and files must be at least 1".into());
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::defaults(false)
    }
}

/// The file written on first start: every default, commented out.
pub(crate) fn default_file(testing: bool) -> String {
    format!(
        "### DEFAULT SETTINGS ###\n#address = \"127.0.0.1\"\n#port = {}\n#cors = []\n#cors_regex = []\n#\n#[auth]\n#\n#[custom_static]\n",
        default_port(testing)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_file_parses_to_defaults() {
        assert_eq!(
            Config::parse(&default_file(false), false).unwrap(),
            Config::defaults(false)
        );
        assert_eq!(Config::parse(&default_file(true), true).unwrap().port, 5666);
    }

    #[test]
    fn keys_are_read() {
        let c = Config::parse(
            "address = \"0.0.0.0\"\nport = 1234\ncors = [\"http://x\"]\ncors_regex = [\"y.*\"]\nunknown = 1\n[auth]\napi_key = \"k\"\n[custom_static]\na = \"/tmp\"\n",
            false,
        )
        .unwrap();
        assert_eq!(c.address, "0.0.0.0");
        assert_eq!(c.port, 1234);
        assert_eq!(c.cors, vec!["http://x"]);
        assert_eq!(c.auth.api_key.as_deref(), Some("k"));
        assert_eq!(c.custom_static["a"], PathBuf::from("/tmp"));
        assert_eq!(c.query_timeout, DEFAULT_QUERY_TIMEOUT);
        assert_eq!(
            Config::parse("query_timeout = 2.5", false)
                .unwrap()
                .query_timeout,
            2.5
        );
    }

    #[test]
    fn the_query_cache_budget_is_read() {
        assert_eq!(
            Config::defaults(false).query_cache_bytes,
            aw_query::DEFAULT_CACHE_BYTES as u64
        );
        let c = Config::parse("query_cache_bytes = 0", false).unwrap();
        assert_eq!(c.query_cache_bytes, 0);
        assert!(Config::parse("query_cache_bytes = -1", false).is_err());
    }

    #[test]
    fn any_query_timeout_is_a_budget_or_no_limit() {
        let budget = |t: f64| {
            Config {
                query_timeout: t,
                ..Config::default()
            }
            .query_budget()
        };
        assert_eq!(budget(2.5), Some(std::time::Duration::from_millis(2500)));
        for none in [
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            f64::MAX,
        ] {
            assert_eq!(budget(none), None, "{none}");
        }
        // Representable but too far in the future for the clock: no panic when used.
        let huge = budget(1.5e19).unwrap();
        assert!(std::time::Instant::now().checked_add(huge).is_none());
        assert!(Config::parse("query_timeout = 1.5e19", false).is_ok());
    }

    #[test]
    fn wrong_types_are_errors() {
        assert!(Config::parse("port = \"x\"", false).is_err());
        assert!(Config::parse("port = ", false).is_err());
    }

    #[test]
    fn typed_keys_are_read_and_bad_values_are_refused_naming_the_key() {
        let c = Config::parse(
            "[sync]\nfolder = \"/x\"\nmode = \"pull\"\nstart_date = \"2026-01-02\"\n",
            false,
        )
        .unwrap();
        assert_eq!(c.sync.mode, aw_sync::Mode::Pull);
        assert_eq!(
            c.sync.start_date,
            chrono::NaiveDate::from_ymd_opt(2026, 1, 2)
        );
        for (bad, names) in [
            ("[sync]\nmode = \"sideways\"", "sync.mode"),
            ("[sync]\nstart_date = \"yesterday\"", "sync.start_date"),
            ("[sync]\nfolder = \"rel\"", "[sync] folder"),
            ("[sync]\ninterval = 0", "[sync] interval"),
            ("[backup]\nfolder = \"rel\"", "[backup] folder"),
            ("[log]\nfiles = 0", "[log]"),
        ] {
            let e = Config::parse(bad, false).unwrap_err();
            assert!(e.contains(names), "{bad}: {e}");
        }
    }
}
