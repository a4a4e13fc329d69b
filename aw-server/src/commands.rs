//! `aw-server backup`, `restore`, `salvage` and `compact`: what a user runs by hand.
//!
//! `backup` asks the running server (found beside the database, `instance.rs`) with
//! `POST /api/0/backups`, so the copy is taken through its backup connection and listed by
//! it; with no server running it takes the backup itself. `restore` needs the server
//! stopped (it holds the database's lock while it works), copies the backup through SQLite
//! (with what its WAL holds) and checks the copy as a backup is checked when written, keeps
//! the current file (and its WAL) aside under a dated name — never deleting it — and puts
//! the copy in its place.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use aw_datastore::{BackupSource, DatabaseFile, DbPassword};

use crate::backups::{self, BackupConfig};
use crate::cli::Cli;
use crate::config::Config;
use crate::instance;

/// The database, the config and the backup folder the command works on.
fn context(cli: &Cli) -> Result<(PathBuf, Config, PathBuf), String> {
    let config_path = crate::cli::config_path(cli);
    let config = Config::load(&config_path, cli.testing)?;
    let db = crate::cli::db_path(cli);
    let folder = backups::folder_of(&config.backup, &db);
    Ok((db, config, folder))
}

/// [`context`] for a command that needs the database to exist.
fn existing_context(cli: &Cli) -> Result<(PathBuf, Config, PathBuf), String> {
    let context = context(cli)?;
    if !context.0.exists() {
        return Err(format!("There is no database at {}", context.0.display()));
    }
    Ok(context)
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    log::error!("{message}");
    ExitCode::FAILURE
}

/// `aw-server backup`.
pub(crate) fn backup(cli: &Cli, password: Option<DbPassword>) -> ExitCode {
    let (db, config, folder) = match existing_context(cli) {
        Ok(context) => context,
        Err(e) => return fail(e),
    };
    match instance::running(&db) {
        Some((_, Some(server))) => {
            log::info!(
                "Asking the running server (pid {}, port {}) for a backup",
                server.pid,
                server.port
            );
            match ask_server(&server, config.auth.api_key.as_deref()) {
                Ok(text) => {
                    println!("{text}");
                    ExitCode::SUCCESS
                }
                Err(e) => fail(format!("The running server could not take a backup: {e}")),
            }
        }
        Some((pid, None)) => fail(format!(
            "Process {pid} holds {} but did not say where it listens; stop it, or ask it \
             with POST /api/0/backups",
            db.display()
        )),
        None => match take_directly(&db, password.as_ref(), &folder, &config.backup) {
            Ok(entry) => {
                println!("{}", serde_json::to_string(&entry).unwrap_or_default());
                ExitCode::SUCCESS
            }
            Err(e) => fail(format!("Backup failed: {e}")),
        },
    }
}

fn take_directly(
    db: &Path,
    password: Option<&DbPassword>,
    folder: &Path,
    config: &BackupConfig,
) -> Result<backups::BackupEntry, String> {
    // The database's owner for the length of the backup: no server starts on it (and
    // restores or salvages nothing) meanwhile, and the acknowledged writes a killed
    // server left in its journal are applied first, so the backup holds them too.
    let file = match DatabaseFile::claim(db) {
        Ok(file) => Some(file),
        // A server holds it that `instance::running` could not see (it reads `/proc`) or
        // that started meanwhile: a copy through SQLite is still consistent, of what it
        // committed.
        Err(aw_datastore::DatastoreError::Locked(_)) => {
            log::warn!(
                "A server holds {}: backing up what it has committed",
                db.display()
            );
            None
        }
        Err(e) => return Err(e.to_string()),
    };
    if let Some(Err(e)) = file.as_ref().map(|f| f.apply_held_writes(password)) {
        log::warn!(
            "The journal's held writes could not be applied first ({e}); backing up the file as it is"
        );
    }
    let source = BackupSource::open(db, password).map_err(|e| e.to_string())?;
    let entry = backups::take_backup(&source, folder, config, aw_datastore::BackupKind::Scheduled)
        .map_err(|e| e.to_string());
    drop(source);
    drop(file);
    entry
}

/// `POST /api/0/backups` to the running server (hyper's HTTP/1 client, on a runtime of its
/// own for this one request); its JSON answer.
fn ask_server(server: &instance::Announcement, api_key: Option<&str>) -> Result<String, String> {
    // A server bound to every address is asked on loopback.
    let host = match server.address.as_str() {
        "0.0.0.0" | "::" | "localhost" => "127.0.0.1",
        other => other,
    };
    let address = if host.contains(':') {
        format!("[{host}]:{}", server.port)
    } else {
        format!("{host}:{}", server.port)
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (status, body) = runtime
        .block_on(post_empty(&address, "/api/0/backups", api_key))
        .map_err(|e| format!("{address}: {e}"))?;
    if status == hyper::StatusCode::OK {
        Ok(body)
    } else {
        Err(format!("HTTP {}: {body}", status.as_u16()))
    }
}

/// A POST without a body to `path` at `address`: the answer's status and text.
async fn post_empty(
    address: &str,
    path: &str,
    api_key: Option<&str>,
) -> Result<(hyper::StatusCode, String), Box<dyn std::error::Error + Send + Sync>> {
    use http_body_util::BodyExt;
    let stream = tokio::net::TcpStream::connect(address).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    // Drives the connection while the request is sent and answered.
    let connection = tokio::spawn(connection);
    let mut request = hyper::Request::post(path)
        .header(hyper::header::HOST, address)
        .header(hyper::header::CONTENT_LENGTH, 0);
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let response = sender
        .send_request(request.body(http_body_util::Empty::<bytes::Bytes>::new())?)
        .await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    connection.abort();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Claims the database for a command that replaces it: `Err` is the exit code (another
/// process holds it, or the lock cannot be taken, so no file may be replaced).
fn claim_for(db: &Path, what: &str) -> Result<DatabaseFile, ExitCode> {
    match DatabaseFile::claim(db) {
        Ok(file) if file.is_locked() => Ok(file),
        Ok(_) => Err(fail(format!(
            "Not going to {what}: the lock of {} cannot be taken (see the warning above), \
             so another process may have the database open. The database is unchanged.",
            db.display()
        ))),
        Err(aw_datastore::DatastoreError::Locked(_)) => {
            log::error!("{}", instance::in_use_message(db));
            Err(ExitCode::from(instance::EXIT_IN_USE))
        }
        Err(e) => Err(fail(e)),
    }
}

/// `aw-server salvage`: the server must be stopped; the report is printed as JSON.
pub(crate) fn salvage(cli: &Cli, password: Option<DbPassword>) -> ExitCode {
    let db = crate::cli::db_path(cli);
    if !db.exists() {
        return fail(format!("There is no database at {}", db.display()));
    }
    let file = match claim_for(&db, "salvage") {
        Ok(file) => file,
        Err(code) => return code,
    };
    match file.salvage(password.as_ref()) {
        Ok((report, _)) => {
            println!("{}", serde_json::to_string(&report).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("Salvage failed: {e}; the database is unchanged")),
    }
}

/// `aw-server compact`: the server must be stopped; a verified backup first, then the file
/// rewritten (`DatabaseFile::compact`); the report is printed as JSON.
pub(crate) fn compact(cli: &Cli, password: Option<DbPassword>) -> ExitCode {
    let (db, config, folder) = match existing_context(cli) {
        Ok(context) => context,
        Err(e) => return fail(e),
    };
    let file = match claim_for(&db, "compact") {
        Ok(file) => file,
        Err(code) => return code,
    };
    if let Err(e) = file.apply_held_writes(password.as_ref()) {
        return fail(format!("Not compacting: the journal's held writes could not be applied ({e}). The database is unchanged."));
    }
    let backup = BackupSource::open(&db, password.as_ref())
        .map_err(|e| e.to_string())
        .and_then(|source| {
            backups::take_backup(
                &source,
                &folder,
                &config.backup,
                aw_datastore::BackupKind::BeforeRewrite,
            )
            .map_err(|e| e.to_string())
        });
    if let Err(e) = backup {
        return fail(format!(
            "Not compacting: the backup before it failed: {e}. The database is unchanged."
        ));
    }
    match file.compact(password.as_ref()) {
        Ok(report) => {
            println!("{}", serde_json::to_string(&report).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!("Compacting failed: {e}; the database is as it was")),
    }
}

/// `aw-server restore [BACKUP]`.
pub(crate) fn restore(cli: &Cli, password: Option<DbPassword>, chosen: Option<&Path>) -> ExitCode {
    let (db, _, folder) = match context(cli) {
        Ok(context) => context,
        Err(e) => return fail(e),
    };
    // Held until the new file is in place: no server may open the database meanwhile.
    let file = match claim_for(&db, "restore") {
        Ok(file) => file,
        Err(code) => return code,
    };
    let backup = match chosen {
        Some(path) if path.components().count() == 1 && !path.exists() => folder.join(path),
        Some(path) => path.to_path_buf(),
        None => match backups::list(&folder, &db)
            .into_iter()
            .find(|b| b.kind == "scheduled")
        {
            Some(newest) => folder.join(newest.file),
            None => return fail(format!("There is no backup in {}", folder.display())),
        },
    };
    let restored = file.restore(&backup, password.as_ref());
    if restored.is_ok() {
        // The restored file lacks what the built-in sync pulled since the backup: its
        // pulls start again from each bucket's newest event.
        if let Err(e) = aw_sync::forget_pull_positions(&crate::builtin_sync::work_dir(&db)) {
            log::warn!("Cannot forget where the sync's pulls stopped: {e}");
        }
    }
    match restored {
        Ok(Some(aside)) => {
            log::info!(
                "Restored {} from {}; the file it replaced is kept at {}",
                db.display(),
                backup.display(),
                aside.display()
            );
            ExitCode::SUCCESS
        }
        Ok(None) => {
            log::info!("Restored {} from {}", db.display(), backup.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(format!(
            "Not restoring from {}: {e}. The database is unchanged.",
            backup.display()
        )),
    }
}
