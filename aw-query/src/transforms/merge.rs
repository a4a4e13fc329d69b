//! `merge_events_by_keys`.

use crate::event::{Data, PerObject, QEvent};
use crate::fxhash::{FxHashMap, FxHasher};
use crate::parts::{for_read_parts, for_shares};
use std::hash::Hasher;

/// No further group with the same hash.
const END: usize = usize::MAX;

/// Groups events by their values for `keys` and returns one event per group: the group's
/// first event (timestamp and full data) with the summed duration and no id.
///
/// Values are grouped by JSON text equality (so `1` and `1.0` differ; lists and objects are
/// allowed), decided without serialising. Events lacking any key are
/// dropped; no keys gives `[]`. Groups come out in order of first appearance (the reference
/// leaves the order unspecified; callers sort afterwards). O(n): one structural hash and one
/// hash-map lookup per event, no allocation per event.
///
/// Long lists are merged in two parallel steps on the CPU pool:
/// 1. The key hash of every event, in contiguous parts. Events sharing one data object
///    (see [`crate::event::intern_rows`]) are hashed once per object.
/// 2. The groups, in shares by hash: every thread reads all the hashes and merges the
///    events whose hash is its own, so all events of a group meet on one thread, in order.
///    The shares' groups are then interleaved back into order of first appearance.
///
/// Sharing by hash rather than by position matters for lists with many groups (a year of
/// browser events has a distinct URL nearly per event): merged by position, every part's
/// groups had to be merged once more on one thread, about as long as the parts took.
pub(crate) fn merge_events_by_keys(events: &[QEvent], keys: &[String]) -> Vec<QEvent> {
    if keys.is_empty() {
        return Vec::new();
    }
    // One list per contiguous part, in order: read as one list without copying them into one.
    let hashes: Vec<Vec<u64>> = for_read_parts(events, Vec::new, |hashes, part| {
        *hashes = key_hashes(part, keys);
    });
    let shares = for_shares(events.len(), Vec::new, |groups, share, shares| {
        *groups = merge_share(events, &hashes, keys, share, shares);
    });
    in_first_appearance_order(shares)
}

/// Stands for "lacks a key" in a list of hashes (8 bytes an event, not an `Option`'s 16: a
/// year's list is megabytes). A real hash equal to it is stored as [`NO_KEY`] − 1, which
/// only puts its group with that hash's: groups are told apart by their values anyway.
const NO_KEY: u64 = u64::MAX;

/// The key hash of each event ([`NO_KEY`] when it lacks a key), once per shared data object.
fn key_hashes(events: &[QEvent], keys: &[String]) -> Vec<u64> {
    let mut by_data = PerObject::new();
    let hash_of = |data: &Data| match key_hash(data, keys) {
        None => NO_KEY,
        Some(NO_KEY) => NO_KEY - 1,
        Some(h) => h,
    };
    let mut hashes = Vec::with_capacity(events.len());
    for e in events {
        if crate::budget::expired() {
            break;
        }
        let h = by_data.get(&e.data, hash_of);
        hashes.push(h);
    }
    // One hash per event even when the deadline cut the loop short, so the parts' lists
    // read as one stay aligned with the events (the evaluation then fails on the deadline).
    hashes.resize(events.len(), NO_KEY);
    hashes
}

/// Which of `shares` shares a group with key hash `h` belongs to (the high bits: an Fx
/// hash's low bits depend on the input's low bits alone).
fn share_of(h: u64, shares: usize) -> usize {
    ((h >> 32) as usize) % shares.max(1)
}

/// The groups of the events whose hash falls in `share`, each with the index of its first
/// event, in that order.
fn merge_share(
    events: &[QEvent],
    hashes: &[Vec<u64>],
    keys: &[String],
    share: usize,
    shares: usize,
) -> Vec<(usize, QEvent)> {
    // hash → most recent group with that hash; `chain[i]` → previous group with the same hash.
    let mut heads: FxHashMap<u64, usize> = FxHashMap::default();
    let mut chain: Vec<usize> = Vec::new();
    let mut out: Vec<(usize, QEvent)> = Vec::new();
    // The hashes alone decide which events are this share's: the others are not touched.
    for (index, &h) in hashes.iter().flatten().enumerate() {
        if h == NO_KEY {
            continue;
        }
        if share_of(h, shares) != share {
            continue;
        }
        let Some(e) = events.get(index) else {
            break;
        };
        if crate::budget::expired() {
            break;
        }
        let mut g = heads.get(&h).copied().unwrap_or(END);
        while let Some((_, group)) = out.get_mut(g) {
            if Data::ptr_eq(&group.data, &e.data) || same_keys(&group.data, &e.data, keys) {
                group.duration = group.duration.saturating_add(e.duration);
                break;
            }
            g = chain.get(g).copied().unwrap_or(END);
        }
        if g == END {
            chain.push(heads.insert(h, out.len()).unwrap_or(END));
            let mut first = e.clone();
            first.id = None;
            out.push((index, first));
        }
    }
    out
}

/// Interleaves the shares' groups (each in order of first appearance) into one list in
/// order of first appearance.
fn in_first_appearance_order(shares: Vec<Vec<(usize, QEvent)>>) -> Vec<QEvent> {
    let total = shares.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut shares: Vec<_> = shares
        .into_iter()
        .map(|s| s.into_iter().peekable())
        .collect();
    loop {
        let next = shares
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| s.peek().map(|(index, _)| (*index, i)))
            .min();
        let Some((_, i)) = next else {
            break;
        };
        if let Some((_, group)) = shares.get_mut(i).and_then(Iterator::next) {
            out.push(group);
        }
    }
    out
}

/// Hash of the values of `keys`, or `None` when one is missing.
fn key_hash(data: &Data, keys: &[String]) -> Option<u64> {
    let mut h = FxHasher::default();
    for k in keys {
        data.get(k)?.hash_into(&mut h);
    }
    Some(h.finish())
}

fn same_keys(a: &Data, b: &Data, keys: &[String]) -> bool {
    keys.iter().all(|k| match (a.get(k), b.get(k)) {
        (Some(x), Some(y)) => x.text_eq(y),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Interner, Val};
    use crate::transforms::testutil::{ev, S};
    use serde_json::json;

    fn val(v: serde_json::Value) -> Val {
        Val::from_json(&v, &mut Interner::default())
    }

    #[test]
    fn groups_keep_first_data_and_sum() {
        let mut e1 = ev(0.0, 1.0, &[("app", "a"), ("title", "t1")]);
        e1.id = Some(5);
        let events = vec![
            e1,
            ev(1.0, 2.0, &[("app", "b")]),
            ev(3.0, 3.0, &[("app", "a"), ("title", "t2")]),
            ev(6.0, 4.0, &[("title", "x")]),
        ];
        let out = merge_events_by_keys(&events, &["app".to_string()]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].duration, 4 * S);
        assert_eq!(out[0].data["title"].as_str(), Some("t1"));
        assert_eq!(out[0].id, None);
        assert_eq!(out[1].duration, 2 * S);
    }

    #[test]
    fn empty_keys_and_json_text_identity() {
        assert!(merge_events_by_keys(&[ev(0.0, 1.0, &[])], &[]).is_empty());
        let mk = |v: serde_json::Value| QEvent::new(0, S, Data::from_pairs(&[("n", val(v))]));
        let out = merge_events_by_keys(
            &[
                mk(json!(1)),
                mk(json!(1.0)),
                mk(json!(["a", "b"])),
                mk(json!(["a", "b"])),
                mk(json!(-0.0)),
                mk(json!(0.0)),
                mk(json!({"x": [1, null]})),
                mk(json!({"x": [1, null]})),
                mk(json!(u64::MAX)),
                mk(json!(u64::MAX)),
                mk(json!(-1)),
            ],
            &["n".to_string()],
        );
        let texts: Vec<String> = out
            .iter()
            .map(|e| e.data["n"].to_json().to_string())
            .collect();
        assert_eq!(
            texts,
            vec![
                "1",
                "1.0",
                "[\"a\",\"b\"]",
                "-0.0",
                "0.0",
                "{\"x\":[1,null]}",
                "18446744073709551615",
                "-1"
            ]
        );
        // Values whose concatenated texts would collide stay apart.
        let d1 = Data::from_pairs(&[("a", Val::str("x")), ("b", Val::str("y"))]);
        let d2 = Data::from_pairs(&[("a", Val::str("xy")), ("b", Val::str(""))]);
        let out = merge_events_by_keys(
            &[QEvent::new(0, S, d1), QEvent::new(0, S, d2)],
            &["a".to_string(), "b".to_string()],
        );
        assert_eq!(out.len(), 2);
    }

    /// A long list with a group nearly per event (as a year of browser URLs), merged in
    /// shares by hash: every group once, with its first event and its whole duration, in
    /// order of first appearance.
    #[test]
    fn long_lists_with_many_groups_merge_in_shares() {
        let n = crate::parts::MIN_PARALLEL_EVENTS * 3 + 11;
        let events: Vec<QEvent> = (0..n)
            .map(|i| {
                let url = format!("https://example.org/{}", (i * 7919) % (n - 500));
                let mut e = ev(i as f64, (i % 13) as f64 + 1.0, &[("url", &url)]);
                e.id = Some(i as i64);
                e
            })
            .collect();
        let out =
            crate::parts::on_test_pool(|| merge_events_by_keys(&events, &["url".to_string()]));
        let mut expected: Vec<(String, i64, i64)> = Vec::new();
        let mut seen = std::collections::HashMap::new();
        for e in &events {
            let url = e.data["url"].as_str().unwrap_or_default().to_string();
            let g = *seen.entry(url.clone()).or_insert_with(|| {
                expected.push((url, e.start, 0));
                expected.len() - 1
            });
            expected[g].2 += e.duration;
        }
        let got: Vec<(String, i64, i64)> = out
            .iter()
            .map(|e| {
                let url = e.data["url"].as_str().unwrap_or_default().to_string();
                (url, e.start, e.duration)
            })
            .collect();
        assert_eq!(got, expected);
        assert!(out.iter().all(|e| e.id.is_none()));
    }

    #[test]
    fn shared_data_groups_by_address() {
        let a = ev(0.0, 1.0, &[("app", "a")]);
        let mut b = ev(5.0, 2.0, &[("app", "a")]);
        b.data = a.data.clone();
        let c = ev(9.0, 4.0, &[("x", "y")]);
        let mut d = c.clone();
        d.start += S;
        let out = merge_events_by_keys(&[a, c, b, d], &["app".to_string()]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].duration, 3 * S);
    }
}
