//! Prints the canonical desktop query for the benchmark host (for profiling by hand).
use aw_client_rust::classes::default_classes;
use aw_client_rust::queries::{full_desktop_query, DesktopQueryParams};
fn main() {
    let host = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "benchhost".into());
    print!(
        "{}",
        full_desktop_query(&DesktopQueryParams {
            bid_window: format!("aw-watcher-window_{host}"),
            bid_afk: format!("aw-watcher-afk_{host}"),
            bid_browsers: vec![format!("aw-watcher-web-chrome_{host}")],
            classes: default_classes(),
            filter_afk: true,
            include_audible: true,
            ..Default::default()
        })
    );
}
