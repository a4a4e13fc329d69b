//! Logging to stdout and to a new file per start: `[date time][LEVEL][target]: message`.

use log::LevelFilter;
use std::path::Path;

/// The level: `LOG_LEVEL` if set, else debug in testing/verbose mode, else info.
pub fn level(testing: bool, verbose: bool) -> LevelFilter {
    match std::env::var("LOG_LEVEL")
        .map(|l| l.to_ascii_lowercase())
        .as_deref()
    {
        Ok("trace") => LevelFilter::Trace,
        Ok("debug") => LevelFilter::Debug,
        Ok("info") => LevelFilter::Info,
        Ok("warn") => LevelFilter::Warn,
        Ok("error") => LevelFilter::Error,
        _ if testing || verbose => LevelFilter::Debug,
        _ => LevelFilter::Info,
    }
}

/// Installs the logger; a log file that cannot be created only costs the file output.
pub fn init(level: LevelFilter, log_dir: &Path, testing: bool) {
    let name = format!(
        "{}_{}.log",
        if testing {
            "aw-server-rust-testing"
        } else {
            "aw-server-rust"
        },
        chrono::Local::now().format("%Y-%m-%dT%H-%M-%S%z")
    );
    // Rocket's own chatter (launch banners, per-request lines) only in debug mode.
    let framework = if level >= LevelFilter::Debug {
        LevelFilter::Info
    } else {
        LevelFilter::Error
    };
    let mut dispatch = fern::Dispatch::new()
        .format(|out, message, record| {
            out.finish(format_args!(
                "[{}][{}][{}]: {}",
                chrono::Local::now().format("%Y-%m-%d %H:%M:%S"),
                record.level(),
                record.target(),
                message
            ))
        })
        .level(level)
        .level_for("rocket", framework)
        .level_for("_", framework)
        .level_for("hyper", LevelFilter::Warn)
        .chain(std::io::stdout());
    let file = std::fs::create_dir_all(log_dir).and_then(|_| fern::log_file(log_dir.join(&name)));
    match file {
        Ok(f) => dispatch = dispatch.chain(f),
        Err(e) => eprintln!("Cannot create a log file in {}: {e}", log_dir.display()),
    }
    if let Err(e) = dispatch.apply() {
        eprintln!("Cannot install the logger: {e}");
    }
}
