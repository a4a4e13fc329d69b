//! Writes the benchmark year (see `aw_tests::dataset`) as an export file:
//! `cargo run --release -p aw-tests --example write_dataset -- FILE [LAST_DAY [DAYS]]`.
//! Without `LAST_DAY` (`YYYY-MM-DD`) it is the year 2025 (`aw_tests::year::generate`); with
//! it, the same generator's `DAYS` days (default 365) ending on that day, so a benchmark can
//! end its history yesterday.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = args
        .get(1)
        .expect("usage: write_dataset FILE [LAST_DAY [DAYS]]");
    let days: i64 = args
        .get(3)
        .map_or(365, |d| d.parse().expect("DAYS is a number"));
    let d = match args.get(2) {
        None => aw_tests::year::generate(days),
        Some(last) => {
            let last = chrono::NaiveDate::parse_from_str(last, "%Y-%m-%d")
                .expect("LAST_DAY is YYYY-MM-DD")
                .and_hms_opt(0, 0, 0)
                .expect("midnight")
                .and_utc();
            let first =
                aw_models::timestamp::to_ns_saturating(&last) - (days - 1) * aw_tests::year::DAY;
            aw_tests::dataset::Dataset::generate(0xAC71_F17E, "benchhost", first, days)
        }
    };
    std::fs::write(file, d.export_json()).expect("the file is written");
}
