//! `aw-server`: a fast, drop-in ActivityWatch server.
//!
//! Behaviour follows aw-server-rust 0.14 (see `shared/spec` in the project), with the
//! reference's plain bugs fixed; each such choice is documented where it is implemented:
//! `error.rs` (status codes), `endpoints/import.rs` (event ids), `security.rs` (filters).

mod catchers;
mod cli;
mod config;
mod cpu;
mod device_id;
mod dirs;
mod endpoints;
mod error;
mod json_body;
mod logging;
mod memory;
mod normalize;
mod params;
mod query_source;
mod responses;
mod security;
mod server;
mod shutdown;
mod state;

use clap::Parser;

/// mimalloc instead of the system allocator: queries and imports allocate millions of small
/// objects, where glibc malloc spent a quarter of a year-long query's time (perf) and kept
/// freed memory fragmented.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;

fn main() -> ExitCode {
    memory::configure();
    let cli = cli::Cli::parse();
    let log_dir = dirs::log_dir();
    logging::init(
        logging::level(cli.testing, cli.verbose),
        &log_dir,
        cli.testing,
    );
    if std::env::var_os("AW_DB_PASSWORD").is_some() {
        log::error!("AW_DB_PASSWORD is set, but this build has no database encryption; refusing to write plaintext");
        return ExitCode::FAILURE;
    }
    let result = server::Settings::resolve(&cli).and_then(server::run);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            log::error!("{message}");
            ExitCode::FAILURE
        }
    }
}
