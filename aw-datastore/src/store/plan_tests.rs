//! Query plans and costs of the store's statements on a real file.

use rusqlite::{params, Connection};
use std::sync::Arc;

use super::*;
use crate::store::range_read::row_to_raw;
use crate::store::schema::LONG_EVENT_NS;
use rusqlite::StatementStatus;

/// A store on a real file with bucket row 1 (`b`) and the events `sql` inserts.
fn store_with(dir: &tempfile::TempDir, sql: &str) -> Store {
    let mut conn = Connection::open(dir.path().join("sqlite.db")).unwrap();
    crate::store::schema::configure(&conn).unwrap();
    crate::store::schema::migrate(&mut conn, crate::file::create_marker).unwrap();
    conn.execute_batch(
        "INSERT INTO buckets (name, type, client, hostname, created) VALUES ('b', 't', 'c', 'h', '2020-01-01 00:00:00+00:00');",
    )
    .unwrap();
    conn.execute_batch(sql).unwrap();
    crate::store::schema::ensure_own_tables(&conn).unwrap();
    Store::new(conn, Arc::default()).unwrap()
}

/// A store holding one bucket with 500,000 one-minute events (a year).
pub(crate) fn big_store(dir: &tempfile::TempDir) -> Store {
    store_with(
        dir,
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 499999)
         INSERT INTO events (bucketrow, starttime, endtime, data)
         SELECT 1, 1577836800000000000 + i * 63000000000, 1577836800000000000 + i * 63000000000 + 60000000000,
                '{\"i\":' || i || '}' FROM n;",
    )
}

/// Asserts that SQLite plans `sql` as a walk of the composite index with no sort.
fn assert_walks_index(store: &Store, sql: &str, params: impl rusqlite::Params) {
    let plan: Vec<String> = store
        .conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map(params, |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let plan = plan.join("\n");
    assert!(
        plan.contains("USING INDEX events_bucketrow_starttime_endtime_index"),
        "{plan}"
    );
    assert!(
        !plan.contains("TEMP B-TREE"),
        "sorts instead of walking the index: {plan}"
    );
}

/// Runs the range read the way `get_events` does and returns (rows, VM steps, sorts,
/// full-scan steps).
fn run(store: &Store, lo: i64, hi: i64, limit: i64) -> (usize, i32, i32, i32) {
    let floor = lo.saturating_sub(LONG_EVENT_NS);
    let mut stmt = store
        .conn
        .prepare(crate::store::range_read::RANGE_SQL)
        .unwrap();
    let n = stmt
        .query_map(params![1, hi, floor, lo, limit], row_to_raw)
        .unwrap()
        .count();
    (
        n,
        stmt.get_status(StatementStatus::VmStep),
        stmt.get_status(StatementStatus::Sort),
        stmt.get_status(StatementStatus::FullscanStep),
    )
}

#[test]
fn cached_range_statement_is_not_reprepared_per_binding() {
    let dir = tempfile::tempdir().unwrap();
    let store = big_store(&dir);
    for (lo, limit) in [
        (0i64, 100i64),
        (1_600_000_000_000_000_000, 10),
        (5, -1),
        (0, 100),
    ] {
        let mut stmt = store
            .conn
            .prepare_cached(crate::store::range_read::RANGE_SQL)
            .unwrap();
        let n = stmt
            .query_map(params![1, i64::MAX, lo, lo, limit], row_to_raw)
            .unwrap()
            .take(200)
            .count();
        assert!(n > 0);
        // Re-parsing and re-planning on every request would cost more than the rows.
        assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
    }
}

#[test]
fn chunked_reads_equal_one_read() {
    let dir = tempfile::tempdir().unwrap();
    // Many events tied on start (and on end), in a jumbled insert order.
    let store = store_with(
        &dir,
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
         INSERT INTO events (bucketrow, starttime, endtime, data)
         SELECT 1, (i * 7919 % 50) * 1000, (i * 7919 % 50) * 1000 + (i % 3) * 500, '{}' FROM n;",
    );
    for (lo, hi, limit) in [
        (None, None, None),
        (Some(10_000), Some(30_000), None),
        (None, None, Some(333)),
    ] {
        let whole = store.get_events("b", lo, hi, limit, true).unwrap();
        for chunk in [1, 7, 100, 5000] {
            let mut read = store.range_read("b", lo, hi, limit, true).unwrap();
            while !read.is_done() {
                read.step(&store.conn, chunk).unwrap();
            }
            assert_eq!(
                read.finish(),
                whole,
                "chunk {chunk}, {lo:?}..{hi:?} limit {limit:?}"
            );
        }
    }
    assert_walks_index(
        &store,
        crate::store::range_read::RANGE_AFTER_SQL,
        params![1, 0, 0, 0, 0, 0, 100],
    );
}

/// COMPATIBILITY.md, server #16: one event lasting 300 days must not make the last-day read (or count)
/// walk back 300 days of index: the walk stops an hour before the range, and the long
/// event comes from its own index.
#[test]
fn one_long_event_does_not_make_reads_walk_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = big_store(&dir);
    let day = 86_400_000_000_000i64;
    let end = 1_577_836_800_000_000_000 + 499_999 * 63_000_000_000 + 60_000_000_000;
    store
        .conn
        .execute(
            "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (1, ?1, ?2, '{}')",
            params![end - 300 * day, end],
        )
        .unwrap();
    let statements = [
        crate::store::range_read::RANGE_SQL,
        crate::store::range_read::LONG_EVENTS_SQL,
    ];
    for sql in statements {
        store
            .conn
            .prepare_cached(sql)
            .unwrap()
            .reset_status(StatementStatus::VmStep);
    }
    let rows = store
        .get_events("b", Some(end - day), Some(end), None, false)
        .unwrap();
    assert!((1370..=1373).contains(&rows.0.len()), "{}", rows.0.len());
    assert_eq!(rows.0.last().unwrap().start, end - 300 * day);
    let steps: i32 = statements
        .iter()
        .map(|sql| {
            store
                .conn
                .prepare_cached(sql)
                .unwrap()
                .get_status(StatementStatus::VmStep)
        })
        .sum();
    assert!(steps < 60 * 1_500, "a one-day read took {steps} VM steps");
    assert_eq!(
        store.count_events("b", Some(end - day), Some(end)).unwrap(),
        rows.0.len() as u64
    );
    let plan: String = store
        .conn
        .prepare(&format!(
            "EXPLAIN QUERY PLAN {}",
            crate::store::range_read::LONG_EVENTS_SQL
        ))
        .unwrap()
        .query_map(params![1, 0, 0, 0, 10], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap()
        .join("\n");
    assert!(plan.contains("events_long_by_end"), "{plan}");
}

#[test]
fn range_read_walks_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = big_store(&dir);
    assert_eq!(store.count_events("b", None, None).unwrap(), 500_000);
    assert_walks_index(
        &store,
        crate::store::range_read::RANGE_SQL,
        params![1, 0, 0, 0, 100],
    );

    // limit=100 over the whole year: about 100 rows' worth of steps, no sort, no scan.
    let (n, steps, sorts, scans) = run(&store, i64::MIN, i64::MAX, 100);
    assert_eq!((n, sorts, scans), (100, 0, 0));
    assert!(steps < 5_000, "limit=100 took {steps} VM steps");

    // One day in the middle of the year reads about one day of rows, not the year before it.
    let mid = 1_577_836_800_000_000_000 + 250_000 * 63_000_000_000;
    let day = 86_400_000_000_000;
    let (n, steps, sorts, scans) = run(&store, mid, mid + day, -1);
    assert!((1370..=1373).contains(&n), "{n}");
    assert_eq!((sorts, scans), (0, 0));
    assert!(steps < 60 * 1_400, "a one-day read took {steps} VM steps");
}

/// The span read at startup from index seeks is exact, also when the newest events end
/// before they start (an import can carry negative durations) and an older event, not long
/// enough for the long-events index, ends last.
#[test]
fn the_startup_span_is_exact_with_negative_durations() {
    let dir = tempfile::tempdir().unwrap();
    let half = LONG_EVENT_NS / 2;
    let sql = format!(
        "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES
         (1, 0, {a}, '{{}}'),
         (1, {b}, {c}, '{{}}'),
         (1, {d}, {e}, '{{}}');",
        a = 2 * half,
        b = 7 * half,
        c = 9 * half,
        d = 10 * half,
        e = 8 * half,
    );
    let store = store_with(&dir, &sql);
    let metadata = store.state("b").unwrap().to_bucket().metadata;
    assert_eq!(
        metadata
            .start
            .as_ref()
            .and_then(aw_models::timestamp::to_ns),
        Some(0)
    );
    assert_eq!(
        metadata.end.as_ref().and_then(aw_models::timestamp::to_ns),
        Some(9 * half)
    );
}
