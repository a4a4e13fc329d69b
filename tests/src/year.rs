//! The benchmark's year: the dataset `aw-bench` and the probes in `examples/` measure on, and
//! the requests they build, so that their numbers can be compared with each other.

use aw_client_rust::classes::default_classes;
use aw_client_rust::queries::DesktopQueryParams;
use serde_json::json;

use crate::dataset::Dataset;
use crate::TestServer;

/// One second in ns.
pub const NS: i64 = 1_000_000_000;
/// One day in ns.
pub const DAY: i64 = 86_400 * NS;
/// The first day of the generated year, 2025-01-01T00:00:00Z.
pub const START_DAY: i64 = 1_735_689_600 * NS;

/// The generated dataset of `days` days from [`START_DAY`] (seeded: the same every run).
pub fn generate(days: i64) -> Dataset {
    Dataset::generate(0xAC71_F17E, "benchhost", START_DAY, days)
}

/// The API's text form of an instant given in ns.
pub fn ts(ns: i64) -> String {
    aw_models::timestamp::format(&aw_models::timestamp::from_ns(ns))
}

/// The dashboard's desktop query parameters for the dataset's window, AFK and browser buckets.
pub fn desktop_params(data: &Dataset) -> DesktopQueryParams {
    DesktopQueryParams {
        bid_window: data.buckets[0].id.clone(),
        bid_afk: data.buckets[1].id.clone(),
        bid_browsers: vec![data.buckets[2].id.clone()],
        classes: default_classes(),
        filter_afk: true,
        include_audible: true,
        ..Default::default()
    }
}

/// A `POST /api/0/query/` body running `code` over `periods` (pairs of ns instants).
pub fn query_body(code: &str, periods: &[(i64, i64)]) -> String {
    let periods: Vec<String> = periods
        .iter()
        .map(|&(a, b)| format!("{}/{}", ts(a), ts(b)))
        .collect();
    json!({"timeperiods": periods, "query": code.split('\n').collect::<Vec<_>>()}).to_string()
}

/// [`query_body`] with every period moved `k` seconds earlier: a loop that sends request
/// `k` = 1, 2, 3… asks for a new period each time, so the server's result cache never
/// answers it and the loop measures evaluation ("cold").
pub fn cold_query_body(code: &str, periods: &[(i64, i64)], k: i64) -> String {
    let shift = k * NS;
    let moved: Vec<(i64, i64)> = periods
        .iter()
        .map(|&(a, b)| (a - shift, b - shift))
        .collect();
    query_body(code, &moved)
}

/// A fresh server with `data` imported through `POST /api/0/import`.
pub fn server_with(data: &Dataset) -> TestServer {
    let server = TestServer::start();
    let r = server
        .client()
        .post_json("/api/0/import", &data.export_json());
    assert_eq!(r.status, 200, "import failed: {}", r.body);
    server
}

/// CPU time and page faults of a process so far: (user ms, system ms, minor page faults),
/// from `/proc/PID/stat` (zeros where it cannot be read).
pub fn process_usage(pid: u32) -> [f64; 3] {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may contain spaces.
    let fields: Vec<f64> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or(0.0);
    // utime and stime are in clock ticks of 10 ms on Linux.
    [field(11) * 10.0, field(12) * 10.0, field(7)]
}

/// A memory line of `/proc/PID/status` (`VmHWM:`, `VmRSS:`) in MB (NaN where it cannot be
/// read).
pub fn proc_status_mb(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The `n`th command-line argument parsed as a `T`, or `default` (for the probes' options).
pub fn arg<T: std::str::FromStr>(n: usize, default: T) -> T {
    std::env::args()
        .nth(n)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// Sends heartbeat `k` (one second after heartbeat `k - 1`, so each merges into the
/// last) to bucket `hb` and returns how long the answer took, in ms.
pub fn timed_heartbeat(c: &mut crate::Client, k: usize) -> f64 {
    let hb = format!(
        r#"{{"timestamp":"{}","duration":0,"data":{{"app":"x"}}}}"#,
        ts(1_800_000_000_000_000_000 + k as i64 * 1_000_000_000)
    );
    let t = std::time::Instant::now();
    assert_eq!(
        c.post_json("/api/0/buckets/hb/heartbeat?pulsetime=2", &hb)
            .status,
        200
    );
    t.elapsed().as_secs_f64() * 1e3
}
