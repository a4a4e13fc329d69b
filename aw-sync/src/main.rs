//! The `aw-sync` command: the reference aw-sync's command line over this
//! crate's [`Syncer`], against a running server over HTTP.
//!
//! Exit status: 0 done; 2 bad arguments; 1 an error (server unreachable, bad paths or
//! config, another aw-sync running, or a one-shot `sync` with a peer or bucket that
//! failed; the error is on stderr). The daemon never exits on an error: it logs it and
//! tries again at the next interval. SIGINT and SIGTERM end it between passes.

use std::fs::File;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use aw_client_rust::blocking::AwClient;
use aw_platform::dirs;
use aw_sync::PeerFile;
use aw_sync::{parse_list, Device, HttpServer, Mode, SyncError, SyncFolder, SyncOptions, Syncer};
use chrono::{NaiveDate, TimeZone, Utc};
use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "aw-sync",
    version,
    about = "Syncs ActivityWatch data between devices through a shared folder"
)]
struct Cli {
    /// The server's host.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The server's port (default: `port` of aw-server-rust's config.toml, else 5600).
    #[arg(long)]
    port: Option<u16>,
    /// Use the testing server's port (5666) and debug logging.
    #[arg(long)]
    testing: bool,
    /// The sync folder (absolute; default $AW_SYNC_DIR, else ~/ActivityWatchSync).
    #[arg(long)]
    sync_dir: Option<PathBuf>,
    /// Debug logging (LOG_LEVEL overrides).
    #[arg(long)]
    verbose: bool,
    /// The server's API key, if it requires one.
    #[arg(long, env = "AW_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Sync now and then every interval, until interrupted (the default).
    Daemon(DaemonArgs),
    /// Sync once.
    Sync(SyncArgs),
    /// List the buckets of the server, of this device's file and of every other device's.
    List,
}

#[derive(Args, Debug, Default)]
struct PassArgs {
    /// Where a first sync of a bucket starts (YYYY-MM-DD, UTC midnight).
    #[arg(long)]
    start_date: Option<String>,
    /// Only these buckets (comma-separated ids; `*` = all).
    #[arg(long)]
    buckets: Option<String>,
    /// push, pull or both.
    #[arg(long, default_value = "both")]
    mode: String,
    /// Only pull other devices' files under this path (absolute, inside the sync folder).
    #[arg(long)]
    sync_db: Option<PathBuf>,
}

#[derive(Args, Debug, Default)]
struct DaemonArgs {
    #[command(flatten)]
    pass: PassArgs,
    /// Seconds between passes.
    #[arg(long, default_value_t = 300)]
    interval: u64,
}

#[derive(Args, Debug, Default)]
struct SyncArgs {
    #[command(flatten)]
    pass: PassArgs,
    /// Only pull data recorded on these hosts (comma-separated).
    #[arg(long)]
    host: Option<String>,
}

/// Set by SIGINT/SIGTERM: the daemon stops between pages of the pass in progress, with
/// its files closed (the reference was killed mid-write by SIGTERM, COMPATIBILITY.md, sync #13).
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn stop_flag() -> &'static Arc<AtomicBool> {
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

fn stopping() -> bool {
    stop_flag().load(Ordering::SeqCst)
}

/// The write end of the pipe the signal handler wakes the daemon's wait with (-1: none).
static WAKE_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

extern "C" fn on_signal(_: libc::c_int) {
    // Initialised before the handler is installed: only an atomic store and a write to a
    // pipe happen here (both async-signal-safe).
    if let Some(stop) = STOP.get() {
        stop.store(true, Ordering::SeqCst);
    }
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: writes one byte from a valid buffer to a pipe this process owns.
        unsafe {
            libc::write(fd, [1u8].as_ptr().cast(), 1);
        }
    }
}

/// Waits `interval`, or until a stop signal arrives (woken through a self-pipe, no polling).
fn wait_for_stop(wake: libc::c_int, interval: Duration) {
    let until = Instant::now() + interval;
    while !stopping() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let mut fd = libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fd` is one valid pollfd; a signal may end the wait early (EINTR).
        unsafe {
            libc::poll(&mut fd, 1, ms.max(1));
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    setup_logging(&cli);
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            log::error!("{e}");
            eprintln!("Error: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, SyncError> {
    let root = sync_root(&cli)?;
    let port = match cli.port {
        Some(p) => p,
        None => configured_port(cli.testing)?,
    };
    let client = AwClient::builder(&cli.host, port, "aw-sync")
        .api_key(cli.api_key.clone())
        .build_blocking()?;
    let _lock = lock(&cli.host, port)?;
    let folder = SyncFolder::new(&root);
    match cli.command {
        Some(Command::List) => list(&client, &folder),
        Some(Command::Sync(args)) => {
            let mut options = pass_options(&folder, &args.pass)?;
            options.hosts = args.host.as_deref().and_then(parse_list);
            let mut syncer = Syncer::new(options, device(&client)?);
            let report = syncer.pass(&HttpServer::new(&client))?;
            log_report(&report);
            Ok(if report.errors.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Some(Command::Daemon(args)) => {
            daemon(&client, pass_options(&folder, &args.pass)?, args.interval)
        }
        None => daemon(&client, pass_options(&folder, &PassArgs::default())?, 300),
    }
}

fn daemon(client: &AwClient, options: SyncOptions, interval: u64) -> Result<ExitCode, SyncError> {
    let stop = stop_flag().clone();
    let mut pipe = [-1 as libc::c_int; 2];
    // SAFETY: `pipe` is a valid array of two file descriptors; the handler only stores to
    // an atomic and writes to this pipe, which are async-signal-safe.
    unsafe {
        if libc::pipe(pipe.as_mut_ptr()) == 0 {
            WAKE_FD.store(pipe[1], Ordering::SeqCst);
        }
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut syncer: Option<Syncer> = None;
    log::info!(
        "Syncing {} every {interval} s",
        options.folder.root().display()
    );
    while !stopping() {
        if syncer.is_none() {
            match device(client) {
                Ok(me) => {
                    syncer = Some(Syncer::new(options.clone(), me).with_stop_flag(stop.clone()))
                }
                Err(e) => log::warn!("Server not reachable, retrying in {interval} s: {e}"),
            }
        }
        if let Some(s) = syncer.as_mut() {
            match s.pass(&HttpServer::new(client)) {
                Ok(report) => log_report(&report),
                Err(SyncError::Stopped) => break,
                Err(e) => log::warn!("Sync pass failed, retrying in {interval} s: {e}"),
            }
        }
        wait_for_stop(pipe[0], Duration::from_secs(interval));
    }
    log::info!("Stopped");
    Ok(ExitCode::SUCCESS)
}

fn device(client: &AwClient) -> Result<Device, SyncError> {
    let info = client.get_info()?;
    Ok(Device {
        device_id: info.device_id,
        hostname: aw_platform::hostname(),
    })
}

/// The process's peak resident memory in MiB (`VmHWM`, Linux only): logged after each
/// pass at debug level, so a user or a test can see that a pass's memory stays bounded.
fn peak_memory_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

fn log_report(report: &aw_sync::PassReport) {
    if let Some(mib) = peak_memory_mib() {
        log::debug!("Peak memory so far: {mib} MiB");
    }
    log::info!(
        "Pulled {} events from {} devices, pushed {} events{}",
        report.pulled_events,
        report
            .peers
            .iter()
            .map(|p| &p.device_id)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        report.pushed_events,
        if report.errors.is_empty() {
            String::new()
        } else {
            format!(
                "; {} failed: {}",
                report.errors.len(),
                report.errors.join("; ")
            )
        }
    );
    let applied = report
        .peers
        .iter()
        .fold(aw_sync::DayChanges::default(), |mut sum, p| {
            sum.replaced_days += p.days.replaced_days;
            sum.events_read += p.days.events_read;
            sum.replaced_events += p.days.replaced_events;
            sum.deleted_events += p.days.deleted_events;
            sum
        });
    log::info!(
        "By days: pushed {} days ({} events read), applied {} days ({} events read), replaced {} events, deleted {}",
        report.pushed_days,
        report.pushed_days_events,
        applied.replaced_days,
        applied.events_read,
        applied.replaced_events,
        applied.deleted_events
    );
}

fn pass_options(folder: &SyncFolder, args: &PassArgs) -> Result<SyncOptions, SyncError> {
    let mut options = SyncOptions::new(folder.clone(), work_dir());
    options.mode = args.mode.parse::<Mode>().map_err(SyncError::Config)?;
    options.buckets = args.buckets.as_deref().and_then(parse_list);
    if let Some(text) = &args.start_date {
        let date = NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map_err(|e| SyncError::Config(format!("--start-date '{text}': {e}")))?;
        options.start_date = date.and_hms_opt(0, 0, 0).map(|t| Utc.from_utc_datetime(&t));
    }
    if let Some(db) = &args.sync_db {
        if !db.is_absolute() || !db.starts_with(folder.root()) {
            return Err(SyncError::Config(format!(
                "--sync-db '{}' must be an absolute path inside the sync folder '{}'",
                db.display(),
                folder.root().display()
            )));
        }
        options.peers_under = Some(db.clone());
    }
    Ok(options)
}

fn list(client: &AwClient, folder: &SyncFolder) -> Result<ExitCode, SyncError> {
    let me = device(client)?;
    log::info!("Server ({}):", me.device_id);
    let mut buckets: Vec<_> = client.get_buckets()?.into_keys().collect();
    buckets.sort();
    for id in buckets {
        log::info!("  {id}: {} events", client.get_event_count(&id)?);
    }
    let mut files = vec![(folder.own_file(&me.device_id), "this device".to_string())];
    for peer in folder.peers(&me.device_id)? {
        files.push((peer.path, format!("device {}", peer.device_id)));
    }
    for (path, whose) in files {
        log::info!("{} ({whose}):", path.display());
        if !path.exists() {
            log::info!("  not written yet");
            continue;
        }
        match PeerFile::open(&path, false).and_then(|f| {
            f.buckets()?
                .into_iter()
                .map(|b| Ok((b.bucket.id, f.count(b.row)?)))
                .collect::<Result<Vec<_>, SyncError>>()
        }) {
            Ok(list) => list
                .into_iter()
                .for_each(|(id, n)| log::info!("  {id}: {n} events")),
            Err(e) => log::warn!("  unreadable: {e}"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The sync folder: `--sync-dir` (absolute), else `$AW_SYNC_DIR`, else ~/ActivityWatchSync.
fn sync_root(cli: &Cli) -> Result<PathBuf, SyncError> {
    if let Some(dir) = &cli.sync_dir {
        if !dir.is_absolute() {
            return Err(SyncError::Config(format!(
                "--sync-dir '{}' is not an absolute path",
                dir.display()
            )));
        }
        return Ok(dir.clone());
    }
    Ok(std::env::var_os("AW_SYNC_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::home().join("ActivityWatchSync")))
}

/// Where the working copy of this device's file and the resume points live.
fn work_dir() -> PathBuf {
    dirs::app_dir(dirs::data_root(), "aw-sync")
}

/// The port in aw-server-rust's config file: a top-level integer `port`, else the default.
fn configured_port(testing: bool) -> Result<u16, SyncError> {
    let (name, default) = if testing {
        ("config-testing.toml", aw_models::TESTING_PORT)
    } else {
        ("config.toml", aw_models::DEFAULT_PORT)
    };
    let path = dirs::app_dir(dirs::config_root(), dirs::SERVER).join(name);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(default);
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e| SyncError::Config(format!("{}: {e}", path.display())))?;
    Ok(match table.get("port") {
        Some(toml::Value::Integer(p)) => *p as u16,
        _ => default,
    })
}

/// One aw-sync per server: the lock is held while the returned file is open.
fn lock(host: &str, port: u16) -> Result<File, SyncError> {
    let dir = dirs::app_dir(dirs::cache_root(), "client_locks");
    std::fs::create_dir_all(&dir).map_err(SyncError::io("cannot create", &dir))?;
    let path = dir.join(format!("aw-sync-at-{host}-on-{port}"));
    let file = File::create(&path).map_err(SyncError::io("cannot create", &path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(SyncError::AlreadyRunning(path)),
        Err(std::fs::TryLockError::Error(e)) => Err(SyncError::io("cannot lock", path)(e)),
    }
}

/// Logs aw-sync's own lines at the chosen level (others at warnings) to stdout and to a new
/// file per start in the platform's log folder (`aw_platform::dirs::log_dir`).
fn setup_logging(cli: &Cli) {
    use aw_platform::logging::{self, Logger};
    logging::init(Logger {
        level: log::LevelFilter::Warn,
        levels: &[("aw_sync", logging::level(cli.testing, cli.verbose))],
        dir: &dirs::log_dir("aw-sync"),
        file_stem: if cli.testing {
            "aw-sync-testing"
        } else {
            "aw-sync"
        },
    });
}
