//! What the soak reports: per request type its counts, rate and latencies, and for the
//! whole run the server's memory and CPU and the exactly-once check, with the Markdown form
//! `aw-soak` prints.

/// Numbers of one request type.
#[derive(Clone, Debug, Default)]
pub struct KindReport {
    /// The request type.
    pub name: String,
    /// Requests answered with a 2xx status.
    pub ok: usize,
    /// Requests answered otherwise, or not at all.
    pub errors: usize,
    /// Answered requests per second of load.
    pub per_second: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// The first error seen, for the report.
    pub first_error: Option<String>,
}

/// What the soak measured.
#[derive(Clone, Debug, Default)]
pub struct SoakReport {
    /// One entry per request type.
    pub kinds: Vec<KindReport>,
    /// Server RSS in MB: before the load, the highest seen, and right after the load.
    pub rss_start_mb: f64,
    /// See `rss_start_mb`.
    pub rss_peak_mb: f64,
    /// See `rss_start_mb`.
    pub rss_end_mb: f64,
    /// Server CPU seconds (user + system) spent during the load.
    pub server_cpu_s: f64,
    /// Server CPU per answered request (of every kind), µs.
    pub cpu_per_request_us: f64,
    /// How long the load ran.
    pub seconds: f64,
    /// Inserts answered 200.
    pub acknowledged_inserts: usize,
    /// Acknowledged markers missing / stored more than once, before the restart.
    pub lost: usize,
    /// See `lost`.
    pub duplicated: usize,
    /// The same after a restart.
    pub lost_after_restart: usize,
    /// See `lost_after_restart`.
    pub duplicated_after_restart: usize,
}

impl SoakReport {
    /// Whether nothing failed, was lost or was stored twice.
    pub fn clean(&self) -> bool {
        self.kinds.iter().all(|k| k.errors == 0)
            && self.lost + self.duplicated + self.lost_after_restart + self.duplicated_after_restart
                == 0
    }

    /// The report as a Markdown table and summary lines.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from(
            "| request | ok | errors | per s | p50 ms | p99 ms |\n|---|---|---|---|---|---|\n",
        );
        for k in &self.kinds {
            out.push_str(&format!(
                "| {} | {} | {} | {:.1} | {:.3} | {:.3} |\n",
                k.name, k.ok, k.errors, k.per_second, k.p50_ms, k.p99_ms
            ));
        }
        out.push_str(&format!(
            "\n{:.0} s of load; server CPU {:.1} s ({:.0}% of one core, {:.0} µs per answered \
             request); RSS start {:.0} MB, peak {:.0} MB, end {:.0} MB\n",
            self.seconds,
            self.server_cpu_s,
            100.0 * self.server_cpu_s / self.seconds.max(1e-9),
            self.cpu_per_request_us,
            self.rss_start_mb,
            self.rss_peak_mb,
            self.rss_end_mb
        ));
        out.push_str(&format!(
            "acknowledged inserts {}: lost {}, duplicated {}; after a restart: lost {}, \
             duplicated {}\n",
            self.acknowledged_inserts,
            self.lost,
            self.duplicated,
            self.lost_after_restart,
            self.duplicated_after_restart
        ));
        for k in self.kinds.iter().filter(|k| k.first_error.is_some()) {
            out.push_str(&format!(
                "first {} error: {}\n",
                k.name,
                k.first_error.as_deref().unwrap_or("")
            ));
        }
        out
    }
}
