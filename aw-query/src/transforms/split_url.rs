//! `split_url_events`.

use std::sync::{Arc, OnceLock};

use url::Url;

use crate::data::{Interner, Key, Val};
use crate::event::{patch_data, Data, QEvent};
use crate::fxhash::FxHashMap;
use crate::key::MarkKeys;
use crate::parts::for_parts;

/// The fields added for one URL: `$domain`, `$params`, `$path`, `$protocol`.
type Parts = Option<[Val; 4]>;

/// URL text → the parts to add (`None`: not an absolute URL).
type UrlCache = FxHashMap<Arc<str>, Parts>;

/// The keys of the four parts and `url` in the objects this function makes: mark keys
/// ([`MarkKeys`]), kept here and nowhere else.
///
/// This is how an object already split is told apart without parsing its URL again (the
/// canonical desktop query splits a year of browser events twice): an object holding these
/// five keys got them from this function, with its parts made from its `url`, even after
/// other patches (`categorize` adding `$category`); a patch that sets any of the five anew
/// brings an ordinary key, and the object no longer counts as split.
fn split_keys() -> &'static MarkKeys<5> {
    static KEYS: OnceLock<MarkKeys<5>> = OnceLock::new();
    KEYS.get_or_init(|| MarkKeys::new(["$domain", "$params", "$path", "$protocol", "url"]))
}

/// Whether `data` was made by [`split_url_events`] (see [`split_keys`]).
fn already_split(data: &Data, keys: &MarkKeys<5>) -> bool {
    data.is_marked_by(keys)
}

/// Adds `$protocol`, `$domain`, `$path` and `$params` to every event whose `data.url` is a
/// string holding an absolute URL (WHATWG parsing); other events are unchanged.
///
/// Browser events repeat the same URLs many times, so each distinct URL is parsed once per
/// part of the list (long lists are worked on in parts on the CPU pool) and its parts are
/// shared by all events with that URL; the parts' texts are shared too (a year has a few
/// dozen domains and protocols, and paths and queries repeat). Objects this function made
/// are left as they are without looking at their URL ([`split_keys`]).
pub(crate) fn split_url_events(mut events: Vec<QEvent>) -> Vec<QEvent> {
    let keys = split_keys();
    for_parts(
        &mut events,
        || (UrlCache::default(), Interner::default()),
        |(cache, strings), part| {
            patch_data(part, |data| {
                if already_split(data, keys) {
                    return None;
                }
                let Some(Val::Str(url)) = data.get("url") else {
                    return None;
                };
                let parts = cache
                    .entry(Arc::clone(url))
                    .or_insert_with(|| split(url, strings));
                let parts = parts.as_ref()?;
                let mut patch: Vec<(Key, Val)> = (0..4)
                    .filter_map(|i| keys.key(i))
                    .zip(parts.iter().cloned())
                    .collect();
                // The same `url`, under the key that marks the object as split.
                patch.extend(keys.key(4).map(|k| (k, Val::Str(Arc::clone(url)))));
                Some(patch)
            });
        },
    );
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
        let out = split_url_events(vec![ev(0.0, 1.0, &[("url", url)])]);
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
        e.data = e.data.patched(vec![(Key::from("url"), Val::Num(5.into()))]);
        let out = split_url_events(vec![e]);
        assert_eq!(out[0].data.len(), 1);
    }

    /// Only objects this function made are taken as split: parts stored with the data (or
    /// set by a patch from elsewhere) are made again from the URL, and other patches of a
    /// split object (a category) keep it split.
    #[test]
    fn only_its_own_objects_count_as_split() {
        let stored = ev(
            0.0,
            1.0,
            &[
                ("url", "https://www.a.example/x?q"),
                ("$domain", "stale.example"),
                ("$params", "q"),
                ("$path", "/x"),
                ("$protocol", "https"),
            ],
        );
        let split = split_url_events(vec![stored]);
        assert_eq!(split[0].data["$domain"].as_str(), Some("a.example"));
        let categorized = split[0]
            .data
            .patched(vec![(Key::from("$category"), Val::Null)]);
        let mut e = split[0].clone();
        e.data = categorized.clone();
        let again = split_url_events(vec![e.clone()]);
        assert!(Data::ptr_eq(&again[0].data, &categorized));
        // A part set again by another patch brings its own key: split again.
        e.data = categorized.patched(vec![(Key::from("$domain"), Val::str("other"))]);
        let redone = split_url_events(vec![e.clone()]);
        assert_eq!(redone[0].data["$domain"].as_str(), Some("a.example"));
        // And so does a new URL.
        e.data = categorized.patched(vec![(Key::from("url"), Val::str("http://b.example/"))]);
        let redone = split_url_events(vec![e]);
        assert_eq!(redone[0].data["$domain"].as_str(), Some("b.example"));
        assert_eq!(redone[0].data["$protocol"].as_str(), Some("http"));
    }
}
