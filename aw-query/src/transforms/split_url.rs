//! `split_url_events` (spec §6.8).

use std::sync::Arc;

use url::Url;

use crate::data::{Interner, Key, Val};
use crate::event::{patch_data, QEvent};
use crate::fxhash::FxHashMap;
use crate::parts::for_parts;

/// The fields added for one URL, in the order of [`FIELDS`].
type Parts = Option<[Val; 4]>;

/// URL text → the parts to add (`None`: not an absolute URL).
type UrlMap = FxHashMap<Arc<str>, Parts>;

/// Parsed URLs, kept for a whole run: the maps the parts of each call built. They are not
/// merged into one: a year of browser events holds a hundred thousand distinct URLs, and
/// hashing each again into one map cost more than looking in two or three.
#[derive(Default)]
pub struct UrlCache {
    maps: Vec<UrlMap>,
}

/// More maps than this are merged into one (a program that splits many lists).
const MAX_MAPS: usize = 8;

impl UrlCache {
    fn get(&self, url: &str) -> Option<&Parts> {
        self.maps.iter().find_map(|m| m.get(url))
    }

    fn add(&mut self, maps: Vec<UrlMap>) {
        self.maps.extend(maps.into_iter().filter(|m| !m.is_empty()));
        if self.maps.len() > MAX_MAPS {
            let mut all = std::mem::take(&mut self.maps).into_iter();
            let mut one = all.next().unwrap_or_default();
            all.for_each(|m| one.extend(m));
            self.maps.push(one);
        }
    }

    /// Number of URLs known.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.maps.iter().map(|m| m.len()).sum()
    }
}

/// The keys `split_url_events` sets.
const FIELDS: [&str; 4] = ["$domain", "$params", "$path", "$protocol"];

/// Adds `$protocol`, `$domain`, `$path` and `$params` to every event whose `data.url` is a
/// string holding an absolute URL (WHATWG parsing); other events are unchanged.
///
/// Browser events repeat the same URLs many times, so each distinct URL is parsed once (per
/// `cache`, which lives for a whole run) and its parts are shared by all events with that URL.
/// Long lists are worked on in parts on the CPU pool: each part reads `cache` and keeps the
/// URLs it parses itself, which join `cache` afterwards. The parts' texts are shared too
/// (a year has a few dozen domains and protocols, and paths and queries repeat).
pub fn split_url_events(mut events: Vec<QEvent>, cache: &mut UrlCache) -> Vec<QEvent> {
    let keys: [Key; 4] = FIELDS.map(Arc::from);
    let known: &UrlCache = cache;
    let parsed = for_parts(
        &mut events,
        || (UrlMap::default(), Interner::default()),
        |(own, strings), part| {
            patch_data(part, |data| {
                let Some(Val::Str(url)) = data.get("url") else {
                    return None;
                };
                let parts = match known.get(url) {
                    Some(parts) => parts,
                    None => own
                        .entry(Arc::clone(url))
                        .or_insert_with(|| split(url, strings)),
                };
                let Some(parts) = parts else {
                    return None;
                };
                // Already split (the canonical query splits browser events twice): leave it
                // alone.
                if FIELDS
                    .iter()
                    .zip(parts)
                    .all(|(k, v)| data.get(k).is_some_and(|d| d.text_eq(v)))
                {
                    return None;
                }
                Some(keys.iter().cloned().zip(parts.iter().cloned()).collect())
            });
        },
    );
    cache.add(parsed.into_iter().map(|(own, _)| own).collect());
    events
}

fn split(text: &str, strings: &mut Interner) -> Parts {
    let url = Url::parse(text).ok()?;
    let scheme = url.scheme();
    let domain = match url.host_str() {
        Some(host) if !host.is_empty() => {
            let mut h = host;
            while let Some(rest) = h.strip_prefix("www.") {
                h = rest;
            }
            h
        }
        _ => scheme,
    };
    let mut val = |s: &str| Val::Str(strings.get(s));
    Some([
        val(domain),
        val(url.query().unwrap_or("")),
        val(url.path()),
        val(scheme),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::testutil::ev;
    use serde_json::{json, Value};

    fn parts(url: &str) -> Option<Value> {
        let out = split_url_events(
            vec![ev(0.0, 1.0, &[("url", url)])],
            &mut UrlCache::default(),
        );
        let d = &out[0].data;
        d.get("$domain").map(|_| {
            json!([
                d["$protocol"].to_json(),
                d["$domain"].to_json(),
                d["$path"].to_json(),
                d["$params"].to_json()
            ])
        })
    }

    #[test]
    fn spec_examples() {
        assert_eq!(
            parts("http://www.google.com/path?query=1"),
            Some(json!(["http", "google.com", "/path", "query=1"]))
        );
        assert_eq!(
            parts("https://www.www.Example.com:8080/p/a%20b?x=1&y=2#frag"),
            Some(json!(["https", "example.com", "/p/a%20b", "x=1&y=2"]))
        );
        assert_eq!(parts("file:///x"), Some(json!(["file", "file", "/x", ""])));
        assert_eq!(
            parts("about:blank"),
            Some(json!(["about", "about", "blank", ""]))
        );
        assert_eq!(parts("not a url"), None);
        assert_eq!(parts("/relative/path"), None);
    }

    #[test]
    fn non_string_url_untouched() {
        let mut e = ev(0.0, 1.0, &[]);
        e.data = e.data.patched(vec![(Arc::from("url"), Val::Num(5.into()))]);
        let out = split_url_events(vec![e], &mut UrlCache::default());
        assert_eq!(out[0].data.len(), 1);
    }
}
