//! Logging to stdout and to a new file per start: `[date time][LEVEL][target]: message`.
//! The server and aw-sync both log through [`init`], so their lines read the same.

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

/// The level: `LOG_LEVEL` if set (any case), else debug in testing/verbose mode, else info.
pub fn level(testing: bool, verbose: bool) -> LevelFilter {
    match std::env::var("LOG_LEVEL")
        .ok()
        .and_then(|l| l.parse::<LevelFilter>().ok())
    {
        Some(level) => level,
        None if testing || verbose => LevelFilter::Debug,
        None => LevelFilter::Info,
    }
}

/// What a program logs and where.
#[derive(Debug, Clone, Copy)]
pub struct Logger<'a> {
    /// The level of every target not listed in `levels`.
    pub level: LevelFilter,
    /// Levels of particular targets (`("hyper", LevelFilter::Warn)`).
    pub levels: &'a [(&'static str, LevelFilter)],
    /// The folder of the log files (created if missing).
    pub dir: &'a Path,
    /// The start of the file's name; the start time follows it
    /// (`aw-server-rust_2026-11-26T12-00-00+0000.log`).
    pub file_stem: &'a str,
}

/// Installs the logger; a log file that cannot be created only costs the file output.
pub fn init(logger: Logger<'_>) {
    let name = format!(
        "{}_{}.log",
        logger.file_stem,
        chrono::Local::now().format("%Y-%m-%dT%H-%M-%S%z")
    );
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
        .level(logger.level);
    for &(target, level) in logger.levels {
        dispatch = dispatch.level_for(target, level);
    }
    dispatch = dispatch.chain(output(std::io::stdout()));
    let dir = logger.dir;
    match std::fs::create_dir_all(dir).and_then(|_| fern::log_file(dir.join(&name))) {
        Ok(f) => dispatch = dispatch.chain(output(std::io::LineWriter::new(f))),
        Err(e) => eprintln!("Cannot create a log file in {}: {e}", dir.display()),
    }
    if let Err(e) = dispatch.apply() {
        eprintln!("Cannot install the logger: {e}");
    }
}
