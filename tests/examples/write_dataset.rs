//! Writes the benchmark year (see `aw_tests::dataset`) as an export file:
//! `cargo run --release -p aw-tests --example write_dataset -- FILE`.
fn main() {
    let d = aw_tests::year::generate(365);
    std::fs::write(std::env::args().nth(1).unwrap(), d.export_json()).unwrap();
}
