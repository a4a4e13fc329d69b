//! The command line beyond one pass: `list`, the port from aw-server-rust's config file
//! (`--testing` too), and the pull filters `sync --host` and `--sync-db`.

use crate::common::{describe, window_events, Device};

const WINDOW_A: &str = "aw-watcher-window_laptop";

#[test]
fn list_shows_the_server_this_devices_file_and_every_other_device() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::with_window_events(WINDOW_A, "laptop", window_events(40, 0));
    let b =
        Device::with_window_events("aw-watcher-window_desktop", "desktop", window_events(40, 0));
    a.sync(f, &["sync"]);
    b.sync(f, &["sync", "--mode", "push"]);
    let out = a.sync(f, &["list"]);
    assert!(out.contains(&format!("Server ({})", a.device_id)), "{out}");
    assert!(out.contains(&format!("{WINDOW_A}: 40 events")), "{out}");
    assert!(out.contains("(this device)"), "{out}");
    assert!(out.contains(&format!("(device {})", b.device_id)), "{out}");
    assert!(
        out.contains("aw-watcher-window_desktop: 40 events"),
        "{out}"
    );
}

#[test]
fn the_port_comes_from_the_servers_config_file_and_testing_uses_its_own() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::with_window_events(WINDOW_A, "laptop", window_events(40, 0));
    let config = a.home.path().join("config/activitywatch/aw-server-rust");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("port = {}\n", a.server.port),
    )
    .unwrap();
    // Without --port: the config's port.
    let run = |args: &[&str]| {
        let mut cmd = a.aw_sync_environment();
        cmd.arg("--sync-dir").arg(f).args(args).output().unwrap()
    };
    let out = run(&["sync", "--mode", "push"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(f.join(&a.device_id).join("test.db").is_file());
    // --testing reads config-testing.toml (absent: port 5666, where nothing listens here).
    std::fs::write(config.join("config-testing.toml"), "port = 1\n").unwrap();
    let out = run(&["--testing", "sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(describe(&out).contains("127.0.0.1:1"), "{}", describe(&out));
    // A config that is not TOML is an error, not a silent default.
    std::fs::write(config.join("config.toml"), "port = [unclosed\n").unwrap();
    let out = run(&["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
}

#[test]
fn sync_host_and_sync_db_limit_what_is_pulled() {
    let folder = tempfile::tempdir().unwrap();
    let f = folder.path();
    let a = Device::with_window_events(WINDOW_A, "laptop", window_events(40, 0));
    let c = Device::with_window_events("aw-watcher-window_tablet", "tablet", window_events(40, 0));
    a.sync(f, &["sync", "--mode", "push"]);
    c.sync(f, &["sync", "--mode", "push"]);
    let this_host = aw_platform::hostname();

    let b = Device::start();
    b.sync(f, &["sync", "--host", "no-such-host"]);
    assert!(b.bucket_ids().is_empty(), "{:?}", b.bucket_ids());
    b.sync(f, &["sync", "--host", &this_host]);
    assert_eq!(b.bucket_ids().len(), 2, "{:?}", b.bucket_ids());

    let d = Device::start();
    let only_a = f.join(&a.device_id);
    d.sync(f, &["sync", "--sync-db", only_a.to_str().unwrap()]);
    assert_eq!(d.bucket_ids().len(), 1, "{:?}", d.bucket_ids());
    d.pulled(&a, WINDOW_A);
    let out = d.run(f, &["sync", "--sync-db", "/elsewhere/test.db"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
}
