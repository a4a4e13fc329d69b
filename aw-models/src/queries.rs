//! The canonical dashboard queries: the desktop query of the web UI's Activity view
//! (window activity filtered by AFK, browser activity while the browser is focused,
//! categories) and its parts, statement for statement what the built-in dashboard
//! (`aw-server/webui/queries.js`) sends, so a script counts what the dashboard shows (a
//! browser test runs both over the same data). The browsers and their window names are
//! read from the dashboard's own definition (`webui/browsers.js`).
//!
//! Every string put into a query is written by [`crate::query_literal`], so a bucket id
//! with a quote, a semicolon or a newline reads back as exactly that id. A bucket id that
//! cannot be written (it ends with a backslash) makes the `try_` builders fail; the others
//! then return a query that the server refuses with an error ("Undefined variable
//! `query_cannot_be_written`") rather than one that reads another bucket. Categories that
//! cannot be written are left out ([`classes_to_query`]).

use crate::classes::{classes_to_query, Category};
use crate::query_literal::{self, LiteralError};

/// A browser whose tabs are counted: the window watcher's `app` names of its windows, and a
/// case-insensitive pattern for the names' variants.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct Browser {
    /// Exact `app` names.
    pub names: Vec<String>,
    /// A pattern (`filter_keyvals_regex`) for further `app` names.
    pub regex: String,
}

/// The dashboard's definition of the browsers: a JavaScript module whose object is strict
/// JSON (`aw-server/webui/browsers.js`), the one place they are written.
const BROWSERS_MODULE: &str = include_str!("../../aw-server/webui/browsers.js");

/// The browsers by the name their web watcher's bucket ids contain, in the definition's
/// order (which decides between two names one id contains).
pub fn browsers() -> &'static [(String, Browser)] {
    static BROWSERS: std::sync::OnceLock<Vec<(String, Browser)>> = std::sync::OnceLock::new();
    BROWSERS.get_or_init(|| {
        let module = BROWSERS_MODULE;
        let start = module
            .find("= {")
            .map_or(module.len(), |at| at + "= ".len());
        let end = module.rfind('}').map_or(start, |at| at + 1);
        module
            .get(start..end)
            .and_then(|json| serde_json::from_str::<InOrder>(json).ok())
            .map_or_else(Vec::new, |o| o.0)
    })
}

/// A JSON object's entries in the order written (serde_json's map sorts its keys).
struct InOrder(Vec<(String, Browser)>);

impl<'de> serde::Deserialize<'de> for InOrder {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = InOrder;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of browsers")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<InOrder, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(InOrder(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// The host the dashboard shows first: this server's host when it has buckets, else the
/// host of the first window bucket, else of any bucket (as `defaultHost` in
/// `webui/queries.js`).
pub fn default_host<'a>(buckets: &'a [crate::Bucket], server_host: &'a str) -> &'a str {
    if buckets.iter().any(|b| b.hostname == server_host) {
        return server_host;
    }
    buckets
        .iter()
        .find(|b| b._type == "currentwindow")
        .or(buckets.first())
        .map_or(server_host, |b| b.hostname.as_str())
}

/// The type of the bucket that holds activities added by hand (a meeting away from the
/// computer), one per host, named by [`manual_bucket_id`]. Ours: the reference has no such
/// bucket, and ignores it.
pub const MANUAL_BUCKET_TYPE: &str = "manual";

/// `aw-manual_<host>`: the bucket the dashboard adds activities of `host` to by hand.
pub fn manual_bucket_id(host: &str) -> String {
    format!("aw-manual_{host}")
}

/// The buckets of one host that the desktop query reads ([`host_buckets`]); an id is empty
/// when the host has no bucket of that kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostBuckets {
    /// The window watcher's.
    pub window: String,
    /// The AFK watcher's.
    pub afk: String,
    /// Activities added by hand ([`MANUAL_BUCKET_TYPE`]).
    pub manual: String,
    /// The web watchers' whose id names a known browser, sorted.
    pub browsers: Vec<String>,
}

/// The buckets the dashboard reads for `host` (as `hostBuckets` in `webui/queries.js`):
/// its window, AFK and manual buckets (the usual id if there, else the first by id of
/// that type; empty when none), and every browser bucket of the host (or of host
/// `unknown`) whose id names a known browser, sorted.
pub fn host_buckets(buckets: &[crate::Bucket], host: &str) -> HostBuckets {
    let pick = |type_: &str, preferred: String| {
        let mut all: Vec<&str> = buckets
            .iter()
            .filter(|b| b._type == type_ && b.hostname == host)
            .map(|b| b.id.as_str())
            .collect();
        if all.contains(&preferred.as_str()) {
            return preferred;
        }
        all.sort_unstable();
        all.first().map_or_else(String::new, |id| id.to_string())
    };
    let mut browsers: Vec<String> = buckets
        .iter()
        .filter(|b| {
            b._type == "web.tab.current"
                && (b.hostname == host || b.hostname == "unknown")
                && browser_of_bucket(&b.id).is_some()
        })
        .map(|b| b.id.clone())
        .collect();
    browsers.sort();
    HostBuckets {
        window: pick("currentwindow", format!("aw-watcher-window_{host}")),
        afk: pick("afkstatus", format!("aw-watcher-afk_{host}")),
        manual: pick(MANUAL_BUCKET_TYPE, manual_bucket_id(host)),
        browsers,
    }
}

/// What the desktop query needs to know.
#[derive(Clone, Debug, Default)]
pub struct DesktopQueryParams {
    /// The window watcher's bucket id.
    pub bid_window: String,
    /// The AFK watcher's bucket id; empty when the host has none (then all window time
    /// counts, as on the dashboard).
    pub bid_afk: String,
    /// Browser watcher bucket ids (`aw-watcher-web-…`).
    pub bid_browsers: Vec<String>,
    /// The bucket of activities added by hand ([`MANUAL_BUCKET_TYPE`]); empty when none.
    /// Its events count as active time even where the AFK bucket says away, and take the
    /// place of the window time they overlap (the window shown while away is not what was
    /// done).
    pub bid_manual: String,
    /// Categories for `categorize`.
    pub classes: Vec<Category>,
    /// Only keep events of these categories (empty: all).
    pub filter_classes: Vec<Vec<String>>,
    /// Only count time when the user was not AFK.
    pub filter_afk: bool,
    /// Count audible browser tabs as active even when AFK.
    pub include_audible: bool,
    /// Also return every categorised event under `events` (what scripts may want; the web
    /// dashboard does not ask for it, and over a year it is most of the response).
    pub include_events: bool,
}

/// What the infallible builders return when a bucket id cannot be written.
fn unwritable() -> Vec<String> {
    vec![
        "# A bucket id ends with a backslash, which a query cannot write.".to_string(),
        "RETURN = query_cannot_be_written;".to_string(),
    ]
}

/// The browser a web-watcher bucket id belongs to, if any: the last of [`browsers`] whose
/// name the id contains (as the dashboard decides).
pub fn browser_of_bucket(bucket_id: &str) -> Option<&'static (String, Browser)> {
    browsers()
        .iter()
        .rev()
        .find(|(name, _)| bucket_id.contains(name.as_str()))
}

/// The statements that define `events` (window events, AFK-filtered, categorised),
/// `not_afk` and `browser_events`; see [`try_canonical_events`] for a bucket id that cannot
/// be written.
pub fn canonical_events(p: &DesktopQueryParams) -> Vec<String> {
    try_canonical_events(p).unwrap_or_else(|_| unwritable())
}

/// [`canonical_events`], or why a bucket id of `p` cannot be written into a query.
pub fn try_canonical_events(p: &DesktopQueryParams) -> Result<Vec<String>, LiteralError> {
    let quote = query_literal::string;
    let mut q = vec![format!(
        "events = flood(query_bucket({}));",
        quote(&p.bid_window)?
    )];
    let afk = !p.bid_afk.is_empty();
    if afk {
        q.push(format!(
            "not_afk = flood(query_bucket({}));",
            quote(&p.bid_afk)?
        ));
        q.push("not_afk = filter_keyvals(not_afk, \"status\", [\"not-afk\"]);".to_string());
    } else {
        q.push("not_afk = [];".to_string());
    }
    q.push("browser_events = [];".to_string());
    let mut any_browser = false;
    for bid in &p.bid_browsers {
        let Some((browser, known)) = browser_of_bucket(bid) else {
            continue;
        };
        any_browser = true;
        let names = query_literal::value(&serde_json::json!(known.names))?;
        let regex = quote(&known.regex)?;
        q.extend([
            format!("events_{browser} = flood(query_bucket({}));", quote(bid)?),
            format!("window_{browser} = filter_keyvals(events, \"app\", {names});"),
            format!("window_{browser} = sort_by_timestamp(concat(window_{browser}, filter_keyvals_regex(events, \"app\", {regex})));"),
            format!("events_{browser} = filter_period_intersect(events_{browser}, window_{browser});"),
            format!("events_{browser} = split_url_events(events_{browser});"),
            format!("browser_events = concat(browser_events, events_{browser});"),
            "browser_events = sort_by_timestamp(browser_events);".to_string(),
        ]);
    }
    if afk && p.include_audible && any_browser {
        q.push("audible_events = filter_keyvals(browser_events, \"audible\", [true]);".into());
        q.push("not_afk = period_union(not_afk, audible_events);".into());
    }
    if afk && p.filter_afk {
        q.push("events = filter_period_intersect(events, not_afk);".into());
    }
    if !p.bid_manual.is_empty() {
        q.push(format!(
            "manual = sort_by_timestamp(query_bucket({}));",
            quote(&p.bid_manual)?
        ));
        if afk {
            q.push("not_afk = period_union(not_afk, manual);".into());
        }
        q.push("events = union_no_overlap(manual, events);".into());
    }
    q.push(format!(
        "events = categorize(events, {});",
        classes_to_query(&p.classes)
    ));
    if !p.filter_classes.is_empty() {
        let filter = query_literal::value(&serde_json::json!(p.filter_classes))?;
        q.push(format!(
            "events = filter_keyvals(events, \"$category\", {filter});"
        ));
    }
    Ok(q)
}

/// The full desktop query: what the Activity view shows (top apps, titles, categories,
/// active time, browser domains/urls/titles), one statement per line; see
/// [`try_full_desktop_query`] for a bucket id that cannot be written.
pub fn full_desktop_query(p: &DesktopQueryParams) -> String {
    try_full_desktop_query(p).unwrap_or_else(|_| unwritable().join("\n"))
}

/// [`full_desktop_query`], or why a bucket id of `p` cannot be written into a query.
pub fn try_full_desktop_query(p: &DesktopQueryParams) -> Result<String, LiteralError> {
    let mut q = try_canonical_events(p)?;
    q.extend(
        [
            "title_events = sort_by_duration(merge_events_by_keys(events, [\"app\", \"title\"]));",
            "app_events = sort_by_duration(merge_events_by_keys(title_events, [\"app\"]));",
            "cat_events = sort_by_duration(merge_events_by_keys(events, [\"$category\"]));",
            "app_events = limit_events(app_events, 100);",
            "title_events = limit_events(title_events, 100);",
            "duration = sum_durations(events);",
            "browser_urls = limit_events(sort_by_duration(merge_events_by_keys(browser_events, [\"url\"])), 100);",
            "browser_domains = limit_events(sort_by_duration(merge_events_by_keys(browser_events, [\"$domain\"])), 100);",
            "browser_titles = limit_events(sort_by_duration(merge_events_by_keys(browser_events, [\"title\"])), 100);",
            "browser_duration = sum_durations(browser_events);",
        ]
        .map(str::to_string),
    );
    let events = if p.include_events {
        "\"events\": events, "
    } else {
        ""
    };
    q.push(format!(
        "RETURN = {{{events}\"window\": {{\"app_events\": app_events, \"title_events\": title_events, \"cat_events\": cat_events, \"active_events\": not_afk, \"duration\": duration}}, \"browser\": {{\"domains\": browser_domains, \"urls\": browser_urls, \"titles\": browser_titles, \"duration\": browser_duration}}}};"
    ));
    Ok(q.join("\n"))
}

/// The browser-only query over the given web buckets (domains, urls, titles, duration),
/// without the window/AFK filtering; see [`try_browser_query`] for a bucket id that cannot
/// be written.
pub fn browser_query(bid_browsers: &[String]) -> String {
    try_browser_query(bid_browsers).unwrap_or_else(|_| unwritable().join("\n"))
}

/// [`browser_query`], or why one of the bucket ids cannot be written into a query.
pub fn try_browser_query(bid_browsers: &[String]) -> Result<String, LiteralError> {
    let mut q = vec!["browser_events = [];".to_string()];
    for bid in bid_browsers {
        q.push(format!(
            "browser_events = concat(browser_events, flood(query_bucket({})));",
            query_literal::string(bid)?
        ));
    }
    q.extend(
        [
            "browser_events = split_url_events(sort_by_timestamp(browser_events));",
            "domains = limit_events(sort_by_duration(merge_events_by_keys(browser_events, [\"$domain\"])), 100);",
            "urls = limit_events(sort_by_duration(merge_events_by_keys(browser_events, [\"url\"])), 100);",
            "titles = limit_events(sort_by_duration(merge_events_by_keys(browser_events, [\"title\"])), 100);",
            "RETURN = {\"domains\": domains, \"urls\": urls, \"titles\": titles, \"duration\": sum_durations(browser_events)};",
        ]
        .map(str::to_string),
    );
    Ok(q.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classes::default_classes;

    #[test]
    fn desktop_query_mentions_every_part() {
        let q = full_desktop_query(&DesktopQueryParams {
            bid_window: "aw-watcher-window_h".into(),
            bid_afk: "aw-watcher-afk_h".into(),
            bid_browsers: vec![
                "aw-watcher-web-chrome_h".into(),
                "aw-watcher-unknown".into(),
            ],
            classes: default_classes(),
            filter_afk: true,
            include_audible: true,
            ..Default::default()
        });
        for part in [
            "query_bucket(\"aw-watcher-window_h\")",
            "events_chrome",
            "categorize(events, [[[\"Work\"]",
            "period_union",
            "RETURN =",
        ] {
            assert!(q.contains(part), "{part}: {q}");
        }
        assert!(!q.contains("aw-watcher-unknown"));
    }

    #[test]
    fn the_browsers_are_the_dashboards_in_its_order() {
        let names: Vec<&str> = browsers().iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["chrome", "firefox", "opera", "brave", "edge", "vivaldi", "orion", "yandex"]
        );
        let (name, chrome) = browser_of_bucket("aw-watcher-web-chrome_h").unwrap();
        assert_eq!(name, "chrome");
        assert!(chrome.names.iter().any(|n| n == "Google Chrome"));
        assert_eq!(chrome.regex, "(?i)^(google[ -]?chrome|chromium)");
    }
}
