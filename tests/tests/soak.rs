//! A short soak through the real binary: a mixed load of heartbeats, inserts, week queries,
//! exports and an import, after which every acknowledged insert is stored exactly once,
//! before and after a restart, and heartbeats were answered promptly throughout. `aw-soak` runs the long version (BENCHMARKS.md).

use std::time::Duration;

use aw_tests::soak::{run, SoakOptions};

#[test]
fn a_short_mixed_load_loses_and_doubles_nothing() {
    let report = run(&SoakOptions {
        duration: Duration::from_secs(8),
        history_days: 14,
        export_every: Duration::from_secs(2),
        ..SoakOptions::default()
    });
    println!("{}", report.to_markdown());
    for kind in &report.kinds {
        assert_eq!(kind.errors, 0, "{kind:?}");
        assert!(kind.ok > 0, "no {} was answered", kind.name);
    }
    assert!(report.acknowledged_inserts > 100, "{report:?}");
    // Watchers are not starved by the queries, exports and the import beside them (a bound
    // generous enough for a noisy CI machine; a few milliseconds here).
    let heartbeats = report.kinds.iter().find(|k| k.name == "heartbeat");
    let p99 = heartbeats.map_or(f64::INFINITY, |k| k.p99_ms);
    assert!(p99 <= 250.0, "heartbeat p99 {p99} ms under the mixed load");
    assert_eq!((report.lost, report.duplicated), (0, 0));
    assert_eq!(
        (report.lost_after_restart, report.duplicated_after_restart),
        (0, 0)
    );
}
