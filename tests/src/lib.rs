//! Harness for the end-to-end tests: starts the real `aw-server` binary on a free loopback
//! port with a temporary database and private XDG directories, and talks raw HTTP/1.1 to it,
//! so tests control every header and byte and see exactly what a client would. The
//! benchmarks and the soak (the `aw-bench` package) start servers through it too.

pub mod dataset;
pub mod http;
pub mod year;

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a test waits for something that takes far less on any machine (a start, a
/// stop, a background pass): only a hang reaches it, so no verdict depends on how fast or
/// busy the machine is. Tests wait for what they can observe and use this as the limit.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// `path` with `suffix` added to its file name (`sqlite.db` → `sqlite.db-wal`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// Polls `done` every 20 ms until it holds, for at most [`HANG_GUARD`]; panics with `what`
/// when it never does.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG_GUARD;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {HANG_GUARD:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub use http::{Client, Response};

/// The server binary: `AW_SERVER_BIN` (taken as given, e.g. for A/B runs of two builds),
/// else the newer of the workspace's release and debug builds, which must be newer than
/// every source file of the server: a test never silently runs a binary built from older
/// code (it fails, saying to build it first).
pub fn server_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("AW_SERVER_BIN") {
        return PathBuf::from(bin);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let (built, binary) = [
        target.join("release/aw-server"),
        target.join("debug/aw-server"),
    ]
    .into_iter()
    .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
    .max()
    .unwrap_or_else(|| {
        panic!("no aw-server binary in {target:?}: run `cargo build --release -p aw-server`")
    });
    let sources = [
        "aw-server/src",
        "aw-server/webui",
        "aw-datastore/src",
        "aw-query/src",
        "aw-models/src",
        "aw-platform/src",
        "aw-sync/src",
    ];
    if let Some((changed, file)) = sources
        .iter()
        .filter_map(|d| newest_file(&root.join(d)))
        .max()
    {
        assert!(
            changed <= built,
            "{} is older than {}: run `cargo build --release -p aw-server` first",
            binary.display(),
            file.display()
        );
    }
    binary
}

/// The most recently modified file below `dir`, with its time.
fn newest_file(dir: &Path) -> Option<(std::time::SystemTime, PathBuf)> {
    let mut newest = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let found = if path.is_dir() {
            newest_file(&path)
        } else {
            entry.metadata().ok()?.modified().ok().map(|t| (t, path))
        };
        newest = newest.max(found);
    }
    newest
}

/// What a finished command printed: its stdout, then its stderr (for messages, which either
/// may carry).
pub fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The port in the server's startup line `… listening on http://127.0.0.1:PORT/ …`.
pub fn listening_port(line: &str) -> Option<u16> {
    let rest = &line[line.find("listening on http://")? + "listening on http://".len()..];
    let hostport = rest.split('/').next()?;
    hostport
        .rsplit(':')
        .next()?
        .parse()
        .ok()
        .filter(|&p| p != 0)
}

/// A free TCP port on 127.0.0.1 (for tests that must pass a port themselves).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

/// A running server process with its own temporary directories.
pub struct TestServer {
    /// Holds the database, config, data and log directories.
    pub dir: tempfile::TempDir,
    /// The port it listens on (learned from the server; changes on restart).
    pub port: u16,
    /// Extra arguments it was started with (reused by [`TestServer::restart`]).
    pub args: Vec<String>,
    /// The database password it is started with (as `AW_DB_PASSWORD`): by default
    /// `AW_TEST_DB_PASSWORD`, so the whole suite can run on encrypted databases against an
    /// `encryption` build.
    pub password: Option<String>,
    /// The binary it runs: [`server_binary`] unless started with [`TestServer::start_binary`]
    /// (another build, or the reference server, for same-run comparisons).
    pub binary: Option<PathBuf>,
    child: Option<Child>,
}

/// The switch that turns a missing prerequisite into a failure: `scripts/test-all.sh` (the
/// test command, and so CI) sets it, so no test there passes without running.
pub const REQUIRE_PREREQUISITES: &str = "AW_REQUIRE_PREREQUISITES";

/// Called by a test whose prerequisite (root to mount a tmpfs, a C compiler, Syncthing…) is
/// missing, before it returns without running: under [`REQUIRE_PREREQUISITES`]`=1` it fails
/// with `reason`; elsewhere (a developer's `cargo test`) it says the test was skipped.
pub fn prerequisite_missing(reason: &str) {
    let required = std::env::var_os(REQUIRE_PREREQUISITES).is_some_and(|v| v == "1");
    assert!(
        !required,
        "{REQUIRE_PREREQUISITES}=1 and a prerequisite is missing: {reason}"
    );
    eprintln!("SKIPPED: {reason}");
}

impl TestServer {
    /// Starts a server on a fresh database.
    pub fn start() -> TestServer {
        TestServer::start_with(&[])
    }

    /// Starts a server on a fresh database with `config` as its config file (TOML text).
    pub fn start_with_config(config: &str) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("test-config.toml");
        std::fs::write(&path, config).expect("cannot write the config file");
        let path = path.to_string_lossy().into_owned();
        TestServer::start_in(dir, &["--config", &path])
    }

    /// Starts a server on a fresh database with extra flags.
    pub fn start_with(args: &[&str]) -> TestServer {
        TestServer::start_in(tempfile::tempdir().expect("tempdir"), args)
    }

    /// Starts a server on a fresh database with this password (`None`: a plain database),
    /// whatever `AW_TEST_DB_PASSWORD` says.
    pub fn start_with_password(password: Option<&str>) -> TestServer {
        TestServer::start_as(
            tempfile::tempdir().expect("tempdir"),
            &[],
            password.map(str::to_string),
        )
    }

    /// Starts a server with extra flags, its database and XDG directories in `dir` (a
    /// directory the test prepared, e.g. a small file system mounted there).
    pub fn start_in(dir: tempfile::TempDir, args: &[&str]) -> TestServer {
        let password = std::env::var("AW_TEST_DB_PASSWORD").ok();
        assert!(
            password.is_some() || !cfg!(feature = "encrypted"),
            "the encrypted variant of the suite needs AW_TEST_DB_PASSWORD (scripts/test-all.sh)"
        );
        TestServer::start_as(dir, args, password)
    }

    fn start_as(dir: tempfile::TempDir, args: &[&str], password: Option<String>) -> TestServer {
        let mut server = TestServer {
            dir,
            port: 0,
            args: args.iter().map(|s| s.to_string()).collect(),
            password,
            binary: None,
            child: None,
        };
        server.spawn();
        server
    }

    /// Starts `binary` (any aw-server with the reference's `--port` and `--dbpath` flags,
    /// such as the reference server itself) on a fresh database and a free port, and returns
    /// once `GET /api/0/info` answers 200: it needs no startup line of ours.
    pub fn start_binary(binary: &Path) -> TestServer {
        let mut server = TestServer {
            dir: tempfile::tempdir().expect("tempdir"),
            port: 0,
            args: Vec::new(),
            password: None,
            binary: Some(binary.to_path_buf()),
            child: None,
        };
        server.spawn();
        server
    }

    /// The database file.
    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("sqlite.db")
    }

    /// The default config file location for this server's XDG config dir.
    pub fn config_path(&self) -> PathBuf {
        self.dir
            .path()
            .join("config/activitywatch/aw-server-rust/config.toml")
    }

    /// A command for the binary with this server's directories in its environment.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(self.binary.clone().unwrap_or_else(server_binary));
        cmd.env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .env_remove("LOG_LEVEL")
            .env_remove("AW_DB_PASSWORD");
        if let Some(password) = &self.password {
            cmd.env("AW_DB_PASSWORD", password);
        }
        cmd
    }

    /// Starts the binary with `--port 0` (unless the arguments name a port) and learns the
    /// port it bound from its startup log line, so parallel tests can never race for a port
    /// or talk to another test's server.
    fn spawn(&mut self) {
        if self.binary.is_some() {
            self.spawn_and_poll();
            return;
        }
        let mut cmd = self.command();
        if !self.args.iter().any(|a| a == "--port") {
            cmd.arg("--port").arg("0");
        }
        cmd.arg("--dbpath")
            .arg(self.db_path())
            .args(&self.args)
            .env("LOG_LEVEL", "info")
            .stdout(Stdio::piped())
            .stderr(self.stderr_file());
        let mut child = cmd.spawn().expect("cannot start aw-server");
        let stdout = child.stdout.take().expect("piped stdout");
        self.child = Some(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if !sent {
                    if let Some(port) = listening_port(&line) {
                        let _ = tx.send(port);
                        sent = true;
                    }
                }
                // Keep draining so the server never blocks on a full pipe.
            }
        });
        match rx.recv_timeout(HANG_GUARD) {
            Ok(port) => self.port = port,
            Err(_) => {
                let status = self
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten());
                panic!("aw-server did not report a listening port (exit status {status:?})");
            }
        }
        assert!(
            TcpStream::connect(("127.0.0.1", self.port)).is_ok(),
            "aw-server reported port {} but does not accept connections",
            self.port
        );
    }

    /// Starts a binary given by path on a free port and polls `GET /api/0/info` until it
    /// answers 200 (for [`HANG_GUARD`] at most).
    fn spawn_and_poll(&mut self) {
        let port = free_port();
        let mut cmd = self.command();
        cmd.arg("--port")
            .arg(port.to_string())
            .arg("--dbpath")
            .arg(self.db_path())
            .args(&self.args)
            .stdout(self.stderr_file())
            .stderr(self.stderr_file());
        self.child = Some(cmd.spawn().expect("cannot start the server binary"));
        self.port = port;
        let deadline = Instant::now() + HANG_GUARD;
        while Instant::now() < deadline {
            if Client::new(port)
                .send_once("GET", "/api/0/info", &[], None)
                .is_some_and(|r| r.status == 200)
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("{:?} did not answer on port {port}", self.binary);
    }

    /// A client for this server.
    pub fn client(&self) -> Client {
        Client::new(self.port)
    }

    /// Where the server's stderr goes (appended across restarts), so a failing test can show
    /// why the process ended; the null device if the file cannot be opened.
    fn stderr_file(&self) -> Stdio {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server-stderr.log"))
            .map_or_else(|_| Stdio::null(), Stdio::from)
    }

    /// The end of what the server wrote to stderr and to its newest log file, for failure
    /// messages (an error that stops the server is logged, not printed to stderr).
    pub fn output_tail(&self) -> String {
        let tail = |path: PathBuf| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let start = text.len().saturating_sub(2000);
            text.get(start..).unwrap_or(&text).to_string()
        };
        let log_dir = self
            .dir
            .path()
            .join("cache/activitywatch/log/aw-server-rust");
        let newest_log = std::fs::read_dir(log_dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .max();
        format!(
            "stderr:\n{}\nlog {newest_log:?}:\n{}",
            tail(self.dir.path().join("server-stderr.log")),
            newest_log.clone().map(tail).unwrap_or_default()
        )
    }

    /// Sends SIGTERM and waits for the process to exit; returns whether it exited cleanly
    /// (printing its exit status and stderr's tail when not).
    pub fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                if !status.success() {
                    eprintln!("aw-server exited with {status}; {}", self.output_tail());
                }
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                eprintln!(
                    "aw-server ignored SIGTERM for {HANG_GUARD:?}; {}",
                    self.output_tail()
                );
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the process with SIGKILL (no chance to commit).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the binary again on the same database after [`TestServer::kill`].
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the server is still running");
        self.spawn();
    }

    /// Stops (SIGTERM) and starts again on the same database (on a new port).
    pub fn restart(&mut self) {
        assert!(self.stop(), "aw-server did not exit cleanly on SIGTERM");
        self.spawn();
    }

    /// Runs the binary as a command (`aw-server --dbpath <db> ARGS`: `restore`, `backup`,
    /// `salvage`…) with this server's directories and `env`; waits for it to end (within
    /// the hang guard) and returns its status and output.
    pub fn run_command(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (std::process::ExitStatus, String) {
        let mut cmd = self.command();
        cmd.arg("--dbpath")
            .arg(self.db_path())
            .args(args)
            .env("LOG_LEVEL", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("cannot run the server binary");
        let id = child.id();
        let guard = std::thread::spawn(move || {
            let deadline = Instant::now() + HANG_GUARD;
            while Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
                if !Path::new(&format!("/proc/{id}")).exists() {
                    return;
                }
            }
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
        });
        let out = child
            .wait_with_output()
            .expect("cannot wait for the command");
        let _ = guard.join();
        (out.status, output_text(&out))
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}
