//! Logging to stdout and to a new file per start: `[date time][LEVEL][target]: message`.

use log::LevelFilter;
use std::io::Write;
use std::path::Path;

/// A log output that never fails: a line that cannot be written (a full disk, a closed
/// pipe) is dropped. fern panics when a write and then its fallback to stderr both fail,
/// and a panic inside a logging call ends whichever thread logged: on a full disk with
/// stderr in a file there, that was the datastore's worker, and every request after it
/// failed ("worker is gone").
struct NeverFails<W>(W);

impl<W: Write> Write for NeverFails<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// `writer` as a fern output that never fails, one line per record.
fn output(writer: impl Write + Send + 'static) -> fern::Output {
    fern::Output::writer(Box::new(NeverFails(writer)), "\n")
}

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
        .chain(output(std::io::stdout()));
    let file = std::fs::create_dir_all(log_dir).and_then(|_| fern::log_file(log_dir.join(&name)));
    match file {
        Ok(f) => dispatch = dispatch.chain(output(std::io::LineWriter::new(f))),
        Err(e) => eprintln!("Cannot create a log file in {}: {e}", log_dir.display()),
    }
    if let Err(e) = dispatch.apply() {
        eprintln!("Cannot install the logger: {e}");
    }
}
