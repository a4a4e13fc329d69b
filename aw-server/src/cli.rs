//! Command-line flags, compatible with aw-server-rust's.

use clap::Parser;
use std::path::PathBuf;

/// A fast, drop-in ActivityWatch server.
#[derive(Parser, Debug, Clone, Default)]
#[command(name = "aw-server", version, about)]
pub(crate) struct Cli {
    /// Run in testing mode: port 5666, a separate database and config file.
    #[arg(long)]
    pub testing: bool,
    /// Log at debug level.
    #[arg(long)]
    pub verbose: bool,
    /// Address to bind (an IP literal); overrides the config's `address`.
    #[arg(long)]
    pub host: Option<String>,
    /// Port to listen on; overrides the config's `port`.
    #[arg(long)]
    pub port: Option<u16>,
    /// Database file to use instead of the default (also disables the legacy import).
    #[arg(long)]
    pub dbpath: Option<PathBuf>,
    /// Config file to use instead of the default (created with defaults if missing).
    #[arg(short, long)]
    pub config: Option<PathBuf>,
    /// Directory of a web UI build (aw-webui's dist) to serve instead of the built-in page.
    #[arg(long)]
    pub webpath: Option<PathBuf>,
    /// Extra static directories served under `/pages/<name>/`: `name1=/path1,name2=/path2`.
    #[arg(long)]
    pub custom_static: Option<String>,
    /// Use this device id instead of the stored one (the file is left untouched).
    #[arg(long)]
    pub device_id: Option<String>,
    /// Do not import the Python aw-server's database on first start.
    #[arg(long)]
    pub no_legacy_import: bool,
    /// The password of the encrypted database (not empty). Prefer the environment variable:
    /// a command line is visible to other users of the machine.
    #[cfg(feature = "encryption")]
    #[arg(long, env = "AW_DB_PASSWORD", hide_env_values = true, value_parser = parse_password)]
    pub db_password: Option<aw_datastore::DbPassword>,
    /// Instead of serving: back up, restore or convert the database.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// What to do instead of serving.
#[derive(clap::Subcommand, Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// Take a verified backup of the database now: through the running server when one
    /// runs on it, directly otherwise. It goes to the `[backup]` folder (default: `backups`
    /// beside the database).
    Backup,
    /// Replace the database with a backup (the newest verified one by default). The server
    /// must be stopped; the current file is kept aside, never deleted.
    Restore {
        /// The backup: a path, or a file name in the backup folder.
        backup: Option<PathBuf>,
    },
    /// Copy every readable bucket, event and setting of a damaged database into a fresh
    /// one and go on with that (the server must be stopped); the damaged file is kept aside.
    Salvage,
    /// Rewrite the database whole so that it gives space back (the server must be
    /// stopped): the free pages inside it go, and it is switched to incremental
    /// auto-vacuum, so that later deletions can give theirs back while serving
    /// (`POST /api/0/storage/reclaim`). A verified backup is taken first.
    Compact,
    /// Encrypt the (plain) database in place with --db-password / AW_DB_PASSWORD. The
    /// encrypted copy is verified before it replaces the original.
    #[cfg(feature = "encryption")]
    EncryptDb,
    /// Decrypt the encrypted database in place (back to a plain SQLite file). The plain copy
    /// is verified before it replaces the original.
    #[cfg(feature = "encryption")]
    DecryptDb,
}

/// The password as a [`aw_datastore::DbPassword`] (wiped when dropped; never printed).
#[cfg(feature = "encryption")]
fn parse_password(text: &str) -> Result<aw_datastore::DbPassword, String> {
    aw_datastore::DbPassword::new(text.to_string()).map_err(|e| e.to_string())
}

/// The database file: `--dbpath`, else `sqlite.db` (`sqlite-testing.db` with `--testing`)
/// in the data directory.
pub(crate) fn db_path(cli: &Cli) -> PathBuf {
    cli.dbpath.clone().unwrap_or_else(|| {
        crate::dirs::data_dir().join(if cli.testing {
            "sqlite-testing.db"
        } else {
            "sqlite.db"
        })
    })
}

/// The config file: `--config`, else `config.toml` (`config-testing.toml` with
/// `--testing`) in the config directory.
pub(crate) fn config_path(cli: &Cli) -> PathBuf {
    cli.config.clone().unwrap_or_else(|| {
        crate::dirs::config_dir().join(if cli.testing {
            "config-testing.toml"
        } else {
            "config.toml"
        })
    })
}

/// Parses `name1=/path1,name2=/path2`; an item without `=` is an error.
pub(crate) fn parse_custom_static(text: &str) -> Result<Vec<(String, PathBuf)>, String> {
    text.split(',')
        .filter(|item| !item.trim().is_empty())
        .map(|item| match item.split_once('=') {
            Some((name, path)) if !name.trim().is_empty() => {
                Ok((name.trim().to_string(), PathBuf::from(path.trim())))
            }
            _ => Err(format!(
                "--custom-static: '{item}' is not of the form name=/path"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_static_pairs() {
        assert_eq!(
            parse_custom_static("a=/x,b=/y").unwrap(),
            vec![
                ("a".into(), PathBuf::from("/x")),
                ("b".into(), PathBuf::from("/y"))
            ]
        );
        assert!(parse_custom_static("a").is_err());
    }
}
