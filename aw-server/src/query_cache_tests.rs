//! The query-result cache against the real datastore: random writes of every kind, and
//! queries whose cached answers must equal a fresh evaluation every time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aw_datastore::Datastore;
use aw_models::{Bucket, Event, TimeInterval};
use aw_query::ResultCache;
use chrono::{DateTime, Duration, TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::query_source::{attach_cache, DatastoreSource};

/// The buckets writes go to; "x" comes and goes.
const BUCKETS: [&str; 3] = ["w", "a", "x"];
const DAY: i64 = 86_400;
const DAYS: i64 = 6;

/// Programs of the shapes dashboards send: raw events, transforms over two buckets, the
/// bucket list, and an intersection.
const PROGRAMS: [&str; 5] = [
    r#"RETURN = query_bucket("w");"#,
    r#"w = query_bucket(find_bucket("w")); a = query_bucket("a");
       RETURN = {"sum": sum_durations(w), "merged": merge_events_by_keys(w, ["k"]), "a": a};"#,
    r#"RETURN = query_bucket_names();"#,
    r#"x = query_bucket("x"); RETURN = [x, sort_by_duration(x)];"#,
    r#"a = filter_keyvals(query_bucket("a"), "k", ["0", "1"]);
       RETURN = filter_period_intersect(flood(query_bucket("w")), a);"#,
];

fn at(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_735_689_600 + s, 0).unwrap()
}

fn event(id: Option<i64>, t: i64, dur: i64, k: u8) -> Event {
    let mut data = Map::new();
    data.insert("k".into(), Value::String(k.to_string()));
    Event {
        id,
        timestamp: at(t),
        duration: Duration::seconds(dur),
        data,
    }
}

fn bucket(id: &str, events: Option<Vec<Event>>) -> Bucket {
    Bucket {
        events,
        ..Bucket::new(id, "t", "c", "h")
    }
}

/// One step of a run.
#[derive(Debug, Clone)]
enum Op {
    /// At `t`, or when `t <= 0` at `-t` × 5 min after the bucket's newest heartbeat.
    Heartbeat {
        b: usize,
        t: i64,
        dur: i64,
        k: u8,
        pulse: f64,
    },
    Insert {
        b: usize,
        t: i64,
        dur: i64,
        k: u8,
    },
    Replace {
        b: usize,
        pick: usize,
        t: i64,
        dur: i64,
        k: u8,
    },
    Delete {
        b: usize,
        pick: usize,
    },
    Import {
        b: usize,
        events: Vec<(i64, i64, u8)>,
    },
    DeleteBucket {
        b: usize,
    },
    /// Bucket `b` renamed to the other bucket's id (refused while that one exists).
    Rename {
        b: usize,
    },
    /// Bucket `b` merged into the other one.
    Merge {
        b: usize,
    },
    /// An event of bucket `b` edited in place.
    Edit {
        b: usize,
        pick: usize,
        t: i64,
        dur: i64,
        k: u8,
    },
    /// A time range of one bucket (`Some`) or of all (`None`), `[t, t + len)`.
    DeleteRange {
        b: Option<usize>,
        t: i64,
        len: i64,
    },
    CreateBucket {
        b: usize,
    },
    /// A clean stop and a start: the cache's results are kept beside the database and read
    /// back.
    Restart,
    /// A stop, another program's write to the file (as the reference server makes it:
    /// SQLite on the same tables), and a start.
    ForeignWrite {
        write: ForeignWrite,
        pick: i64,
        t: i64,
        k: u8,
    },
    Query {
        program: usize,
        periods: Vec<(i64, i64)>,
    },
}

/// What another program writes between two runs.
#[derive(Debug, Clone, Copy)]
enum ForeignWrite {
    Insert,
    Update,
    Delete,
    /// A change that keeps the file's length: one byte of an event's data.
    SameLength,
}

fn op() -> impl Strategy<Value = Op> {
    let b = 0..BUCKETS.len();
    // Times on a 10-minute grid so heartbeats merge and events meet period edges.
    let t = (0..DAYS * 144).prop_map(|k| k * 600);
    let dur = prop_oneof![0..1200i64, 0..2 * DAY];
    let k = 0..4u8;
    // Mostly the week view's days (so later queries meet earlier entries), sometimes a
    // longer period across them.
    let period = (0..DAYS, prop_oneof![4 => Just(1i64), 1 => 2..4i64])
        .prop_map(|(d, n)| (d * DAY, (d + n) * DAY));
    prop_oneof![
        // A watcher's heartbeats: a little after the bucket's newest one, so they merge.
        4 => (b.clone(), 0..3i64, 0..700i64, 0..2u8, prop_oneof![Just(0.0), Just(700.0)])
            .prop_map(|(b, step, dur, k, pulse)| Op::Heartbeat { b, t: -step, dur, k, pulse }),
        1 => (b.clone(), t.clone(), 0..700i64, k.clone(), Just(0.0))
            .prop_map(|(b, t, dur, k, pulse)| Op::Heartbeat { b, t, dur, k, pulse }),
        2 => (b.clone(), t.clone(), dur.clone(), k.clone())
            .prop_map(|(b, t, dur, k)| Op::Insert { b, t, dur, k }),
        1 => (b.clone(), any::<usize>(), t.clone(), dur.clone(), k.clone())
            .prop_map(|(b, pick, t, dur, k)| Op::Replace { b, pick, t, dur, k }),
        1 => (b.clone(), any::<usize>()).prop_map(|(b, pick)| Op::Delete { b, pick }),
        1 => (b.clone(), prop::collection::vec((t.clone(), dur, k.clone()), 1..4))
            .prop_map(|(b, events)| Op::Import { b, events }),
        1 => b.clone().prop_map(|b| Op::DeleteBucket { b }),
        1 => b.clone().prop_map(|b| Op::Rename { b }),
        1 => b.clone().prop_map(|b| Op::Merge { b }),
        1 => (b.clone(), any::<usize>(), t.clone(), 0..1200i64, k.clone())
            .prop_map(|(b, pick, t, dur, k)| Op::Edit { b, pick, t, dur, k }),
        1 => (prop::option::of(b.clone()), t.clone(), 1..DAY)
            .prop_map(|(b, t, len)| Op::DeleteRange { b, t, len }),
        1 => b.prop_map(|b| Op::CreateBucket { b }),
        1 => Just(Op::Restart),
        1 => (
            prop_oneof![
                Just(ForeignWrite::Insert),
                Just(ForeignWrite::Update),
                Just(ForeignWrite::Delete),
                Just(ForeignWrite::SameLength),
            ],
            0..64i64,
            t.clone(),
            k.clone()
        )
            .prop_map(|(write, pick, t, k)| Op::ForeignWrite { write, pick, t, k }),
        8 => (0..PROGRAMS.len(), prop::collection::vec(period, 1..7))
            .prop_map(|(program, periods)| Op::Query { program, periods }),
    ]
}

/// A datastore in a fresh file with buckets "w" and "a", and a cache of `budget` bytes
/// attached to it.
fn setup(dir: &tempfile::TempDir, budget: u64) -> (Datastore, Arc<ResultCache>) {
    let (ds, cache) = start(dir, budget);
    for b in ["w", "a"] {
        ds.create_bucket(&bucket(b, None)).wait().unwrap();
    }
    (ds, cache)
}

/// Opens the datastore in `dir` as a server starts: a cache of `budget` bytes attached,
/// with the results the last run kept read back.
fn start(dir: &tempfile::TempDir, budget: u64) -> (Datastore, Arc<ResultCache>) {
    let ds = Datastore::open(&dir.path().join("sqlite.db")).unwrap();
    let cache = attach_cache(&ds, budget).unwrap();
    crate::query_source::restore_now(&ds, cache.restore_ticket());
    (ds, cache)
}

/// Writes to the database file with SQLite, as another program (the reference server)
/// would, while no server of ours has it open.
fn foreign_write(db: &std::path::Path, write: ForeignWrite, pick: i64, t: i64, k: u8) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let ns = |s: i64| at(s).timestamp_nanos_opt().unwrap();
    let picked: Option<i64> = conn
        .query_row(
            "SELECT id FROM events ORDER BY id LIMIT 1 OFFSET ?1 % max(1, (SELECT count(*) FROM events))",
            [pick],
            |r| r.get(0),
        )
        .ok();
    match (write, picked) {
        (ForeignWrite::Insert, _) => {
            conn.execute(
                "INSERT INTO events (bucketrow, starttime, endtime, data) \
                 SELECT id, ?1, ?2, ?3 FROM buckets ORDER BY id LIMIT 1",
                rusqlite::params![ns(t), ns(t + 600), format!("{{\"k\":\"{k}\"}}")],
            )
            .unwrap();
        }
        (ForeignWrite::Update, Some(id)) => {
            conn.execute(
                "UPDATE events SET endtime = endtime + 60000000000 WHERE id = ?1",
                [id],
            )
            .unwrap();
        }
        (ForeignWrite::Delete, Some(id)) => {
            conn.execute("DELETE FROM events WHERE id = ?1", [id])
                .unwrap();
        }
        (ForeignWrite::SameLength, Some(id)) => {
            // Every event's data is `{"k":"<digit>"}`: another digit keeps every length.
            conn.execute(
                "UPDATE events SET data = '{\"k\":\"7\"}' WHERE id = ?1",
                [id],
            )
            .unwrap();
        }
        _ => {}
    }
}

/// The answer with the cache and without it, as text (errors by their message).
fn both(
    ds: &Datastore,
    cache: &ResultCache,
    code: &str,
    periods: &[TimeInterval],
) -> (String, String) {
    let source = DatastoreSource(ds.clone());
    let run = |cache| {
        aw_query::query_json(code, periods, &source, None, cache).unwrap_or_else(|e| e.to_string())
    };
    (run(Some(cache)), run(None))
}

/// Runs `ops`, checking every query's cached answer against a fresh evaluation.
fn check(ops: Vec<Op>, budget: u64) {
    let dir = tempfile::tempdir().unwrap();
    let (mut ds, mut cache) = setup(&dir, budget);
    let mut ids: Vec<Vec<i64>> = vec![Vec::new(); BUCKETS.len()];
    let mut newest = [DAY; BUCKETS.len()];
    for op in ops {
        match op {
            Op::Heartbeat {
                b,
                t,
                dur,
                k,
                pulse,
            } => {
                let t = if t <= 0 { newest[b] - t * 300 } else { t };
                newest[b] = t;
                if let Ok(e) = ds
                    .heartbeat(BUCKETS[b], &event(None, t, dur, k), pulse)
                    .wait()
                {
                    ids[b].push(e.id);
                }
            }
            Op::Insert { b, t, dur, k } => {
                if let Ok(stored) = ds
                    .insert_events(BUCKETS[b], &[event(None, t, dur, k)])
                    .wait()
                {
                    ids[b].extend(stored.iter().map(|e| e.id));
                }
            }
            Op::Replace { b, pick, t, dur, k } => {
                // Any bucket's id: one of another bucket is refused, which changes nothing.
                let all: Vec<i64> = ids.concat();
                if let Some(&id) = all.get(pick % all.len().max(1)) {
                    let _ = ds
                        .insert_events(BUCKETS[b], &[event(Some(id), t, dur, k)])
                        .wait();
                }
            }
            Op::Delete { b, pick } => {
                if let Some(&id) = ids[b].get(pick % ids[b].len().max(1)) {
                    let _ = ds.delete_events_by_id(BUCKETS[b], vec![id]).wait();
                }
            }
            Op::Import { b, events } => {
                let events = events
                    .into_iter()
                    .map(|(t, dur, k)| event(None, t, dur, k))
                    .collect();
                let _ = ds
                    .import_buckets(vec![bucket(BUCKETS[b], Some(events))])
                    .wait();
            }
            Op::DeleteBucket { b } => {
                let _ = ds.delete_bucket(BUCKETS[b]).wait();
                ids[b].clear();
            }
            Op::CreateBucket { b } => {
                let _ = ds.create_bucket(&bucket(BUCKETS[b], None)).wait();
            }
            Op::Restart => {
                ds.close().unwrap();
                (ds, cache) = start(&dir, budget);
            }
            Op::ForeignWrite { write, pick, t, k } => {
                ds.close().unwrap();
                foreign_write(&dir.path().join("sqlite.db"), write, pick, t, k);
                (ds, cache) = start(&dir, budget);
            }
            Op::Rename { b } => {
                let other = BUCKETS[(b + 1) % BUCKETS.len()];
                if ds
                    .rename_bucket(BUCKETS[b], Some(other), None)
                    .wait()
                    .is_ok()
                {
                    ids[(b + 1) % BUCKETS.len()] = std::mem::take(&mut ids[b]);
                }
            }
            Op::Merge { b } => {
                let other = (b + 1) % BUCKETS.len();
                if ds.merge_buckets(BUCKETS[b], BUCKETS[other]).wait().is_ok() {
                    let moved = std::mem::take(&mut ids[b]);
                    ids[other].extend(moved);
                }
            }
            Op::Edit { b, pick, t, dur, k } => {
                if let Some(&id) = ids[b].get(pick % ids[b].len().max(1)) {
                    let _ = ds
                        .replace_event(BUCKETS[b], id, &event(None, t, dur, k))
                        .wait();
                }
            }
            Op::DeleteRange { b, t, len } => {
                let buckets: Vec<String> = match b {
                    Some(b) => vec![BUCKETS[b].to_string()],
                    None => BUCKETS.iter().map(|b| b.to_string()).collect(),
                };
                let _ = ds
                    .delete_range(&buckets, at(t), at(t + len), false, None)
                    .wait();
            }
            Op::Query { program, periods } => {
                let periods: Vec<TimeInterval> = periods
                    .iter()
                    .map(|&(s, e)| TimeInterval::new(at(s), at(e)))
                    .collect();
                let (cached, fresh) = both(&ds, &cache, PROGRAMS[program], &periods);
                assert_eq!(cached, fresh, "program {program} over {periods:?}");
            }
        }
    }
    // Every entry still held is current.
    for program in PROGRAMS {
        for d in 0..DAYS {
            let periods = [TimeInterval::new(at(d * DAY), at((d + 1) * DAY))];
            let (cached, fresh) = both(&ds, &cache, program, &periods);
            assert_eq!(cached, fresh);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn cached_answers_equal_fresh_ones_after_any_writes(
        ops in prop::collection::vec(op(), 1..60),
        small in any::<bool>(),
    ) {
        // A small budget also exercises eviction.
        check(ops, if small { 6 << 10 } else { 8 << 20 });
    }
}

/// Writes that land while queries run: once the writer is done, every answer the cache
/// gives equals a fresh evaluation (a result computed before a write it did not see must
/// not have been stored).
#[test]
fn writes_during_evaluation_never_leave_a_stale_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (ds, cache) = setup(&dir, 8 << 20);
    let periods: Vec<TimeInterval> = (0..DAYS)
        .map(|d| TimeInterval::new(at(d * DAY), at((d + 1) * DAY)))
        .collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..3000i64 {
                let t = (i * 97) % (DAYS * DAY);
                let _ = ds
                    .heartbeat("w", &event(None, t, 30, (i % 4) as u8), 60.0)
                    .wait();
                if i % 7 == 0 {
                    let _ = ds.insert_events("a", &[event(None, t, 600, 0)]).wait();
                }
            }
            stop.store(true, Ordering::Release);
        });
        let source = DatastoreSource(ds.clone());
        while !stop.load(Ordering::Acquire) {
            for code in PROGRAMS {
                let _ = aw_query::query_json(code, &periods, &source, None, Some(&cache));
            }
        }
    });
    assert!(cache.stats().misses > 0);
    for code in PROGRAMS {
        let (cached, fresh) = both(&ds, &cache, code, &periods);
        assert_eq!(cached, fresh, "{code}");
    }
}

/// A write drops only what it can change: a heartbeat into one day leaves the other days
/// of a week view cached, so the week after one changed day recomputes that day only.
#[test]
fn a_write_into_one_day_recomputes_that_day_only() {
    let dir = tempfile::tempdir().unwrap();
    let (ds, cache) = setup(&dir, 8 << 20);
    for d in 0..DAYS {
        ds.heartbeat("w", &event(None, d * DAY + 3600, 60, 1), 0.0)
            .wait()
            .unwrap();
    }
    let week: Vec<TimeInterval> = (0..DAYS)
        .map(|d| TimeInterval::new(at(d * DAY), at((d + 1) * DAY)))
        .collect();
    let source = DatastoreSource(ds.clone());
    let code = PROGRAMS[1];
    let first = aw_query::query_json(code, &week, &source, None, Some(&cache)).unwrap();
    let before = cache.stats();
    assert_eq!((before.misses, before.hits), (DAYS as u64, 0));
    // The last day's event grows (a heartbeat merges into it): only that day is
    // evaluated again.
    let last = (DAYS - 1) * DAY;
    let merged = ds
        .heartbeat("w", &event(None, last + 3650, 60, 1), 0.0)
        .wait()
        .unwrap();
    assert_eq!(merged.start, at(last + 3600).timestamp_nanos_opt().unwrap());
    let second = aw_query::query_json(code, &week, &source, None, Some(&cache)).unwrap();
    let after = cache.stats();
    assert_eq!(after.misses - before.misses, 1);
    assert_eq!(after.hits - before.hits, DAYS as u64 - 1);
    assert_ne!(first, second);
    let (_, fresh) = both(&ds, &cache, code, &week);
    assert_eq!(second, fresh);
}

/// A source that makes a write right after its first read, as if a watcher's heartbeat
/// arrived while the query was evaluating.
struct WriteAfterFirstRead {
    source: DatastoreSource,
    written: AtomicBool,
}

impl aw_query::DataSource for WriteAfterFirstRead {
    fn query_bucket_rows(
        &self,
        bucket_id: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> aw_query::RowChunks<'_> {
        // The whole read first, then the write: a write right after the first read.
        let parts: Vec<_> = self
            .source
            .query_bucket_rows(bucket_id, start, end)
            .collect();
        if !self.written.swap(true, Ordering::AcqRel) {
            self.source
                .0
                .insert_events("w", &[event(None, 3600, 60, 2)])
                .wait()
                .unwrap();
        }
        Box::new(parts.into_iter())
    }

    fn buckets(
        &self,
    ) -> Result<std::collections::HashMap<String, Bucket>, aw_query::DataSourceError> {
        self.source.buckets()
    }
}

#[test]
fn a_result_that_missed_a_write_during_its_evaluation_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (ds, cache) = setup(&dir, 8 << 20);
    let day = [TimeInterval::new(at(0), at(DAY))];
    let racing = WriteAfterFirstRead {
        source: DatastoreSource(ds.clone()),
        written: AtomicBool::new(false),
    };
    let stale = aw_query::query_json(PROGRAMS[0], &day, &racing, None, Some(&cache)).unwrap();
    assert_eq!(stale, "[[]]");
    assert_eq!(cache.stats().not_stored, 1);
    let (cached, fresh) = both(&ds, &cache, PROGRAMS[0], &day);
    assert_eq!(cached, fresh);
    assert_ne!(cached, stale);
}
