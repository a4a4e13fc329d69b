//! A short soak through the real binary: a mixed load of heartbeats, inserts, week queries,
//! exports and an import, after which every acknowledged insert is stored exactly once,
//! before and after a restart. It prints the latencies; `aw-soak` runs the long version and
//! measures them (BENCHMARKS.md).

use std::time::Duration;

use aw_bench::soak::{run, SoakOptions};

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
    // The latencies are in the printed report: a speed goal belongs to `aw-soak` (the long
    // version, BENCHMARKS.md), not to a verdict that a slow or busy machine could change.
    assert_eq!((report.lost, report.duplicated), (0, 0));
    assert_eq!(
        (report.lost_after_restart, report.duplicated_after_restart),
        (0, 0)
    );
}
