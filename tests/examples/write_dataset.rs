//! Writes the benchmark year (see `aw_tests::dataset`) as an export file:
//! `cargo run --release -p aw-tests --example write_dataset -- FILE`.
fn main() {
    let d = aw_tests::dataset::Dataset::generate(
        0xAC71_F17E,
        "benchhost",
        1_735_689_600_000_000_000,
        365,
    );
    std::fs::write(std::env::args().nth(1).unwrap(), d.export_json()).unwrap();
}
