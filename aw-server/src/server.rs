//! Startup: resolve settings from flags and config, open the datastore, build and run Rocket,
//! and commit everything before the process exits.

use aw_datastore::{DatabaseFile, Datastore, OpenOptions};
use aw_models::Info;
use rocket::config::LogLevel;
use rocket::data::{Limits, ToByteUnit};
use rocket::fairing::AdHoc;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use crate::allocator::ReturnMemory;
use crate::builtin_sync::BackgroundSync;
use crate::cli::{parse_custom_static, Cli};
use crate::config::Config;
use crate::endpoints;
use crate::endpoints::webui::StaticFiles;
use crate::normalize::NormalizePath;
use crate::security::{self, Security};
use crate::shutdown::{InFlight, SignalSlot, StopSignals};
use crate::state::AppState;
use crate::{catchers, device_id, dirs};

/// Everything the server needs to start, resolved from flags, config and defaults.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Testing mode.
    pub testing: bool,
    /// Bind address as configured (the Host check depends on its exact text).
    pub address: String,
    /// Parsed bind address.
    pub ip: IpAddr,
    /// Port.
    pub port: u16,
    /// The config file in use.
    pub config_path: PathBuf,
    /// The database file.
    pub db_path: PathBuf,
    /// The database password (encryption builds only).
    pub password: Option<aw_datastore::DbPassword>,
    /// The Python database to import on first start, if enabled.
    pub legacy_import: Option<PathBuf>,
    /// The device id.
    pub device_id: String,
    /// Web UI directory.
    pub webpath: Option<PathBuf>,
    /// Custom static directories that exist.
    pub custom_static: BTreeMap<String, PathBuf>,
    /// The parsed config file.
    pub config: Config,
}

impl Settings {
    /// Resolves settings; the error is a message for the user (startup aborts). The
    /// password, taken out of the command line, moves on to the datastore.
    pub(crate) fn resolve(
        cli: &Cli,
        password: Option<aw_datastore::DbPassword>,
    ) -> Result<Settings, String> {
        let config_path = crate::cli::config_path(cli);
        let config = Config::load(&config_path, cli.testing)?;
        aw_platform::logging::set_limits(config.log.limits());
        let address = cli.host.clone().unwrap_or_else(|| config.address.clone());
        let ip = if address == "localhost" {
            IpAddr::from([127, 0, 0, 1])
        } else {
            address.parse().map_err(|_| {
                format!("address '{address}' is not an IP address (use e.g. 127.0.0.1)")
            })?
        };
        let port = cli.port.unwrap_or(config.port);

        let mut custom_static = config.custom_static.clone();
        if let Some(text) = &cli.custom_static {
            custom_static.extend(parse_custom_static(text)?);
        }
        let mut existing = BTreeMap::new();
        for (name, dir) in custom_static {
            if dir.is_dir() {
                existing.insert(name, dir);
            } else if cli.custom_static.is_none() {
                return Err(format!(
                    "custom_static '{name}': directory {} does not exist",
                    dir.display()
                ));
            } else {
                log::error!(
                    "custom_static '{name}': directory {} does not exist; not served",
                    dir.display()
                );
            }
        }

        let data_dir = dirs::data_dir();
        let db_path = crate::cli::db_path(cli);
        if let Some(parent) = db_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let legacy_import =
            (!cli.no_legacy_import && cli.dbpath.is_none()).then(dirs::legacy_db_path);
        let device_id = match &cli.device_id {
            Some(id) => id.clone(),
            None => device_id::load_or_create(&data_dir.join("device_id")).map_err(|e| {
                format!(
                    "cannot read or create the device id in {}: {e}",
                    data_dir.display()
                )
            })?,
        };
        Ok(Settings {
            testing: cli.testing,
            address,
            ip,
            port,
            config_path,
            db_path,
            password,
            legacy_import,
            device_id,
            webpath: cli.webpath.clone(),
            custom_static: existing,
            config,
        })
    }
}

/// How Rocket stops: signals are handled by `shutdown.rs`, which waits for requests in
/// flight itself; then idle keep-alive connections are closed at once (Rocket's default
/// grace period kept every stop waiting two seconds for a watcher's idle connection).
fn shutdown_config() -> rocket::config::Shutdown {
    rocket::config::Shutdown {
        ctrlc: false,
        signals: Default::default(),
        grace: 0,
        mercy: 0,
        ..rocket::config::Shutdown::default()
    }
}

/// Builds the Rocket instance: routes, catchers, fairings and state. The handlers put in
/// `signals` stop it.
pub(crate) fn build(
    settings: &Settings,
    datastore: Datastore,
    signals: SignalSlot,
) -> Result<rocket::Rocket<rocket::Build>, String> {
    let security = security_of(settings)?;
    let config = rocket_config(settings);
    let info = Info {
        hostname: aw_platform::hostname(),
        version: format!("v{} (rust)", env!("CARGO_PKG_VERSION")),
        testing: settings.testing,
        device_id: settings.device_id.clone(),
    };
    let work_dir = crate::builtin_sync::work_dir(&settings.db_path);
    let backups = std::sync::Arc::new(crate::backups::Backups::new(
        &settings.config.backup,
        &settings.db_path,
    ));
    let sync = std::sync::Arc::new(BackgroundSync::configure(
        &settings.config.sync,
        &settings.device_id,
        work_dir,
    )?);
    let startup = on_liftoff(settings);
    let in_flight = InFlight::new(signals);
    let requests_in_flight = in_flight.counter();
    Ok(rocket::custom(config)
        // Security sees the path as sent: `/api/0/info/` is not the exempt `/api/0/info`.
        .attach(security)
        .attach(NormalizePath)
        .attach(in_flight)
        .attach(ReturnMemory::default())
        .attach(startup)
        .manage(AppState {
            query_cache: crate::query_source::attach_cache(
                &datastore,
                settings.config.query_cache_bytes,
            ),
            cache_restore: std::sync::Mutex::new(None),
            period_fill: std::sync::Arc::new(crate::period_fill::PeriodFill::new()),
            datastore,
            info,
            query_timeout: settings.config.query_budget(),
            sync,
            backups,
            storage: std::sync::Arc::default(),
            requests_in_flight,
            db_path: settings.db_path.clone(),
            rewrites: std::sync::Arc::new(rocket::tokio::sync::Mutex::new(())),
        })
        .manage(StaticFiles {
            webpath: settings.webpath.clone(),
            custom: settings.custom_static.clone(),
        })
        .mount("/", endpoints::api_routes())
        .mount("/", endpoints::webui::routes())
        .mount(
            "/",
            rocket::routes![security::rejected, security::preflight],
        )
        .register("/", rocket::catchers![catchers::default]))
}

/// The security fairing for the configured address, CORS origins and API key, with a
/// warning for each protection the settings turn off.
fn security_of(settings: &Settings) -> Result<Security, String> {
    let security = Security::new(
        &settings.address,
        settings.port,
        settings.testing,
        &settings.config.cors,
        &settings.config.cors_regex,
        settings.config.auth.api_key.clone(),
    )?;
    if security.authorization.is_none() && settings.config.auth.api_key.is_some() {
        log::warn!("[auth] api_key is empty: API key authentication is disabled");
    }
    if !security.check_host {
        log::warn!(
            "Bound to {}: the Host header check (DNS rebinding protection) is off",
            settings.address
        );
    }
    Ok(security)
}

/// Rocket's own settings: the address, body limits as large as the reference's (imports
/// of years of events), and a stop that leaves signals and draining to `shutdown.rs`.
fn rocket_config(settings: &Settings) -> rocket::Config {
    let limits = Limits::default()
        .limit("json", 1000.mebibytes())
        .limit("data-form", 1000.mebibytes())
        .limit("form", 1000.mebibytes())
        .limit("string", 1000.mebibytes())
        .limit("bytes", 1000.mebibytes());
    rocket::Config {
        address: settings.ip,
        port: settings.port,
        limits,
        keep_alive: 5,
        shutdown: shutdown_config(),
        log_level: LogLevel::Off,
        cli_colors: false,
        ..rocket::Config::default()
    }
}

/// What happens once the server listens: the kept query results are read back, the
/// instance is announced (with the bound port), the start is logged and systemd told.
fn on_liftoff(settings: &Settings) -> AdHoc {
    let address = settings.address.clone();
    let db_path = settings.db_path.clone();
    let details = format!(
        "(database {}, config {}, web UI {})",
        settings.db_path.display(),
        settings.config_path.display(),
        settings
            .webpath
            .as_ref()
            .map_or("built-in dashboard".to_string(), |p| p
                .display()
                .to_string()),
    );
    AdHoc::on_liftoff("startup", move |rocket| {
        // The bound port (which differs from the configured one with `--port 0`).
        let port = rocket.config().port;
        // The results the last run kept are read back once the server listens, so
        // the start does not wait for them (`query_source::restore_cache`).
        if let Some(state) = rocket.state::<AppState>() {
            let ticket = state
                .cache_restore
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            if let Some(ticket) = ticket {
                crate::query_source::restore_cache(&state.datastore, ticket);
            }
        }
        Box::pin(async move {
            crate::instance::announce(&db_path, &address, port);
            crate::startup::mark("listener");
            log::info!("aw-server listening on http://{address}:{port}/ {details}");
            if let Some(phases) = crate::startup::summary() {
                log::info!("{phases}");
            }
            notify_systemd();
        })
    })
}

/// Tells systemd (`Type=notify`) that the server is ready, when started by it.
fn notify_systemd() {
    #[cfg(unix)]
    if let Some(path) = std::env::var_os("NOTIFY_SOCKET") {
        if let Ok(socket) = std::os::unix::net::UnixDatagram::unbound() {
            let _ = socket.send_to(b"READY=1", path);
        }
    }
}

/// Whether a launch error only says that some connection was still being torn down when
/// the server stopped. Requests in flight were already drained (`shutdown.rs`); what is
/// left is a connection just accepted or closing (Rocket then gives up at once, with no
/// grace period configured). The stop itself worked, and the final commit follows, so it
/// is not a failed exit, which would mark a routine stop failed in systemd. Logged, since
/// an I/O error during the stop is worth knowing.
fn ended_after_a_stop(error: &rocket::Error) -> bool {
    match error.kind() {
        rocket::error::ErrorKind::Shutdown(_, None) => {
            log::debug!("A connection was still closing when the server stopped");
            true
        }
        rocket::error::ErrorKind::Shutdown(_, Some(e)) => {
            log::warn!("A connection failed while the server stopped: {e}");
            true
        }
        _ => false,
    }
}

/// Why the server could not run, and the process's exit code for it.
#[derive(Debug)]
pub(crate) struct Failure {
    /// What to tell the user.
    pub message: String,
    /// 1, or [`crate::instance::EXIT_IN_USE`] when another process holds the database.
    pub exit_code: u8,
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure {
            message,
            exit_code: 1,
        }
    }
}

/// Runs the server until SIGINT/SIGTERM, then commits every pending write before returning.
pub(crate) fn run(mut settings: Settings) -> Result<(), Failure> {
    crate::startup::mark("config");
    if settings.password.is_some() && settings.config.sync.folder.is_some() {
        log::warn!(
            "[sync] copies this encrypted database's data into the sync folder (and a working \
             copy beside the database) as plain SQLite files, the reference aw-sync's format"
        );
    }
    // One async thread (this one) for every connection. Everything heavy already runs on
    // the CPU pool and every database call on the datastore's worker, so the async side
    // only parses, routes and writes: a multi-threaded runtime added nothing but hand-offs,
    // since each of its workers that woke looked for work to steal and woke another (16
    // keep-alive connections, merging heartbeats, beside the reference in the same runs:
    // 1.52-1.68x its rate at 0.53-0.60x its CPU per request with one thread, 1.35-1.42x at
    // 0.64-0.69x with two; BENCHMARKS.md).
    let runtime = rocket::tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    crate::startup::mark("runtime");
    let options = open_options(&mut settings);
    let open_failed = |e| open_failure(&settings, e);
    // The lock is taken here (a second start fails at once); the file is opened on the
    // worker while the routes are built, and nothing listens before it is open.
    let opening = DatabaseFile::claim(&settings.db_path)
        .and_then(|file| file.open_in_background(options))
        .map_err(open_failed)?;
    let signals = SignalSlot::default();
    let rocket = build(&settings, opening.handle(), signals.clone())?;
    crate::startup::mark("routes");
    let datastore = opening.wait().map_err(open_failed)?;
    crate::startup::mark("database");
    // Watched from before the sync thread or a client can write; read back once the
    // server listens (the liftoff above).
    if let Some(state) = rocket.state::<AppState>() {
        if let (Some(cache), true) = (&state.query_cache, datastore.has_derived_state()) {
            *state
                .cache_restore
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(cache.restore_ticket());
        }
    }
    // Installed before the server can say it is listening, so a SIGTERM sent the moment it
    // does is acted on, never the default kill (see `shutdown.rs`). Until here (a long
    // database open or legacy import) a signal still stops the process at once; SQLite's
    // transactions keep the file whole.
    signals.fill({
        let _runtime = runtime.enter();
        StopSignals::listen()
    });
    serve(&runtime, rocket, datastore, &settings)
}

/// How the datastore opens the file: it takes the lock before it looks at anything,
/// salvages a damaged file (a marker left by a salvage that failed while serving, or
/// damage met while opening) and applies the journal's held writes. The password moves
/// out of `settings`.
fn open_options(settings: &mut Settings) -> OpenOptions {
    OpenOptions {
        legacy_import: settings.legacy_import.clone(),
        // Moved, not copied: the datastore drops it once the file is open.
        password: settings.password.take(),
        // Backups read through a connection of their own, opened with the key.
        backup_source: true,
        // A damaged file (at start, or met while serving): salvage it, go on with the copy.
        salvage_on_damage: true,
        backup_folder: Some(crate::backups::folder_of(
            &settings.config.backup,
            &settings.db_path,
        )),
        ..OpenOptions::default()
    }
}

/// Why the database could not be opened: another server holding it has its own message
/// and exit code.
fn open_failure(settings: &Settings, e: aw_datastore::DatastoreError) -> Failure {
    match e {
        aw_datastore::DatastoreError::Locked(_) => Failure {
            message: crate::instance::in_use_message(&settings.db_path),
            exit_code: crate::instance::EXIT_IN_USE,
        },
        e => Failure::from(format!(
            "cannot open the database {}: {e}",
            settings.db_path.display()
        )),
    }
}

/// Starts the sync and backup threads, serves until a stop, stops them, and makes the
/// final commit whatever ended the server.
fn serve(
    runtime: &rocket::tokio::runtime::Runtime,
    rocket: rocket::Rocket<rocket::Build>,
    datastore: Datastore,
    settings: &Settings,
) -> Result<(), Failure> {
    let sync = rocket.state::<AppState>().map(|s| s.sync.clone());
    if let Some(sync) = &sync {
        sync.start(datastore.clone(), aw_platform::hostname());
    }
    let backups = rocket.state::<AppState>().map(|s| s.backups.clone());
    if let Some(backups) = &backups {
        backups.start(datastore.clone());
    }
    if let Some(state) = rocket.state::<AppState>() {
        state.retention().start_daily(runtime);
    }
    let fill = rocket
        .state::<AppState>()
        .and_then(|s| Some((s.period_fill.clone(), s.query_cache.clone()?)));
    if let Some((fill, cache)) = &fill {
        fill.start(datastore.clone(), cache.clone());
    }
    crate::startup::mark("background");
    let launched = match runtime.block_on(rocket.launch()) {
        Ok(_) => Ok(()),
        Err(e) if ended_after_a_stop(&e) => Ok(()),
        Err(e) => Err(format!("server error: {e}")),
    };
    // The sync thread stops between pages and closes its files while the datastore can
    // still take its last writes.
    if let Some(sync) = sync {
        sync.stop();
    }
    if let Some(backups) = backups {
        backups.stop();
    }
    if let Some((fill, _)) = fill {
        fill.stop();
    }
    // Whatever ended the server, the final commit happens before the process exits.
    let closed = datastore.close();
    crate::instance::withdraw(&settings.db_path);
    launched?;
    closed.map_err(|e| format!("final commit failed: {e}"))?;
    log::info!("Shut down; every write is committed");
    Ok(())
}

#[cfg(test)]
mod tests {
    /// What made every stop wait two seconds with a watcher connected, checked where it is
    /// set; the end-to-end test of a stop with idle connections bounds its time (1.5 s).
    #[test]
    fn rocket_neither_handles_signals_nor_waits_for_idle_connections() {
        let shutdown = super::shutdown_config();
        assert!(!shutdown.ctrlc);
        assert!(shutdown.signals.is_empty());
        assert_eq!((shutdown.grace, shutdown.mercy), (0, 0));
    }
}
