//! `merge_events_by_keys` (spec §6.2).

use crate::event::{Data, QEvent};
use crate::fxhash::{FxHashMap, FxHasher};
use crate::parts::for_read_parts;
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
/// hash-map lookup per event, no allocation per event. Events sharing one data object (see
/// [`crate::event::intern`]) are grouped by the object's address without reading it again.
///
/// Long lists are merged in parts on the CPU pool, and the parts' groups merged once more
/// (in order, so first appearances and their data stay those of the whole list).
pub fn merge_events_by_keys(events: &[QEvent], keys: &[String]) -> Vec<QEvent> {
    if keys.is_empty() {
        return Vec::new();
    }
    let mut parts = for_read_parts(events, Vec::new, |groups, part| {
        *groups = merge_part(part, keys);
    });
    if parts.len() == 1 {
        return parts.pop().unwrap_or_default();
    }
    merge_part(&parts.concat(), keys)
}

/// [`merge_events_by_keys`] of one part, on this thread.
fn merge_part(events: &[QEvent], keys: &[String]) -> Vec<QEvent> {
    // hash → most recent group with that hash; `chain[i]` → previous group with the same hash.
    let mut heads: FxHashMap<u64, usize> = FxHashMap::default();
    let mut chain: Vec<usize> = Vec::new();
    // Address of a data object → its group (or `END` when it lacks a key), so events sharing
    // an object are grouped without touching it again. No data object is allocated during the
    // call, so an address looked up (that of a live object) is never that of a freed one.
    let mut by_data: FxHashMap<usize, usize> = FxHashMap::default();
    let mut out: Vec<QEvent> = Vec::new();
    for e in events {
        if crate::budget::expired() {
            break;
        }
        // Looked up by address first: a hit does not touch the object.
        let addr = e.data.addr();
        if let Some(&g) = by_data.get(&addr) {
            if let Some(group) = out.get_mut(g) {
                group.duration = group.duration.saturating_add(e.duration);
            }
            continue;
        }
        // An object no other event holds (most browser events) is not remembered: no later
        // event can have it, and the map stays small.
        let shared = e.data.is_shared();
        let Some(h) = key_hash(&e.data, keys) else {
            if shared {
                by_data.insert(addr, END);
            }
            continue;
        };
        let mut i = heads.get(&h).copied().unwrap_or(END);
        while let Some(g) = out.get_mut(i) {
            if same_keys(&g.data, &e.data, keys) {
                g.duration = g.duration.saturating_add(e.duration);
                break;
            }
            i = chain.get(i).copied().unwrap_or(END);
        }
        if i == END {
            i = out.len();
            chain.push(heads.insert(h, i).unwrap_or(END));
            let mut first = e.clone();
            first.id = None;
            out.push(first);
        }
        if shared {
            by_data.insert(addr, i);
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
