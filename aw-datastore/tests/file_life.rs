//! The database file's life, simulated (issue 44): random sequences of requests, commits
//! and file events, each checked against what was acknowledged, after every step.
//!
//! Each mechanism that keeps acknowledged writes (the journal, group commit, rewrites,
//! backups, restore, the lock, other programs on the file) is tested alone elsewhere; the
//! defects this finds live in their *order* (a preview, then a commit with nothing to
//! commit, then a kill; a restore, then two starts). So a generator (proptest: shrinking to
//! the shortest failing sequence, and a seed that replays it) draws sequences of:
//!
//! * **requests** of every kind: inserts, heartbeats, edits, deletions by id, range
//!   deletions and privacy runs (both also as dry runs), merges, renames, imports,
//!   settings, buckets created and deleted;
//! * **commit triggers**: forced, a backup's, a clean stop's, and the worker's own (more
//!   than 100 events, bucket changes; the idle commit only when a step takes a second);
//! * **file events**: a kill (the worker held between two turns, the database, its WAL and
//!   the journal copied into a fresh folder, never the `-shm`, and the copy opened: what a
//!   SIGKILL at that instant leaves), a clean restart, the restore of any earlier backup,
//!   a full disk under the journal's appends and a commit that fails as on a full disk
//!   (`Faults`), another program (the `sqlite3` command, a process of its own) reading
//!   the file while the worker runs and writing it between two runs, and a second server
//!   starting on it.
//!
//! After each step: the store holds exactly what was acknowledged (the state the live
//! store showed before a kill or a restart; the backup's state after a restore), no event
//! is there twice, and no file beside a private database is readable by others.
//!
//! Runs: `AW_SIM_CASES` sequences (default 400), or for `AW_SIM_SECONDS` seconds with
//! new seeds; `AW_SIM_SEED` (hex, as a failure prints it) replays one run.
// Examples, benches and integration tests are outside the workspace lints (Cargo.toml).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aw_datastore::{Datastore, DatastoreError, Faults, OpenOptions};
use aw_models::{Bucket, Event};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::json;

/// The buckets requests go to; `c` is created, renamed, merged and deleted by steps.
const BUCKETS: [&str; 2] = ["a", "b"];

/// One step of a sequence. Numbers that pick something (an event, a backup) are taken
/// modulo what there is when the step runs, so every sequence, shrunk or not, runs.
#[derive(Clone, Debug)]
enum Step {
    Insert {
        bucket: u8,
        count: u8,
        at: u32,
    },
    Heartbeat {
        bucket: u8,
        app: u8,
        secret: bool,
        gap: u8,
    },
    Edit {
        bucket: u8,
        pick: u16,
        secret: bool,
    },
    DeleteIds {
        bucket: u8,
        pick: u16,
        count: u8,
    },
    DeleteRange {
        bucket: u8,
        at: u32,
        len: u32,
        dry_run: bool,
    },
    SetPrivacyRules {
        on: bool,
    },
    Privacy {
        dry_run: bool,
    },
    CreateC,
    DeleteC,
    RenameC,
    MergeCIntoA,
    /// A window event split by a missed heartbeat, with a duplicate, into `a`; then `a` and
    /// `b` compacted (or previewed).
    Compact {
        at: u32,
        dry_run: bool,
    },
    Import {
        count: u8,
        at: u32,
    },
    Setting {
        key: u8,
        value: u8,
    },
    ForceCommit,
    Backup,
    Kill,
    Restart,
    Restore {
        pick: u8,
    },
    JournalFull,
    CommitFails,
    AnotherProgramReads,
    AnotherProgramWritesBetweenRuns,
    SecondServer,
    Bulk {
        at: u32,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let bucket = 0u8..2;
    let at = 0u32..86_400;
    prop_oneof![
        6 => (bucket.clone(), 1u8..4, at.clone())
            .prop_map(|(bucket, count, at)| Step::Insert { bucket, count, at }),
        6 => (bucket.clone(), 0u8..3, any::<bool>(), 0u8..20)
            .prop_map(|(bucket, app, secret, gap)| Step::Heartbeat { bucket, app, secret, gap }),
        2 => (bucket.clone(), any::<u16>(), any::<bool>())
            .prop_map(|(bucket, pick, secret)| Step::Edit { bucket, pick, secret }),
        2 => (bucket.clone(), any::<u16>(), 1u8..3)
            .prop_map(|(bucket, pick, count)| Step::DeleteIds { bucket, pick, count }),
        3 => (bucket.clone(), at.clone(), 1u32..20_000, any::<bool>()).prop_map(
            |(bucket, at, len, dry_run)| Step::DeleteRange { bucket, at, len, dry_run }
        ),
        1 => any::<bool>().prop_map(|on| Step::SetPrivacyRules { on }),
        2 => any::<bool>().prop_map(|dry_run| Step::Privacy { dry_run }),
        1 => Just(Step::CreateC),
        1 => Just(Step::DeleteC),
        1 => Just(Step::RenameC),
        1 => Just(Step::MergeCIntoA),
        2 => (at.clone(), any::<bool>()).prop_map(|(at, dry_run)| Step::Compact { at, dry_run }),
        1 => (1u8..5, at.clone()).prop_map(|(count, at)| Step::Import { count, at }),
        2 => (0u8..3, any::<u8>()).prop_map(|(key, value)| Step::Setting { key, value }),
        2 => Just(Step::ForceCommit),
        2 => Just(Step::Backup),
        3 => Just(Step::Kill),
        2 => Just(Step::Restart),
        2 => any::<u8>().prop_map(|pick| Step::Restore { pick }),
        1 => Just(Step::JournalFull),
        1 => Just(Step::CommitFails),
        1 => Just(Step::AnotherProgramReads),
        1 => Just(Step::AnotherProgramWritesBetweenRuns),
        1 => Just(Step::SecondServer),
        1 => at.prop_map(|at| Step::Bulk { at }),
    ]
}

/// What the store holds, as its API reads it: buckets (without the caches' metadata),
/// their events and the settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    buckets: BTreeMap<String, String>,
    events: BTreeMap<String, Vec<(i64, i64, i64, String)>>,
    settings: Vec<(String, String)>,
}

impl State {
    fn read(ds: &Datastore) -> Result<State, DatastoreError> {
        let mut state = State::default();
        for (id, bucket) in ds.get_buckets().wait()? {
            let mut events: Vec<_> = ds
                .get_events(&id, None, None, None)
                .wait()?
                .0
                .into_iter()
                .map(|e| (e.id, e.start, e.end, e.data))
                .collect();
            events.sort();
            let meta = format!(
                "{} {} {} {}",
                bucket._type,
                bucket.client,
                bucket.hostname,
                serde_json::Value::Object(bucket.data)
            );
            state.buckets.insert(id.clone(), meta);
            state.events.insert(id, events);
        }
        state.settings = ds.get_key_values("").wait()?;
        state.settings.sort();
        Ok(state)
    }

    /// The numbered events (`data.n`) that are there more than once.
    fn duplicates(&self) -> Vec<u64> {
        let mut seen = BTreeMap::<u64, usize>::new();
        for events in self.events.values() {
            for (_, _, _, data) in events {
                let n = serde_json::from_str::<serde_json::Value>(data)
                    .ok()
                    .and_then(|v| v["n"].as_u64());
                if let Some(n) = n {
                    *seen.entry(n).or_default() += 1;
                }
            }
        }
        seen.into_iter()
            .filter(|(_, c)| *c > 1)
            .map(|(n, _)| n)
            .collect()
    }
}

/// The start of the simulated day.
fn day() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .into()
}

fn at(secs: i64) -> chrono::DateTime<chrono::Utc> {
    day() + chrono::Duration::seconds(secs)
}

fn event(secs: i64, len: i64, data: serde_json::Value) -> Event {
    Event::new(
        at(secs),
        chrono::Duration::seconds(len),
        data.as_object().cloned().unwrap_or_default(),
    )
}

fn bucket(id: &str) -> Bucket {
    serde_json::from_value(json!({"id": id, "type": "t", "client": "sim", "hostname": "h"}))
        .unwrap()
}

/// Where a sequence's files live: tmpfs when there is one (the simulation writes and
/// copies a lot), else the temporary folder.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

/// One sequence's world: the live store, its folder (a new one after each kill), the
/// backups taken so far with the state each holds, and what was acknowledged.
struct Sim {
    root: tempfile::TempDir,
    generation: usize,
    ds: Option<Datastore>,
    faults: Faults,
    clock: i64,
    next_n: u64,
    backups: Vec<(PathBuf, State)>,
    expected: State,
}

type StepResult = Result<(), TestCaseError>;

fn fail(what: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(what.to_string())
}

impl Sim {
    fn new() -> Result<Sim, TestCaseError> {
        let root = scratch();
        let mut sim = Sim {
            root,
            generation: 0,
            ds: None,
            faults: Faults::default(),
            clock: 0,
            next_n: 0,
            backups: Vec::new(),
            expected: State::default(),
        };
        std::fs::create_dir(sim.folder()).map_err(fail)?;
        // A private database: every file made beside it must be private too.
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(sim.db())
                .map_err(fail)?;
        }
        sim.open()?;
        for name in BUCKETS {
            sim.ds()?
                .create_bucket(&bucket(name))
                .wait()
                .map_err(fail)?;
        }
        sim.expected = sim.read()?;
        Ok(sim)
    }

    fn folder(&self) -> PathBuf {
        self.root.path().join(format!("g{}", self.generation))
    }

    fn db(&self) -> PathBuf {
        self.folder().join("sqlite.db")
    }

    fn ds(&self) -> Result<&Datastore, TestCaseError> {
        self.ds.as_ref().ok_or_else(|| fail("no store open"))
    }

    fn open(&mut self) -> StepResult {
        let options = OpenOptions {
            faults: self.faults.clone(),
            ..OpenOptions::default()
        };
        self.ds = Some(Datastore::open_with(&self.db(), options).map_err(fail)?);
        Ok(())
    }

    fn close(&mut self) -> StepResult {
        if let Some(ds) = self.ds.take() {
            ds.close().map_err(fail)?;
        }
        Ok(())
    }

    fn read(&self) -> Result<State, TestCaseError> {
        State::read(self.ds()?).map_err(fail)
    }

    /// After a file event: the store holds `expected`, and the files are private.
    fn check_against_expected(&self, event: &str) -> StepResult {
        let actual = self.read()?;
        if actual != self.expected {
            return Err(fail(format!(
                "after {event} the store differs from what was acknowledged:\n{}",
                difference(&self.expected, &actual)
            )));
        }
        self.check_modes()
    }

    /// After a request: the live store's state is the acknowledged one, with no event twice.
    fn acknowledge(&mut self) -> StepResult {
        let state = self.read()?;
        let twice = state.duplicates();
        if !twice.is_empty() {
            return Err(fail(format!("events there more than once: {twice:?}")));
        }
        self.expected = state;
        Ok(())
    }

    #[cfg(unix)]
    fn check_modes(&self) -> StepResult {
        use std::os::unix::fs::PermissionsExt;
        for folder in [self.folder(), self.root.path().join("backups")] {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            for entry in entries.flatten() {
                let mode = entry.metadata().map_err(fail)?.permissions().mode();
                if mode & 0o077 != 0 {
                    return Err(fail(format!(
                        "{} has mode {mode:o} beside a private database",
                        entry.path().display()
                    )));
                }
            }
        }
        Ok(())
    }

    #[cfg(not(unix))]
    fn check_modes(&self) -> StepResult {
        Ok(())
    }

    fn numbered(&mut self, secs: i64, len: i64, secret: bool) -> Event {
        self.next_n += 1;
        let title = if secret { "a secret plan" } else { "plain" };
        event(secs, len, json!({"n": self.next_n, "title": title}))
    }

    /// `count` events of bucket `bucket` (an index into [`BUCKETS`]), from the `pick`th in
    /// id order on, wrapping; `None` when it has none.
    fn picked(&self, bucket: u8, pick: u16, count: usize) -> Option<(&'static str, Vec<i64>)> {
        let name = BUCKETS[usize::from(bucket)];
        let ids: Vec<i64> = self
            .expected
            .events
            .get(name)?
            .iter()
            .map(|(id, ..)| *id)
            .collect();
        (!ids.is_empty()).then(|| {
            let chosen = (0..count).map(|i| ids[(usize::from(pick) + i) % ids.len()]);
            (name, chosen.collect())
        })
    }

    fn run(&mut self, step: &Step) -> StepResult {
        let ds = self.ds()?.clone();
        // A request's own failure (a bucket that is not there, say) is an answer, not a
        // fault: what counts is what the store holds afterwards.
        match step {
            Step::Insert { bucket, count, at } => {
                let events: Vec<Event> = (0..*count)
                    .map(|i| self.numbered(i64::from(*at) + i64::from(i) * 30, 20, i % 2 == 1))
                    .collect();
                let _ = ds.insert_events(BUCKETS[*bucket as usize], &events).wait();
            }
            Step::Heartbeat {
                bucket,
                app,
                secret,
                gap,
            } => {
                self.clock += i64::from(*gap);
                let title = if *secret { "secret" } else { "open" };
                let e = event(self.clock, 0, json!({"app": app, "title": title}));
                let _ = ds.heartbeat(BUCKETS[*bucket as usize], &e, 10.0).wait();
            }
            Step::Edit {
                bucket,
                pick,
                secret,
            } => {
                if let Some((name, ids)) = self.picked(*bucket, *pick, 1) {
                    let e = self.numbered(i64::from(*pick) * 7, 5, *secret);
                    let _ = ds.replace_event(name, ids[0], &e).wait();
                }
            }
            Step::DeleteIds {
                bucket,
                pick,
                count,
            } => {
                if let Some((name, ids)) = self.picked(*bucket, *pick, usize::from(*count)) {
                    let _ = ds.delete_events_by_id(name, ids).wait();
                }
            }
            Step::DeleteRange {
                bucket,
                at: start,
                len,
                dry_run,
            } => {
                let start = i64::from(*start);
                let _ = ds
                    .delete_range(
                        &[BUCKETS[*bucket as usize].to_string()],
                        at(start),
                        at(start + i64::from(*len)),
                        *dry_run,
                        None,
                    )
                    .wait();
            }
            Step::SetPrivacyRules { on } => {
                let rules = json!([
                    {"enabled": on, "field": "title", "pattern": "secret",
                     "action": "redact", "replacement": "***"},
                    {"enabled": on, "bucket_prefix": "c", "field": "title",
                     "pattern": "plain", "action": "drop"}
                ]);
                let _ = ds
                    .set_key_value(aw_datastore::PRIVACY_FILTERS_KEY, &rules.to_string())
                    .wait();
            }
            Step::Privacy { dry_run } => {
                let _ = ds.apply_privacy_to_past(*dry_run).wait();
            }
            Step::CreateC => {
                let mut c = bucket("c");
                c.events = Some(vec![self.numbered(100, 10, false)]);
                let _ = ds.create_bucket(&c).wait();
            }
            Step::DeleteC => {
                let _ = ds.delete_bucket("c").wait();
            }
            Step::RenameC => {
                // Back and forth between `c` and `c2`.
                if self.expected.buckets.contains_key("c") {
                    let _ = ds.rename_bucket("c", Some("c2"), None).wait();
                } else {
                    let _ = ds.rename_bucket("c2", Some("c"), None).wait();
                }
            }
            Step::MergeCIntoA => {
                let _ = ds.merge_buckets("c", "a").wait();
            }
            Step::Compact { at, dry_run } => {
                let at = i64::from(*at);
                let split = json!({"app": "split", "title": "plain"});
                let pieces = [
                    event(at, 3, split.clone()),
                    event(at + 4, 3, split.clone()),
                    event(at + 4, 1, split),
                ];
                let _ = ds.insert_events("a", &pieces).wait();
                let _ = ds
                    .compact(&["a".to_string(), "b".to_string()], *dry_run, None)
                    .wait();
            }
            Step::Import { count, at } => {
                let mut imported = bucket("imported");
                imported.events = Some(
                    (0..*count)
                        .map(|i| self.numbered(i64::from(*at) + i64::from(i) * 60, 30, false))
                        .collect(),
                );
                let _ = ds.import_buckets(vec![imported]).wait();
            }
            Step::Setting { key, value } => {
                let _ = ds
                    .set_key_value(&format!("settings.sim{key}"), &value.to_string())
                    .wait();
            }
            Step::ForceCommit => {
                let _ = ds.force_commit().wait();
            }
            Step::Backup => return self.backup(),
            Step::Kill => return self.kill(),
            Step::Restart => {
                self.close()?;
                self.open()?;
                return self.check_against_expected("a clean restart");
            }
            Step::Restore { pick } => return self.restore(*pick),
            Step::JournalFull => return self.journal_full(),
            Step::CommitFails => return self.commit_fails(),
            Step::AnotherProgramReads => {
                another_program(&self.db(), "SELECT count(*) FROM events")?;
                return Ok(());
            }
            Step::AnotherProgramWritesBetweenRuns => return self.another_program_writes(),
            Step::SecondServer => return self.second_server(),
            Step::Bulk { at } => {
                // More events than a commit waits for: the size trigger.
                let events: Vec<Event> = (0..150)
                    .map(|i| self.numbered(i64::from(*at) + i * 2, 1, false))
                    .collect();
                let _ = ds.insert_events(BUCKETS[0], &events).wait();
            }
        }
        self.acknowledge()
    }

    /// A backup, as the server takes one: a commit, then a verified copy through a
    /// connection of its own (the worker never waits for the copy).
    fn backup(&mut self) -> StepResult {
        self.ds()?.force_commit().wait().map_err(fail)?;
        let source = aw_datastore::BackupSource::open(&self.db(), None).map_err(fail)?;
        let folder = self.root.path().join("backups");
        let written = aw_datastore::write_backup(
            &source,
            &folder,
            aw_datastore::BackupKind::BeforeRewrite,
            0,
        )
        .map_err(fail)?;
        self.backups
            .push((folder.join(written.file), self.expected.clone()));
        Ok(())
    }

    /// A SIGKILL now: the worker held between two turns, its files copied (not the
    /// `-shm`, which a new process rebuilds), the copy opened in place of the original.
    fn kill(&mut self) -> StepResult {
        let from = self.folder();
        let hold = self.ds()?.hold_worker().map_err(fail)?;
        self.generation += 1;
        let to = self.folder();
        std::fs::create_dir(&to).map_err(fail)?;
        for suffix in ["", "-wal", ".journal"] {
            let source = from.join(format!("sqlite.db{suffix}"));
            if source.exists() {
                std::fs::copy(&source, to.join(format!("sqlite.db{suffix}"))).map_err(fail)?;
            }
        }
        drop(hold);
        // The killed process is gone: its store is closed where it was (that commit
        // changes the old folder only).
        if let Some(old) = self.ds.take() {
            let _ = old.close();
        }
        self.open()?;
        self.check_against_expected("a kill")
    }

    /// `aw-server restore`: the store stopped, backup `pick` put in place through the
    /// file's owner, and a start.
    fn restore(&mut self, pick: u8) -> StepResult {
        if self.backups.is_empty() {
            return Ok(());
        }
        let (backup, state) = self.backups[pick as usize % self.backups.len()].clone();
        self.close()?;
        {
            let file = aw_datastore::DatabaseFile::claim(&self.db()).map_err(fail)?;
            file.restore(&backup, None).map_err(fail)?;
        }
        self.expected = state;
        self.open()?;
        self.check_against_expected("a restore")
    }

    /// The disk fills under the journal: a write is refused as a full disk, nothing
    /// acknowledged is lost, and writes go on once there is room.
    fn journal_full(&mut self) -> StepResult {
        self.faults.set_journal_full(true);
        let e = self.numbered(self.clock, 1, false);
        let refused = self.ds()?.insert_events("a", &[e]).wait();
        self.faults.set_journal_full(false);
        match refused {
            Err(DatastoreError::DiskFull(_)) => {}
            other => return Err(fail(format!("a write on a full disk answered {other:?}"))),
        }
        self.check_against_expected("a write refused on a full disk")
    }
}

impl Sim {
    /// A commit fails as SQLite's do on a full disk (the whole transaction rolled back):
    /// what was acknowledged is applied again and still read, and kept by later commits.
    fn commit_fails(&mut self) -> StepResult {
        self.faults.fail_commits(1);
        let failed = self.ds()?.force_commit().wait();
        self.faults.fail_commits(0);
        if failed.is_ok() {
            return Err(fail("a commit that was made to fail succeeded"));
        }
        self.check_against_expected("a failed commit")
    }
}

/// What differs between two states, for a failure message.
fn difference(expected: &State, actual: &State) -> String {
    let mut out = String::new();
    if expected.buckets != actual.buckets {
        out += &format!(
            "buckets: expected {:?}\n         got {:?}\n",
            expected.buckets, actual.buckets
        );
    }
    for name in expected.events.keys().chain(actual.events.keys()) {
        let (e, a) = (expected.events.get(name), actual.events.get(name));
        if e != a {
            out += &format!("events of {name}:\n  expected {e:?}\n  got      {a:?}\n");
        }
    }
    if expected.settings != actual.settings {
        out += &format!(
            "settings: expected {:?}\n          got {:?}\n",
            expected.settings, actual.settings
        );
    }
    out
}

/// Another program opens the database, runs `sql` and closes it cleanly, in a process of
/// its own (within one process SQLite shares its locks, so only a separate process shows
/// what its close does to the worker's files): the `sqlite3` command, as users' scripts run
/// it, with the system's SQLite (an older one than ours deletes the WAL at its close
/// whenever it can take the database's lock).
fn another_program(db: &Path, sql: &str) -> StepResult {
    let out = match std::process::Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // The test command installs it (`scripts/ensure-command.sh`); elsewhere the
            // step is skipped, unless prerequisites are required.
            assert!(
                std::env::var_os("AW_REQUIRE_PREREQUISITES").is_none_or(|v| v != "1"),
                "AW_REQUIRE_PREREQUISITES=1 and there is no sqlite3 command"
            );
            return Ok(());
        }
        Err(e) => return Err(fail(e)),
    };
    if !out.status.success() {
        return Err(fail(format!(
            "sqlite3 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

impl Sim {
    /// Between two runs another program (the reference server, a script) adds an event:
    /// the next start keeps it beside every acknowledged write, which may have to take
    /// other ids.
    fn another_program_writes(&mut self) -> StepResult {
        self.close()?;
        let row = "INSERT INTO events (bucketrow, starttime, endtime, data) \
                   SELECT id, 0, 1, '{\"other\":1}' FROM buckets WHERE name = 'b'";
        another_program(&self.db(), row)?;
        self.open()?;
        let mut actual = self.read()?;
        let theirs = |state: &mut State| {
            state.events.get_mut("b").map(|events| {
                let before = events.len();
                events.retain(|(_, _, _, data)| data != r#"{"other":1}"#);
                before - events.len()
            })
        };
        let mut expected = self.expected.clone();
        let (before, after) = (theirs(&mut expected), theirs(&mut actual));
        if actual != expected || after != before.map(|n| n + 1) {
            return Err(fail(format!(
                "after another program wrote between two runs ({before:?} of its rows, then \
                 {after:?}):\n{}",
                difference(&expected, &actual)
            )));
        }
        self.acknowledge()
    }

    /// A second server starts on the file while the store runs: it is refused, and
    /// nothing changes.
    fn second_server(&mut self) -> StepResult {
        match aw_datastore::DatabaseFile::claim(&self.db()) {
            Err(DatastoreError::Locked(_)) => {}
            other => return Err(fail(format!("a second claim answered {other:?}"))),
        }
        self.check_against_expected("a second server's start")
    }
}

/// Sequences run by this process, and the number of the first that failed (before
/// shrinking): how soon the simulation finds a defect.
static SEQUENCES_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static FIRST_FAILURE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One sequence at a time in this process. The tests of this file run on threads of one
/// process, and a child one spawns (the `sqlite3` command) holds a copy of every
/// descriptor open at its fork until it execs: the `flock` of another test's database
/// among them, so that test's next claim would find its own database locked.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `steps` from a new database, checking after each.
fn run_sequence(steps: &[Step]) -> StepResult {
    use std::sync::atomic::Ordering;
    let _alone = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let number = SEQUENCES_RUN.fetch_add(1, Ordering::Relaxed) + 1;
    let ran = (|| {
        let mut sim = Sim::new()?;
        for (i, step) in steps.iter().enumerate() {
            sim.run(step)
                .map_err(|e| fail(format!("step {i} ({step:?}): {e}")))?;
        }
        sim.close()
    })();
    if ran.is_err() {
        let _ = FIRST_FAILURE.compare_exchange(0, number, Ordering::Relaxed, Ordering::Relaxed);
    }
    ran
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2_000,
        ..Config::default()
    }
}

fn runner(seed: [u8; 32], cases: u32) -> TestRunner {
    TestRunner::new_with_rng(
        config(cases),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
    )
}

fn hex(seed: &[u8; 32]) -> String {
    seed.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex(text: &str) -> Option<[u8; 32]> {
    let mut seed = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in seed.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(seed)
}

fn fresh_seed() -> [u8; 32] {
    use std::hash::{BuildHasher, Hasher};
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos(),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    seed
}

/// Runs `cases` sequences from `seed`; on a failure, panics with the seed and the
/// shortest failing sequence proptest found.
fn run_seed(seed: [u8; 32], cases: u32) -> u32 {
    let mut runner = runner(seed, cases);
    let sequences = prop::collection::vec(step(), 1..30);
    if let Err(e) = runner.run(&sequences, |steps| run_sequence(&steps)) {
        panic!(
            "the file-life simulation failed at sequence {} of this process (replay: \
             AW_SIM_SEED={}): {e}",
            FIRST_FAILURE.load(std::sync::atomic::Ordering::Relaxed),
            hex(&seed)
        );
    }
    cases
}

/// Random sequences: `AW_SIM_CASES` (default 400), or new seeds for `AW_SIM_SECONDS`;
/// `AW_SIM_SEED` replays a failure.
#[test]
fn random_sequences_keep_every_acknowledged_write() {
    let env = |name: &str| std::env::var(name).ok();
    let cases: u32 = env("AW_SIM_CASES")
        .and_then(|c| c.parse().ok())
        .unwrap_or(400);
    if let Some(seed) = env("AW_SIM_SEED") {
        let seed = parse_hex(&seed).expect("AW_SIM_SEED: 64 hex digits");
        run_seed(seed, cases);
        return;
    }
    let seconds: u64 = env("AW_SIM_SECONDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let started = Instant::now();
    let mut total = 0;
    loop {
        let seed = fresh_seed();
        eprintln!("file-life simulation: seed {}", hex(&seed));
        total += run_seed(seed, cases);
        if started.elapsed() >= Duration::from_secs(seconds) {
            break;
        }
    }
    eprintln!(
        "file-life simulation: {total} sequences in {:.1?}",
        started.elapsed()
    );
}

/// Case 1 of issue 44: a preview, then a commit with nothing to commit, then writes and a
/// kill.
#[test]
fn a_preview_an_empty_commit_and_a_kill() {
    run_sequence(&[
        Step::Insert {
            bucket: 0,
            count: 3,
            at: 10,
        },
        Step::ForceCommit,
        Step::DeleteRange {
            bucket: 0,
            at: 50_000,
            len: 100,
            dry_run: true,
        },
        Step::Backup,
        Step::Insert {
            bucket: 0,
            count: 3,
            at: 20,
        },
        Step::Kill,
    ])
    .unwrap();
}

/// Case 2 of issue 44: a deletion undone by restoring the backup before it, then starts;
/// and one backup restored twice with writes between.
#[test]
fn a_restore_then_two_starts() {
    run_sequence(&[
        Step::Insert {
            bucket: 0,
            count: 3,
            at: 10,
        },
        Step::Backup,
        Step::DeleteIds {
            bucket: 0,
            pick: 0,
            count: 2,
        },
        Step::Restart,
        Step::Restore { pick: 0 },
        Step::Restart,
        Step::Restart,
    ])
    .unwrap();
    run_sequence(&[
        Step::Insert {
            bucket: 0,
            count: 3,
            at: 10,
        },
        Step::Backup,
        Step::Insert {
            bucket: 0,
            count: 3,
            at: 1000,
        },
        Step::Restore { pick: 0 },
        Step::Insert {
            bucket: 0,
            count: 3,
            at: 2000,
        },
        Step::Restore { pick: 0 },
        Step::Restart,
        Step::Kill,
    ])
    .unwrap();
}

/// Case 3 of issue 44: another program reads a new database while the worker runs, then
/// commits and a kill.
#[test]
fn another_program_reads_a_new_database_then_a_kill() {
    run_sequence(&[
        Step::Insert {
            bucket: 0,
            count: 1,
            at: 10,
        },
        Step::ForceCommit,
        Step::AnotherProgramReads,
        Step::Insert {
            bucket: 0,
            count: 3,
            at: 100,
        },
        Step::ForceCommit,
        Step::Kill,
    ])
    .unwrap();
}
