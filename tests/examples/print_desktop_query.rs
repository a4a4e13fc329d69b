//! Prints the canonical desktop query (`aw_models::queries::full_desktop_query`) with the
//! default categories: for profiling by hand, and for the browser test that runs it beside
//! the dashboard's own query (`tests/browser/periods.test.mjs`).
//!
//! Usage: `print_desktop_query [--manual MANUAL_BUCKET] WINDOW_BUCKET [AFK_BUCKET
//! [BROWSER_BUCKET…]]`, or a host name alone for the benchmark's buckets of that host
//! (`aw-watcher-window_<host>`, …). An empty AFK bucket means the host has none.
use aw_client_rust::classes::default_classes;
use aw_client_rust::queries::{full_desktop_query, DesktopQueryParams};
fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let manual = match args.first().map(String::as_str) {
        Some("--manual") if args.len() > 1 => {
            let id = args.remove(1);
            args.remove(0);
            id
        }
        _ => String::new(),
    };
    let (window, afk, browsers) = match args.as_slice() {
        [] | [_] => {
            let host = args.first().map_or("benchhost", String::as_str);
            (
                format!("aw-watcher-window_{host}"),
                format!("aw-watcher-afk_{host}"),
                vec![format!("aw-watcher-web-chrome_{host}")],
            )
        }
        [window, afk, browsers @ ..] => (window.clone(), afk.clone(), browsers.to_vec()),
    };
    print!(
        "{}",
        full_desktop_query(&DesktopQueryParams {
            bid_window: window,
            bid_afk: afk,
            bid_browsers: browsers,
            bid_manual: manual,
            classes: default_classes(),
            filter_afk: true,
            include_audible: true,
            ..Default::default()
        })
    );
}
