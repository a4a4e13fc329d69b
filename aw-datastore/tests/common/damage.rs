//! Damaging a database file on purpose: which pages hold which b-tree (SQLite's `dbstat`),
//! and overwriting pages with noise. Shared by `tests/salvage.rs` and
//! `examples/salvage_year.rs` (included there by path).

use std::path::Path;

use rusqlite::Connection;

/// The pages (1-based numbers) of the b-trees named, leaves or the others, from `dbstat`.
pub fn pages_of(path: &Path, names: &[&str], leaves: bool) -> Vec<i64> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT name, pageno, pagetype FROM dbstat")
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .unwrap();
    rows.map(Result::unwrap)
        .filter(|(name, _, kind)| names.contains(&name.as_str()) && (kind == "leaf") == leaves)
        .map(|(_, page, _)| page)
        .collect()
}

/// Overwrites the given pages (4 KiB each) with noise.
pub fn damage(path: &Path, pages: &[i64]) {
    let mut bytes = std::fs::read(path).unwrap();
    for &page in pages {
        let at = (page as usize - 1) * 4096;
        for (i, b) in bytes[at..at + 4096].iter_mut().enumerate() {
            *b = (i.wrapping_mul(2654435761) >> 11) as u8 ^ page as u8;
        }
    }
    std::fs::write(path, bytes).unwrap();
}
