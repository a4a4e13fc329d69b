//! `aw-server`: a fast, drop-in ActivityWatch server.
//!
//! Behaviour follows aw-server-rust 0.14 (COMPATIBILITY.md), with the
//! reference's plain bugs fixed; each such choice is documented where it is implemented:
//! `error.rs` (status codes), `endpoints/import.rs` (event ids), `security.rs` (filters).

mod allocator;
mod background;
mod backups;
mod builtin_sync;
mod catchers;
mod cli;
mod commands;
mod config;
mod cpu;
mod csv_export;
mod device_id;
mod dirs;
mod endpoints;
mod error;
mod instance;
mod json_body;
mod normalize;
mod params;
mod period_fill;
#[cfg(test)]
mod query_cache_tests;
mod query_source;
mod responses;
mod retention;
mod security;
mod server;
mod shutdown;
mod startup;
mod state;
mod storage;
mod time_zone;

use clap::Parser;

/// mimalloc instead of the system allocator: queries and imports allocate millions of small
/// objects, where glibc malloc spent a quarter of a year-long query's time (perf) and kept
/// freed memory fragmented.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;
use zeroize::Zeroize;

/// `encrypt-db` / `decrypt-db`: converts the database in place and says what it copied.
#[cfg(feature = "encryption")]
fn convert(
    cli: &cli::Cli,
    direction: aw_datastore::Direction,
    password: Option<aw_datastore::DbPassword>,
) -> ExitCode {
    let Some(password) = &password else {
        log::error!("{direction:?} needs the password: --db-password or AW_DB_PASSWORD");
        return ExitCode::FAILURE;
    };
    let path = cli::db_path(cli);
    match aw_datastore::convert(&path, password, direction) {
        Ok(done) => {
            log::info!(
                "{direction:?}ed {}: {} buckets, {} events, verified",
                path.display(),
                done.buckets,
                done.events
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            log::error!("Cannot convert {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}

/// Logs to stdout and to a new file per start in the server's log folder; Rocket's own
/// chatter (launch banners, a line per request) only at debug level.
fn init_logging(cli: &cli::Cli) {
    use aw_platform::logging::{self, Logger};
    use log::LevelFilter;
    let level = logging::level(cli.testing, cli.verbose);
    let framework = if level >= LevelFilter::Debug {
        LevelFilter::Info
    } else {
        LevelFilter::Error
    };
    logging::init(Logger {
        level,
        levels: &[
            ("rocket", framework),
            ("_", framework),
            ("hyper", LevelFilter::Warn),
        ],
        dir: &dirs::log_dir(),
        file_stem: if cli.testing {
            "aw-server-rust-testing"
        } else {
            "aw-server-rust"
        },
    });
}

fn main() -> ExitCode {
    startup::begin();
    allocator::configure();
    #[cfg_attr(not(feature = "encryption"), allow(unused_mut))]
    let mut cli = cli::Cli::parse();
    init_logging(&cli);
    // The password was read into a `DbPassword` (wiped when dropped); it leaves the
    // environment at once, so nothing this process starts can see it. (The copies clap and
    // the C library made on the way are theirs: not wiped.)
    let env_password_empty = std::env::var_os("AW_DB_PASSWORD").map(|value| {
        let mut bytes = value.into_encoded_bytes();
        let empty = bytes.is_empty();
        bytes.zeroize();
        empty
    });
    std::env::remove_var("AW_DB_PASSWORD");
    if let Some(empty) = env_password_empty {
        if !aw_datastore::ENCRYPTION_AVAILABLE {
            log::error!("AW_DB_PASSWORD is set, but this build has no database encryption; refusing to write plaintext");
            return ExitCode::FAILURE;
        }
        if empty {
            log::error!("AW_DB_PASSWORD is empty; refusing to start");
            return ExitCode::FAILURE;
        }
    }
    // Taken out of `cli`, so the only copy moves on to the datastore.
    #[cfg(feature = "encryption")]
    let password = cli.db_password.take();
    #[cfg(not(feature = "encryption"))]
    let password = None;
    match cli.command.clone() {
        None => {}
        Some(cli::Command::Backup) => return commands::backup(&cli, password),
        Some(cli::Command::Salvage) => return commands::salvage(&cli, password),
        Some(cli::Command::Compact) => return commands::compact(&cli, password),
        Some(cli::Command::Restore { backup }) => {
            return commands::restore(&cli, password, backup.as_deref())
        }
        #[cfg(feature = "encryption")]
        Some(cli::Command::EncryptDb) => {
            return convert(&cli, aw_datastore::Direction::Encrypt, password)
        }
        #[cfg(feature = "encryption")]
        Some(cli::Command::DecryptDb) => {
            return convert(&cli, aw_datastore::Direction::Decrypt, password)
        }
    }
    startup::mark("logging");
    let result = server::Settings::resolve(&cli, password)
        .map_err(server::Failure::from)
        .and_then(server::run);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            log::error!("{}", failure.message);
            ExitCode::from(failure.exit_code)
        }
    }
}
