//! Power loss (issue 25, item 5): the real server under an LD_PRELOAD recorder
//! (`tests/powerloss/shim.c`) that keeps a copy of each file as it was at its last fsync.
//! A writer inserts events one by one; the server is killed (SIGKILL) at a random moment;
//! every file is put back as it was last synced (what a machine that lost power finds:
//! never-synced files and SQLite's shared memory are gone); the server starts on that.
//!
//! The promise (README): every write of a finished group commit survives a power loss.
//! Acknowledged writes after the last finished commit can be lost — at most one commit's
//! worth: [`aw_datastore`]'s `MAX_UNCOMMITTED_EVENTS` events, or 15 s of writes. So the
//! events that survive must be exactly the first k acknowledged ones (no hole, nothing
//! unacknowledged), and k at least the acknowledged count minus one commit's worth.
//!
//! One test in its own binary: `LD_PRELOAD` is set for the servers it starts. Skipped with
//! a message where no C compiler is found.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use aw_tests::TestServer;

/// One commit's worth of events at most (the datastore commits after more than 100).
const MAX_LOST: usize = 101;

fn build_shim(dir: &Path) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("powerloss/shim.c");
    let out = dir.join("shim.so");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&source)
        .arg("-ldl")
        .status();
    match built {
        Ok(status) if status.success() => Some(out),
        other => {
            aw_tests::prerequisite_missing(&format!(
                "cannot build the power-loss recorder with cc: {other:?}"
            ));
            None
        }
    }
}

/// Puts every file of `dir` back as it was at its last fsync (see the module docs).
fn lose_power(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("sqlite.db") || name.ends_with(".synced") || name.ends_with(".tmp") {
            continue;
        }
        let synced = dir.join(format!("{name}.synced"));
        if name.ends_with("-shm") || !synced.exists() {
            std::fs::remove_file(&path).unwrap();
        } else {
            std::fs::copy(&synced, &path).unwrap();
        }
    }
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_name().to_string_lossy().ends_with(".synced") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
}

/// Takes what is on disk now as synced (a server restarting after a power loss finds its
/// files durable as they are).
fn all_synced(dir: &Path) {
    for name in ["sqlite.db", "sqlite.db-wal"] {
        let path = dir.join(name);
        if path.exists() {
            std::fs::copy(&path, dir.join(format!("{name}.synced"))).unwrap();
        }
    }
}

fn insert(c: &mut aw_tests::Client, n: usize) -> bool {
    let body =
        format!(r#"[{{"timestamp":"2026-01-01T00:00:00Z","duration":{n},"data":{{"n":{n}}}}}]"#);
    c.post_json("/api/0/buckets/w/events", &body).status == 200
}

#[test]
fn after_a_power_loss_every_committed_write_is_there_and_at_most_one_commit_is_lost() {
    let work = tempfile::tempdir().unwrap();
    let Some(shim) = build_shim(work.path()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    std::env::set_var("LD_PRELOAD", &shim);
    std::env::set_var("AW_POWERLOSS_DIR", &data);
    let mut s = TestServer::start_in(dir, &[]);
    let mut c = s.client();
    c.create_test_bucket("w");
    let mut acknowledged = 0;
    let mut worst = 0;
    // Kill points spread over several commits: a pseudo-random count of writes each round.
    for (round, writes) in [347usize, 1_203, 58, 911].into_iter().enumerate() {
        let started = Instant::now();
        for _ in 0..writes {
            if insert(&mut c, acknowledged + 1) {
                acknowledged += 1;
            }
        }
        s.kill();
        lose_power(&data);
        std::env::remove_var("LD_PRELOAD");
        s.start_again();
        std::env::set_var("LD_PRELOAD", &shim);
        c = s.client();
        let stored = c.stored_numbers("w");
        let k = stored.len();
        assert_eq!(
            stored,
            (1..=k).collect::<Vec<_>>(),
            "round {round}: the survivors must be the first k acknowledged writes"
        );
        let lost = acknowledged - k;
        eprintln!(
            "round {round}: {acknowledged} acknowledged ({writes} in {:.1?}), {k} survived the power loss, {lost} lost",
            started.elapsed()
        );
        assert!(
            lost <= MAX_LOST,
            "round {round}: {lost} acknowledged writes lost"
        );
        worst = worst.max(lost);
        // The next round goes on from what survived.
        acknowledged = k;
        // Restarted under the recorder for the next round.
        s.kill();
        all_synced(&data);
        s.start_again();
        c = s.client();
    }
    std::env::remove_var("LD_PRELOAD");
    eprintln!("at most {worst} acknowledged writes were lost to a power loss");
}
