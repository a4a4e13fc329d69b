//! A deterministic, realistic year of ActivityWatch data for one host, for benchmarks and
//! load tests.
//!
//! Shape (defaults, seed-stable): working days 08:30–18:00 with a lunch break and short
//! breaks, lighter weekends, nights away; `aw-watcher-afk` alternates `not-afk`/`afk` over
//! the whole year (~12,700 events); `aw-watcher-window` records short events with sub-second
//! gaps during active time, ~50 applications with a Zipf-skewed share of time and thousands of
//! distinct window titles per month (~375,000 events); `aw-watcher-web-chrome` records tab
//! events with url, title, audible, incognito and tabCount while the browser is focused
//! (~155,000 events).

use std::fmt::Write;

/// SplitMix64: small, fast and deterministic.
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform integer below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform integer in `lo..=hi`.
    pub fn int_in(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1).max(1) as u64) as i64
    }

    /// One of `items`, uniformly (`items` must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Exponentially distributed with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

/// One generated event (times in ns since the epoch).
#[derive(Clone, Debug)]
pub struct GenEvent {
    /// Start, ns.
    pub start: i64,
    /// Duration, ns.
    pub duration: i64,
    /// `data` as compact JSON text.
    pub data: String,
}

/// A generated bucket.
pub struct GenBucket {
    /// Bucket id.
    pub id: String,
    /// Bucket type.
    pub type_: String,
    /// Client name.
    pub client: String,
    /// Events, oldest first.
    pub events: Vec<GenEvent>,
}

/// The whole dataset.
pub struct Dataset {
    /// Host name used in the bucket ids.
    pub host: String,
    /// First day, 00:00 UTC, in ns.
    pub start: i64,
    /// End of the last day, in ns.
    pub end: i64,
    /// Window, AFK and browser buckets.
    pub buckets: Vec<GenBucket>,
}

const NS: i64 = 1_000_000_000;
const DAY: i64 = 86_400 * NS;

/// Application names; index 0 is the most used. Chrome (the most used) is the browser the web watcher sees.
pub const APPS: [&str; 50] = [
    "Google-chrome",
    "code",
    "Alacritty",
    "Slack",
    "firefox",
    "Spotify",
    "thunderbird",
    "zoom",
    "obsidian",
    "jetbrains-idea",
    "Gimp",
    "libreoffice-writer",
    "libreoffice-calc",
    "Signal",
    "discord",
    "vlc",
    "evince",
    "nautilus",
    "gnome-terminal",
    "postman",
    "dbeaver",
    "Inkscape",
    "blender",
    "krita",
    "steam",
    "telegram-desktop",
    "teams",
    "mpv",
    "qbittorrent",
    "keepassxc",
    "virt-manager",
    "wireshark",
    "gitk",
    "meld",
    "calibre",
    "anki",
    "zotero",
    "Audacity",
    "obs",
    "kdenlive",
    "filezilla",
    "remmina",
    "transmission",
    "gedit",
    "kate",
    "okular",
    "htop",
    "xournalpp",
    "element",
    "bitwarden",
];

const SITES: [&str; 24] = [
    "github.com",
    "www.google.com",
    "stackoverflow.com",
    "docs.rs",
    "www.youtube.com",
    "news.ycombinator.com",
    "en.wikipedia.org",
    "mail.google.com",
    "calendar.google.com",
    "www.reddit.com",
    "twitter.com",
    "crates.io",
    "developer.mozilla.org",
    "www.rust-lang.org",
    "meet.google.com",
    "docs.google.com",
    "drive.google.com",
    "app.slack.com",
    "www.notion.so",
    "linear.app",
    "www.figma.com",
    "medium.com",
    "www.amazon.com",
    "music.youtube.com",
];

/// Zipf-like weights: app `i` gets weight `1 / (i + 1)^s`.
fn cumulative_weights(n: usize, s: f64) -> Vec<f64> {
    let mut acc = 0.0;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        acc += 1.0 / ((i + 1) as f64).powf(s);
        out.push(acc);
    }
    out
}

fn pick(cum: &[f64], rng: &mut Rng) -> usize {
    let x = rng.unit() * cum[cum.len() - 1];
    cum.partition_point(|&c| c < x).min(cum.len() - 1)
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl Dataset {
    /// Generates `days` days starting at `start_day` (ns, midnight UTC) for `host`.
    pub fn generate(seed: u64, host: &str, start_day: i64, days: i64) -> Dataset {
        let mut rng = Rng::new(seed);
        let app_weights = cumulative_weights(APPS.len(), 1.25);
        let site_weights = cumulative_weights(SITES.len(), 1.0);
        let mut window = Vec::new();
        let mut afk = Vec::new();
        let mut web = Vec::new();
        let mut afk_cursor = start_day;
        for day in 0..days {
            let midnight = start_day + day * DAY;
            let month = day / 30;
            let weekend = day % 7 >= 5;
            // Active sessions of the day: (start, end) in ns.
            let mut sessions = Vec::new();
            if weekend {
                if rng.unit() < 0.7 {
                    let s = midnight + (rng.range(10.0, 14.0) * 3600.0) as i64 * NS;
                    sessions.push((s, s + (rng.range(1.0, 3.0) * 3600.0) as i64 * NS));
                }
            } else {
                let mut t = midnight + (rng.range(8.3, 9.2) * 3600.0) as i64 * NS;
                let lunch = midnight + (rng.range(12.0, 12.5) * 3600.0) as i64 * NS;
                let stop = midnight + (rng.range(17.3, 18.2) * 3600.0) as i64 * NS;
                let mut lunch_done = false;
                while t < stop {
                    let len = (rng.exp(17.0 * 60.0) as i64 + 120) * NS;
                    let mut end = (t + len).min(stop);
                    if !lunch_done && end > lunch {
                        end = lunch;
                        lunch_done = true;
                        if end > t {
                            sessions.push((t, end));
                        }
                        t = lunch + (rng.range(40.0, 65.0) * 60.0) as i64 * NS;
                        continue;
                    }
                    sessions.push((t, end));
                    t = end + (rng.range(1.0, 6.0) * 60.0) as i64 * NS;
                }
            }
            for &(s, e) in &sessions {
                if s > afk_cursor {
                    afk.push(GenEvent {
                        start: afk_cursor,
                        duration: s - afk_cursor,
                        data: r#"{"status":"afk"}"#.into(),
                    });
                }
                afk.push(GenEvent {
                    start: s,
                    duration: e - s,
                    data: r#"{"status":"not-afk"}"#.into(),
                });
                afk_cursor = e;
                // Window events inside the session: short events, sub-second gaps.
                let mut t = s;
                while t < e {
                    let app = pick(&app_weights, &mut rng);
                    let dur = ((rng.exp(17.6) + 1.0) * NS as f64) as i64;
                    let dur = dur.min(e - t);
                    let title_pool = 40 + 400 / (app + 1);
                    let title_id = rng.below(title_pool);
                    let title = if APPS[app] == "Google-chrome" {
                        let site = SITES[pick(&site_weights, &mut rng)];
                        let title = format!("{site} page {} (m{month})", title_id);
                        // Tab events while the browser is focused.
                        let tabs = if rng.unit() < 0.28 { 2 } else { 1 };
                        let mut ts = t;
                        for k in 0..tabs {
                            let tab_dur = if k + 1 == tabs {
                                t + dur - ts
                            } else {
                                dur / tabs as i64
                            };
                            let site2 = if k == 0 {
                                site
                            } else {
                                SITES[pick(&site_weights, &mut rng)]
                            };
                            let url = format!(
                                "https://{site2}/path/{}/{}?q={}",
                                month,
                                rng.below(200),
                                rng.below(50)
                            );
                            let data = format!(
                                "{{\"audible\":{},\"incognito\":{},\"tabCount\":{},\"title\":{},\"url\":{}}}",
                                rng.unit() < 0.05,
                                rng.unit() < 0.02,
                                1 + rng.below(30),
                                json_str(&format!("{site2} page {} (m{month})", title_id)),
                                json_str(&url)
                            );
                            web.push(GenEvent {
                                start: ts,
                                duration: tab_dur.max(0),
                                data,
                            });
                            ts += tab_dur;
                        }
                        format!("{title} - Google Chrome")
                    } else {
                        format!("{} document {} (m{month})", APPS[app], title_id)
                    };
                    let mut data = String::with_capacity(64);
                    let _ = write!(
                        data,
                        "{{\"app\":{},\"title\":{}}}",
                        json_str(APPS[app]),
                        json_str(&title)
                    );
                    window.push(GenEvent {
                        start: t,
                        duration: dur,
                        data,
                    });
                    t += dur + (rng.range(0.0, 0.9) * NS as f64) as i64;
                }
            }
        }
        let end = start_day + days * DAY;
        if end > afk_cursor {
            afk.push(GenEvent {
                start: afk_cursor,
                duration: end - afk_cursor,
                data: r#"{"status":"afk"}"#.into(),
            });
        }
        let bucket = |id: String, type_: &str, client: &str, events| GenBucket {
            id,
            type_: type_.into(),
            client: client.into(),
            events,
        };
        Dataset {
            host: host.to_string(),
            start: start_day,
            end,
            buckets: vec![
                bucket(
                    format!("aw-watcher-window_{host}"),
                    "currentwindow",
                    "aw-watcher-window",
                    window,
                ),
                bucket(
                    format!("aw-watcher-afk_{host}"),
                    "afkstatus",
                    "aw-watcher-afk",
                    afk,
                ),
                bucket(
                    format!("aw-watcher-web-chrome_{host}"),
                    "web.tab.current",
                    "aw-client-web",
                    web,
                ),
            ],
        }
    }

    /// Total number of events.
    pub fn event_count(&self) -> usize {
        self.buckets.iter().map(|b| b.events.len()).sum()
    }

    /// The export document (`POST /api/0/import` body) for the whole dataset.
    pub fn export_json(&self) -> String {
        let mut out = String::with_capacity(self.event_count() * 190);
        out.push_str("{\"buckets\":{");
        for (i, b) in self.buckets.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let created = aw_models::timestamp::format(&aw_models::timestamp::from_ns(self.start));
            let _ = write!(
                out,
                "{}:{{\"id\":{},\"type\":{},\"client\":{},\"hostname\":{},\"created\":\"{created}\",\"data\":{{}},\"events\":[",
                json_str(&b.id),
                json_str(&b.id),
                json_str(&b.type_),
                json_str(&b.client),
                json_str(&self.host)
            );
            for (k, e) in b.events.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                let ts = aw_models::timestamp::format(&aw_models::timestamp::from_ns(e.start));
                let _ = write!(
                    out,
                    "{{\"timestamp\":\"{ts}\",\"duration\":{},\"data\":{}}}",
                    e.duration as f64 / 1e9,
                    e.data
                );
            }
            out.push_str("]}");
        }
        out.push_str("}}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_year_has_the_intended_shape() {
        let d = Dataset::generate(42, "host", 1_672_531_200 * NS, 365);
        let counts: Vec<usize> = d.buckets.iter().map(|b| b.events.len()).collect();
        println!("{counts:?}");
        assert!((300_000..450_000).contains(&counts[0]), "{counts:?}");
        assert!((10_000..16_000).contains(&counts[1]), "{counts:?}");
        assert!((120_000..190_000).contains(&counts[2]), "{counts:?}");
        let json = d.export_json();
        let parsed: aw_models::BucketsExport = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed.buckets.len(), 3);
    }
}
