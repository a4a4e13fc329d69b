//! Logging to stdout and to files in a log folder: `[date time][LEVEL][target]: message`.
//! The server and aw-sync both log through [`init`], so their lines read the same.
//!
//! The log on disk is bounded, whatever is logged: a line is cut at [`MAX_LINE_BYTES`]
//! (messages can quote what a peer or a client sent), a file is closed once it holds
//! [`LogLimits::file_bytes`] and the next line starts a new one, and only the newest
//! [`LogLimits::files`] files of a program are kept (a new file per start, too). So the
//! folder holds at most `files × (file_bytes + one line)` of each program's log: a flood of
//! warnings costs old lines, never the disk the database needs.

use log::LevelFilter;
use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The longest line written; the rest of a longer message is replaced by a note.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// How much log a program keeps on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLimits {
    /// A file is closed, and the next line goes to a new one, once it holds this many bytes.
    pub file_bytes: u64,
    /// The newest this many files of the program are kept (the one being written counts);
    /// older ones are removed. At least 1.
    pub files: u64,
}

impl Default for LogLimits {
    /// 10 files of 10 MiB: weeks of an ordinary server's log, and at most 100 MiB.
    fn default() -> LogLimits {
        LogLimits {
            file_bytes: 10 << 20,
            files: 10,
        }
    }
}

/// The limits in force: set by [`init`], changed by [`set_limits`] once a program has read
/// its configuration (which it reads after logging starts, to log what is wrong with it).
static FILE_BYTES: AtomicU64 = AtomicU64::new(10 << 20);
static FILES: AtomicU64 = AtomicU64::new(10);

/// Changes the limits of the log files from the next line on; older files beyond
/// `limits.files` are removed at the next new file.
pub fn set_limits(limits: LogLimits) {
    FILE_BYTES.store(limits.file_bytes.max(1), Ordering::Relaxed);
    FILES.store(limits.files.max(1), Ordering::Relaxed);
}

fn limits() -> LogLimits {
    LogLimits {
        file_bytes: FILE_BYTES.load(Ordering::Relaxed),
        files: FILES.load(Ordering::Relaxed),
    }
}

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
    /// The start of the files' names; the time each was started follows it
    /// (`aw-server-rust_2026-11-26T12-00-00+0000.log`). Files of this name are the
    /// program's, and the oldest of them are removed (see [`LogLimits`]).
    pub file_stem: &'a str,
}

/// A message cut at [`MAX_LINE_BYTES`] as it is formatted (nothing is built in memory).
struct Capped<'a>(&'a fmt::Arguments<'a>);

/// Passes text on until its budget is spent, then drops the rest and remembers it did.
struct Budget<'a, 'b> {
    out: &'a mut fmt::Formatter<'b>,
    left: usize,
    cut: usize,
}

impl fmt::Write for Budget<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if s.len() <= self.left {
            self.left -= s.len();
            return self.out.write_str(s);
        }
        let mut end = self.left;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.left = 0;
        self.cut += s.len() - end;
        self.out.write_str(&s[..end])
    }
}

impl fmt::Display for Capped<'_> {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut budget = Budget {
            out,
            left: MAX_LINE_BYTES,
            cut: 0,
        };
        budget.write_fmt(*self.0)?;
        match budget.cut {
            0 => Ok(()),
            cut => write!(budget.out, " [{cut} more bytes not logged]"),
        }
    }
}

/// The log files of one program in one folder: lines go to the newest, a new one is
/// started when it is full, and the oldest beyond the limit are removed.
struct LogFiles {
    dir: PathBuf,
    stem: String,
    file: Option<File>,
    written: u64,
    /// Whether the last byte written ended a line: files are only changed between lines.
    at_line_start: bool,
}

impl LogFiles {
    /// Starts a new file (named for the time now, made unique) and removes the oldest.
    fn start_file(&mut self) -> std::io::Result<()> {
        let time = chrono::Local::now().format("%Y-%m-%dT%H-%M-%S%z");
        let mut attempt = 0u32;
        let file = loop {
            let name = match attempt {
                0 => format!("{}_{time}.log", self.stem),
                // Sorts after the first file of the second, and in order: files of the
                // same time of change are ordered by name (see `remove_oldest`).
                n => format!("{}_{time}_{n:04}.log", self.stem),
            };
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.dir.join(name))
            {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 9999 => {
                    attempt += 1;
                }
                other => break other?,
            }
        };
        self.file = Some(file);
        self.written = 0;
        remove_oldest(&self.dir, &self.stem, limits().files);
        Ok(())
    }
}

impl Write for LogFiles {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.at_line_start && self.written >= limits().file_bytes {
            // On failure the full file goes on taking lines: better than losing them.
            let _ = self.start_file();
        }
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no log file"))?;
        file.write_all(buf)?;
        self.written += buf.len() as u64;
        if let Some(&last) = buf.last() {
            self.at_line_start = last == b'\n';
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Removes the oldest log files of `stem` in `dir` until `keep` are left.
fn remove_oldest(dir: &Path, stem: &str, keep: u64) {
    let prefix = format!("{stem}_");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(&prefix) && name.ends_with(".log")
        })
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some((meta.modified().ok()?, e.path()))
        })
        .collect();
    files.sort();
    let extra = files
        .len()
        .saturating_sub(usize::try_from(keep).unwrap_or(usize::MAX));
    for (_, path) in files.into_iter().take(extra) {
        let _ = std::fs::remove_file(path);
    }
}

/// Installs the logger; a log file that cannot be created only costs the file output.
pub fn init(logger: Logger<'_>) {
    let mut dispatch = fern::Dispatch::new()
        .format(|out, message, record| {
            out.finish(format_args!(
                "[{}][{}][{}]: {}",
                chrono::Local::now().format("%Y-%m-%d %H:%M:%S"),
                record.level(),
                record.target(),
                Capped(message)
            ))
        })
        .level(logger.level);
    for &(target, level) in logger.levels {
        dispatch = dispatch.level_for(target, level);
    }
    dispatch = dispatch.chain(output(std::io::stdout()));
    let dir = logger.dir;
    let mut files = LogFiles {
        dir: dir.to_path_buf(),
        stem: logger.file_stem.to_string(),
        file: None,
        written: 0,
        at_line_start: true,
    };
    match std::fs::create_dir_all(dir).and_then(|()| files.start_file()) {
        // A line reaches the files in one write (fern writes a record in pieces).
        Ok(()) => dispatch = dispatch.chain(output(std::io::LineWriter::new(files))),
        Err(e) => eprintln!("Cannot create a log file in {}: {e}", dir.display()),
    }
    if let Err(e) = dispatch.apply() {
        eprintln!("Cannot install the logger: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_full_file_gives_way_to_a_new_one_and_the_oldest_go() {
        let dir = tempfile::tempdir().unwrap();
        // Another program's file in the same folder is never removed.
        std::fs::write(dir.path().join("other-stem_1.log"), "x").unwrap();
        set_limits(LogLimits {
            file_bytes: 100,
            files: 3,
        });
        let mut files = LogFiles {
            dir: dir.path().to_path_buf(),
            stem: "prog".into(),
            file: None,
            written: 0,
            at_line_start: true,
        };
        files.start_file().unwrap();
        let line = [b'a'; 39];
        for _ in 0..39 {
            // A line in two writes is never split across files.
            files.write_all(&line).unwrap();
            files.write_all(b"\n").unwrap();
        }
        let names = names(dir.path());
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names.contains(&"other-stem_1.log".to_string()));
        for name in names.iter().filter(|n| n.starts_with("prog_")) {
            let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
            assert_eq!(text.len(), 120, "{name}: three lines a file");
            assert!(text.lines().all(|l| l.len() == 39));
        }
        set_limits(LogLimits::default());
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_LINE_BYTES);
        // 5 bytes, then 2-byte characters: the budget ends inside one.
        let text = format!("{}", Capped(&format_args!("start{long}")));
        let (kept, note) = text.split_at(text.find(" [").unwrap());
        assert_eq!(kept.len(), MAX_LINE_BYTES - 1);
        let cut = 5 + long.len() - kept.len();
        assert_eq!(note, format!(" [{cut} more bytes not logged]"));
        assert_eq!(
            format!("{}", Capped(&format_args!("short {}", 1))),
            "short 1"
        );
    }
}
