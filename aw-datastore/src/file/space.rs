//! What takes the space in a database: its pages (in use and free), the size of each table
//! and index, and the events of each bucket and each year with an estimate of their bytes.
//!
//! Measured over a connection of its own (the backup connection, [`BackupSource`]): in WAL
//! mode it reads one committed snapshot while the worker goes on writing, so the scan of the
//! whole history this takes (about a second for a year of events) never delays a
//! heartbeat. A caller keeps the result and says when it was measured.
//!
//! **The bytes of a bucket** are an estimate: SQLite does not say which pages hold which
//! rows. The exact size of the events table and its indexes (SQLite's `dbstat`) is shared
//! out among the buckets in proportion to their events' data plus a fixed cost per event
//! ([`ROW_COST`]: the row's times, ids and headers, and its index entries), so the buckets'
//! bytes add up to what the events take in the file. Where `dbstat` is missing, the pages
//! in use stand in for the events' structures.

use std::collections::BTreeMap;
use std::time::Instant;

use rusqlite::Connection;
use serde::Serialize;

use crate::error::Result;
use crate::file::backup::BackupSource;

/// What one event costs besides its data, in bytes, in the estimate of a bucket's size:
/// its row's id, bucket and times with the record header, and its entries in the indexes.
pub const ROW_COST: u64 = 64;

/// One measure of the space a database takes (see the module docs).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SpaceMeasure {
    /// The page size in bytes.
    pub page_size: u64,
    /// The pages of the file (in use and free).
    pub page_count: u64,
    /// The free pages: space inside the file that no row uses (given back by a vacuum).
    pub freelist_count: u64,
    /// SQLite's `auto_vacuum` mode: `none`, `full` or `incremental`.
    pub auto_vacuum: &'static str,
    /// The bytes of each table and index, largest first (from `dbstat`; empty without it).
    pub structures: Vec<StructureSpace>,
    /// Each bucket's events, largest first.
    pub buckets: Vec<BucketSpace>,
    /// The events of each calendar year (UTC, by start), oldest first.
    pub years: Vec<YearSpace>,
    /// How long the measure took, in milliseconds.
    pub took_ms: u64,
}

/// The size of one table or index in the file.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StructureSpace {
    /// The table's or index's name.
    pub name: String,
    /// Its pages' bytes.
    pub bytes: u64,
}

/// One bucket's events and the space they take.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BucketSpace {
    /// The bucket's name.
    pub bucket: String,
    /// Its number of events.
    pub events: u64,
    /// The start of its first event (ns since the epoch).
    pub first_ns: Option<i64>,
    /// The end of its last event (ns since the epoch).
    pub last_ns: Option<i64>,
    /// The bytes of its events' data (their JSON).
    pub data_bytes: u64,
    /// An estimate of what its events take in the file (see the module docs).
    pub bytes: u64,
}

/// One calendar year's events and the space they take.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct YearSpace {
    /// The year (UTC, of each event's start).
    pub year: i64,
    /// Its number of events, over every bucket.
    pub events: u64,
    /// The bytes of their data.
    pub data_bytes: u64,
    /// An estimate of what they take in the file.
    pub bytes: u64,
}

impl BackupSource {
    /// Measures the space the database takes, on this connection (see the module docs).
    pub fn measure_space(&self) -> Result<SpaceMeasure> {
        measure(self.connection())
    }
}

/// The events of one bucket in one year, as the scan sums them.
struct Cell {
    events: u64,
    first: i64,
    last: i64,
    data_bytes: u64,
}

/// Measures the database of `conn` in one read transaction, so every figure is of the same
/// snapshot.
pub(crate) fn measure(conn: &Connection) -> Result<SpaceMeasure> {
    let began = Instant::now();
    conn.execute_batch("BEGIN")?;
    let measured = measure_in_snapshot(conn);
    let _ = conn.execute_batch("COMMIT");
    let mut measure = measured?;
    measure.took_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(measure)
}

fn measure_in_snapshot(conn: &Connection) -> Result<SpaceMeasure> {
    let pragma = |name: &str| crate::store::pragma(conn, name);
    let page_size = pragma("page_size")?;
    let page_count = pragma("page_count")?;
    let freelist_count = pragma("freelist_count")?;
    let auto_vacuum = match pragma("auto_vacuum")? {
        1 => "full",
        2 => "incremental",
        _ => "none",
    };
    let structures = structures(conn).unwrap_or_else(|e| {
        log::debug!("No dbstat to measure the tables with ({e}): the pages in use stand in");
        Vec::new()
    });
    let events_bytes = if structures.is_empty() {
        page_count.saturating_sub(freelist_count) * page_size
    } else {
        events_structures_bytes(conn, &structures)?
    };
    let names: BTreeMap<i64, String> = conn
        .prepare("SELECT id, name FROM buckets")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let (buckets, years) = share_out(&names, &scan(conn)?, events_bytes);
    Ok(SpaceMeasure {
        page_size,
        page_count,
        freelist_count,
        auto_vacuum,
        structures,
        buckets,
        years,
        took_ms: 0,
    })
}

/// One walk of every event: per bucket row and year, the events and their data's bytes.
fn scan(conn: &Connection) -> Result<BTreeMap<(i64, i64), Cell>> {
    let mut cells = BTreeMap::new();
    let mut scan = conn.prepare(
        "SELECT bucketrow, CAST(strftime('%Y', starttime / 1000000000, 'unixepoch') AS INTEGER),
                COUNT(*), MIN(starttime), MAX(endtime), SUM(LENGTH(CAST(data AS BLOB)))
         FROM events GROUP BY 1, 2",
    )?;
    let mut rows = scan.query([])?;
    while let Some(row) = rows.next()? {
        let count: i64 = row.get(2)?;
        let bytes: i64 = row.get::<_, Option<i64>>(5)?.unwrap_or(0);
        cells.insert(
            (row.get(0)?, row.get::<_, Option<i64>>(1)?.unwrap_or(0)),
            Cell {
                events: u64::try_from(count).unwrap_or(0),
                first: row.get(3)?,
                last: row.get(4)?,
                data_bytes: u64::try_from(bytes).unwrap_or(0),
            },
        );
    }
    Ok(cells)
}

/// Sums the scan per bucket (every bucket named, with events or not) and per year, and
/// shares `events_bytes` out among them (see the module docs).
fn share_out(
    names: &BTreeMap<i64, String>,
    cells: &BTreeMap<(i64, i64), Cell>,
    events_bytes: u64,
) -> (Vec<BucketSpace>, Vec<YearSpace>) {
    let weight = |events: u64, data: u64| data.saturating_add(events.saturating_mul(ROW_COST));
    let total_weight: u64 = cells.values().map(|c| weight(c.events, c.data_bytes)).sum();
    let share = |events: u64, data: u64| -> u64 {
        if total_weight == 0 {
            return 0;
        }
        let part = u128::from(weight(events, data)) * u128::from(events_bytes);
        u64::try_from(part / u128::from(total_weight)).unwrap_or(u64::MAX)
    };
    let empty = |bucket: String| BucketSpace {
        bucket,
        events: 0,
        first_ns: None,
        last_ns: None,
        data_bytes: 0,
        bytes: 0,
    };
    let mut buckets: BTreeMap<i64, BucketSpace> = names
        .iter()
        .map(|(&id, name)| (id, empty(name.clone())))
        .collect();
    let mut years: BTreeMap<i64, YearSpace> = BTreeMap::new();
    for (&(bucketrow, year), cell) in cells {
        let b = buckets.entry(bucketrow).or_insert_with(|| {
            empty(format!(
                "(bucket row {bucketrow}, not in the buckets table)"
            ))
        });
        b.events += cell.events;
        b.data_bytes += cell.data_bytes;
        b.first_ns = Some(b.first_ns.map_or(cell.first, |f| f.min(cell.first)));
        b.last_ns = Some(b.last_ns.map_or(cell.last, |l| l.max(cell.last)));
        let y = years.entry(year).or_insert(YearSpace {
            year,
            events: 0,
            data_bytes: 0,
            bytes: 0,
        });
        y.events += cell.events;
        y.data_bytes += cell.data_bytes;
    }
    let mut buckets: Vec<BucketSpace> = buckets.into_values().collect();
    for b in &mut buckets {
        b.bytes = share(b.events, b.data_bytes);
    }
    buckets.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.bucket.cmp(&b.bucket)));
    let mut years: Vec<YearSpace> = years.into_values().collect();
    for y in &mut years {
        y.bytes = share(y.events, y.data_bytes);
    }
    (buckets, years)
}

/// The bytes of each table and index, largest first, from SQLite's `dbstat` (an error
/// where it is not compiled in).
fn structures(conn: &Connection) -> rusqlite::Result<Vec<StructureSpace>> {
    let mut stmt = conn
        .prepare("SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE ORDER BY pgsize DESC")?;
    let rows = stmt.query_map([], |r| {
        Ok(StructureSpace {
            name: r.get(0)?,
            bytes: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
        })
    })?;
    rows.collect()
}

/// The bytes of the events table and of every index on it.
fn events_structures_bytes(conn: &Connection, structures: &[StructureSpace]) -> Result<u64> {
    let mut names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'events'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    names.push("events".into());
    Ok(structures
        .iter()
        .filter(|s| names.contains(&s.name))
        .map(|s| s.bytes)
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE buckets (id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE events (id INTEGER PRIMARY KEY, bucketrow INTEGER, starttime INTEGER,
                                  endtime INTEGER, data TEXT);
             CREATE INDEX events_i ON events(bucketrow, starttime DESC, endtime);
             INSERT INTO buckets VALUES (1, 'window'), (2, 'afk'), (3, 'empty');",
        )
        .unwrap();
        let year_ns = 366 * 86_400 * 1_000_000_000_i64;
        let start_2024 = 1_704_067_200 * 1_000_000_000_i64;
        for i in 0..300_i64 {
            let (bucket, data) = if i % 3 == 0 {
                (2, r#"{"status":"afk"}"#.to_string())
            } else {
                (1, format!(r#"{{"app":"a","title":"{}"}}"#, "x".repeat(100)))
            };
            let start = start_2024 + (i % 2) * year_ns + i * 1_000_000_000;
            conn.execute(
                "INSERT INTO events (bucketrow, starttime, endtime, data) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![bucket, start, start + 5_000_000_000, data],
            )
            .unwrap();
        }
        conn
    }

    #[test]
    fn every_bucket_and_year_is_counted_and_the_shares_add_up_to_the_events_structures() {
        let conn = database();
        let m = measure(&conn).unwrap();
        let counts: Vec<(&str, u64)> = m.buckets.iter().map(|b| (&*b.bucket, b.events)).collect();
        assert_eq!(counts, [("window", 200), ("afk", 100), ("empty", 0)]);
        let years: Vec<(i64, u64)> = m.years.iter().map(|y| (y.year, y.events)).collect();
        assert_eq!(years, [(2024, 150), (2025, 150)]);
        let window = &m.buckets[0];
        assert_eq!(
            window.data_bytes,
            200 * (r#"{"app":"a","title":""}"#.len() as u64 + 100)
        );
        assert!(window.first_ns < window.last_ns);
        assert_eq!(m.buckets[2].first_ns, None);
        if !m.structures.is_empty() {
            let events = events_structures_bytes(&conn, &m.structures).unwrap();
            let shared: u64 = m.buckets.iter().map(|b| b.bytes).sum();
            // Integer division loses under a byte per bucket.
            assert!(events - shared < 3, "{events} vs {shared}");
            let by_year: u64 = m.years.iter().map(|y| y.bytes).sum();
            assert!(events - by_year < 3);
        }
        assert!(m.page_count > 0 && m.page_size > 0);
    }
}
