//! The interpreter's representation of event data: a compact JSON object.
//!
//! `serde_json::Map` is a B-tree of separately allocated key strings; looking up a key in a
//! cold map touches several cache lines, and a year of events is far bigger than the cache.
//! Inside the interpreter, event data is instead an [`Obj`]: one reference-counted allocation
//! holding the sorted entries (so reaching them is a single pointer hop), whose keys and
//! string values are shared (one allocation per distinct string per bucket query, see
//! [`Interner`]), so copying values (categories, URL parts) into many events costs no
//! allocation and repeated titles and URLs stay in the cache. Conversion from and to
//! `serde_json` happens only at the edges (`query_bucket` in, the final result out) and
//! preserves the JSON text exactly (numbers keep their integer/float representation).

use std::cmp::Ordering;
use std::hash::Hasher;
use std::sync::Arc;

use serde_json::{Map, Number, Value};

use crate::fxhash::{FxHashMap, FxHasher};

pub(crate) use crate::key::Key;

/// A JSON value inside event data.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, with serde_json's integer/float distinction.
    Num(Number),
    /// A string.
    Str(Arc<str>),
    /// An array.
    Arr(Arc<[Val]>),
    /// An object.
    Obj(Obj),
}

/// The size of a `serde_json::Value` (and of a map entry's overhead), for estimates of
/// JSON forms (here and in `value.rs`).
pub(crate) const JSON_SLOT: usize = std::mem::size_of::<serde_json::Value>() + 16;

impl Val {
    /// Roughly how many bytes a `serde_json` copy of this value takes.
    pub(crate) fn json_weight(&self) -> usize {
        match self {
            Val::Null | Val::Bool(_) | Val::Num(_) => JSON_SLOT,
            Val::Str(s) => JSON_SLOT + s.len(),
            Val::Arr(items) => items
                .iter()
                .fold(JSON_SLOT, |sum, v| sum.saturating_add(v.json_weight())),
            Val::Obj(o) => o.json_weight(),
        }
    }
}

/// A JSON object: entries sorted by key (byte order, like `serde_json::Map`), keys unique.
///
/// Immutable and cheap to clone (a reference count); changes build a new object
/// ([`Obj::patched`]).
#[derive(Clone, Debug)]
pub(crate) struct Obj {
    entries: Arc<[(Key, Val)]>,
}

impl Default for Obj {
    fn default() -> Self {
        Obj {
            entries: Arc::from([]),
        }
    }
}

/// Deduplicates strings (keys and string values) while converting the objects of one bucket
/// query.
#[derive(Default)]
pub(crate) struct Interner {
    /// By hash ([`crate::fxhash::hash_str`]), so growing the map never hashes a string again.
    strings: FxHashMap<u64, Arc<str>>,
    /// Keys seen lately, by [`key_slot`]: the objects of one bucket have the same few keys,
    /// found here with one short comparison instead of a hash and a look-up in `keys`.
    recent_keys: [Option<Key>; KEY_SLOTS],
    /// The keys met by this interner, by hash: the process-wide table ([`Key::new`], behind
    /// a lock) is asked once per distinct key.
    keys: FxHashMap<u64, Key>,
}

/// Size of [`Interner`]'s recent keys.
const KEY_SLOTS: usize = 32;

/// A key's slot in [`Interner`]'s recent keys: from its length and its first and last bytes
/// (the keys of one bucket differ in them).
fn key_slot(s: &str) -> usize {
    let b = s.as_bytes();
    let first = b.first().copied().unwrap_or(0) as usize;
    let last = b.last().copied().unwrap_or(0) as usize;
    (b.len() ^ first.wrapping_mul(7) ^ last.wrapping_mul(3)) % KEY_SLOTS
}

/// Byte order of two object keys. Keys are short: a loop over their bytes beats a call to
/// `memcmp`, which `str`'s own comparison makes.
fn key_cmp(a: &str, b: &str) -> Ordering {
    a.bytes().cmp(b.bytes())
}

/// Puts `entries` in key order, keeping the last of repeated keys (as a parsed JSON map, and
/// a sequence of sets, do). Entries already in order, the common case, are only checked.
fn sort_keys_last_wins(entries: &mut Vec<(Key, Val)>) {
    if entries
        .windows(2)
        .all(|w| key_cmp(&w[0].0, &w[1].0) == Ordering::Less)
    {
        return;
    }
    // Reversed, a stable sort puts the last of equal keys first; dedup keeps it.
    entries.reverse();
    entries.sort_by(|a, b| key_cmp(&a.0, &b.0));
    entries.dedup_by(|later, kept| later.0 == kept.0);
}

impl Interner {
    /// The object key `s` (see [`Key`]), found at once when it repeats object after object.
    pub(crate) fn key(&mut self, s: &str) -> Key {
        let slot = key_slot(s);
        if let Some(Some(known)) = self.recent_keys.get(slot) {
            if **known == *s {
                return known.clone();
            }
        }
        let key = match self.keys.entry(crate::fxhash::hash_str(s)) {
            std::collections::hash_map::Entry::Occupied(k) if **k.get() == *s => k.get().clone(),
            std::collections::hash_map::Entry::Occupied(_) => Key::new(s),
            std::collections::hash_map::Entry::Vacant(slot) => slot.insert(Key::new(s)).clone(),
        };
        if let Some(entry) = self.recent_keys.get_mut(slot) {
            *entry = Some(key.clone());
        }
        key
    }

    /// The shared string equal to `s` (a string whose 64-bit hash another has is simply not
    /// shared).
    pub(crate) fn get(&mut self, s: &str) -> Arc<str> {
        use std::collections::hash_map::Entry;
        match self.strings.entry(crate::fxhash::hash_str(s)) {
            Entry::Occupied(known) if **known.get() == *s => Arc::clone(known.get()),
            Entry::Occupied(_) => Arc::from(s),
            Entry::Vacant(slot) => Arc::clone(slot.insert(Arc::from(s))),
        }
    }
}

impl Obj {
    /// An empty object.
    pub(crate) fn new() -> Self {
        Obj::default()
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Val> {
        self.entry(key).map(|(_, v)| v)
    }

    /// Whether this object holds every key of `marks` (the transform owning them made it;
    /// see [`crate::key::MarkKeys`]).
    pub(crate) fn is_marked_by<const N: usize>(&self, marks: &crate::key::MarkKeys<N>) -> bool {
        marks.all_in(|text| self.entry(text).map(|(k, _)| k))
    }

    fn entry(&self, key: &str) -> Option<&(Key, Val)> {
        // Few entries and shared (cache-hot) keys: a linear scan beats anything cleverer
        // (a binary search was measured slower).
        self.entries
            .iter()
            .find(|(k, _)| k.len() == key.len() && k.bytes().eq(key.bytes()))
    }

    /// Whether `key` is present.
    #[cfg(test)]
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A copy of this object with the given keys set (replaced or added; of keys repeated in
    /// `patch` the last wins). One merge of two sorted lists.
    pub(crate) fn patched(&self, mut patch: Vec<(Key, Val)>) -> Obj {
        sort_keys_last_wins(&mut patch);
        let mut entries: Vec<(Key, Val)> = Vec::with_capacity(self.entries.len() + patch.len());
        let mut old = self.entries.iter().peekable();
        for (key, val) in patch {
            while let Some(before) = old.next_if(|(k, _)| key_cmp(k, &key) == Ordering::Less) {
                entries.push(before.clone());
            }
            // A key set again: its old value goes.
            old.next_if(|(k, _)| key_cmp(k, &key) == Ordering::Equal);
            entries.push((key, val));
        }
        entries.extend(old.cloned());
        Obj {
            entries: Arc::from(entries),
        }
    }

    /// Roughly how many bytes a `serde_json` copy of this object takes (for the memory
    /// budget: the JSON answer copies the data of every event it holds).
    pub(crate) fn json_weight(&self) -> usize {
        self.entries.iter().fold(JSON_SLOT, |sum, (k, v)| {
            sum.saturating_add(JSON_SLOT + k.len() + v.json_weight())
        })
    }

    /// Whether both are the same object (not just equal).
    pub(crate) fn ptr_eq(a: &Obj, b: &Obj) -> bool {
        Arc::ptr_eq(&a.entries, &b.entries)
    }

    /// The object's address: an identity for memoising per-object work during one call
    /// (only while the object is alive).
    pub(crate) fn addr(&self) -> usize {
        Arc::as_ptr(&self.entries) as *const u8 as usize
    }

    /// Whether other clones of this object exist.
    pub(crate) fn is_shared(&self) -> bool {
        Arc::strong_count(&self.entries) > 1
    }

    /// Entries in key order: the keys' texts (an object never hands out its keys, see
    /// [`crate::key::MarkKeys`]).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Val)> {
        self.entries.iter().map(|(k, v)| (&**k, v))
    }

    /// Values in key order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Val> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Converts a `serde_json` object, sharing strings through `strings` (tests build data
    /// this way; events from a source are parsed from their text, `data_text.rs`).
    #[cfg(test)]
    pub(crate) fn from_json(map: &Map<String, Value>, strings: &mut Interner) -> Obj {
        // Already sorted unless serde_json's `preserve_order` feature is enabled.
        Obj::from_entries(
            map.iter()
                .map(|(k, v)| (strings.key(k), Val::from_json(v, strings)))
                .collect(),
        )
    }

    /// An object from entries in any order; of repeated keys the last wins (as in a parsed
    /// JSON map).
    pub(crate) fn from_entries(mut entries: Vec<(Key, Val)>) -> Obj {
        sort_keys_last_wins(&mut entries);
        Obj {
            entries: Arc::from(entries),
        }
    }

    /// Converts back to a `serde_json` object (keys inserted in sorted order).
    pub(crate) fn to_json(&self) -> Map<String, Value> {
        let mut map = Map::new();
        for (k, v) in self.entries.iter() {
            map.insert(k.to_string(), v.to_json());
        }
        map
    }

    /// Whether both objects serialise to the same JSON text.
    pub(crate) fn text_eq(&self, other: &Obj) -> bool {
        self.entries.len() == other.entries.len()
            && self
                .entries
                .iter()
                .zip(other.entries.iter())
                .all(|((k1, v1), (k2, v2))| k1 == k2 && v1.text_eq(v2))
    }

    /// A hash consistent with [`Obj::text_eq`].
    pub(crate) fn hash_into(&self, h: &mut FxHasher) {
        h.write_usize(self.entries.len());
        for (k, v) in self.entries.iter() {
            h.write(k.as_bytes());
            h.write_u8(0xff);
            v.hash_into(h);
        }
    }

    /// Builds an object from string pairs (tests).
    #[cfg(test)]
    pub(crate) fn from_pairs(pairs: &[(&str, Val)]) -> Obj {
        Obj::new().patched(
            pairs
                .iter()
                .map(|(k, v)| (Key::from(*k), v.clone()))
                .collect(),
        )
    }
}

/// Panicking lookup, for tests only.
#[cfg(test)]
impl std::ops::Index<&str> for Obj {
    type Output = Val;
    fn index(&self, key: &str) -> &Val {
        self.get(key).expect("key present")
    }
}

impl Val {
    /// A string value.
    pub(crate) fn str(s: &str) -> Val {
        Val::Str(Arc::from(s))
    }

    /// The string, if this is one.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Converts a `serde_json` value, sharing strings through `strings` (tests only, as
    /// [`Obj::from_json`]).
    #[cfg(test)]
    pub(crate) fn from_json(v: &Value, strings: &mut Interner) -> Val {
        match v {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => Val::Num(n.clone()),
            Value::String(s) => Val::Str(strings.get(s)),
            Value::Array(items) => {
                Val::Arr(items.iter().map(|x| Val::from_json(x, strings)).collect())
            }
            Value::Object(m) => Val::Obj(Obj::from_json(m, strings)),
        }
    }

    /// Converts to a `serde_json` value.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Num(n) => Value::Number(n.clone()),
            Val::Str(s) => Value::String(s.to_string()),
            Val::Arr(items) => Value::Array(items.iter().map(Val::to_json).collect()),
            Val::Obj(o) => Value::Object(o.to_json()),
        }
    }

    /// Whether both values serialise to the same JSON text: integers never equal floats
    /// (`1` vs `1.0`), floats compare by bits (`0.0` vs `-0.0`).
    pub(crate) fn text_eq(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::Null, Val::Null) => true,
            (Val::Bool(a), Val::Bool(b)) => a == b,
            (Val::Num(a), Val::Num(b)) => number_text_eq(a, b),
            (Val::Str(a), Val::Str(b)) => Arc::ptr_eq(a, b) || a == b,
            (Val::Arr(a), Val::Arr(b)) => {
                Arc::ptr_eq(a, b)
                    || (a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.text_eq(y)))
            }
            (Val::Obj(a), Val::Obj(b)) => Obj::ptr_eq(a, b) || a.text_eq(b),
            _ => false,
        }
    }

    /// Equality where numbers compare by value (`1 == 1.0`), recursively; used by
    /// `filter_keyvals` (COMPATIBILITY.md, server #10).
    pub(crate) fn value_eq(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::Num(a), Val::Num(b)) => number_value_eq(a, b),
            (Val::Arr(a), Val::Arr(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.value_eq(y))
            }
            (Val::Obj(a), Val::Obj(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.get(k).is_some_and(|w| v.value_eq(w)))
            }
            _ => self.text_eq(other),
        }
    }

    /// A hash consistent with [`Val::text_eq`].
    pub(crate) fn hash_into(&self, h: &mut FxHasher) {
        match self {
            Val::Null => h.write_u8(0),
            Val::Bool(b) => h.write_u8(1 + u8::from(*b)),
            Val::Num(n) => hash_number(h, n),
            Val::Str(s) => {
                h.write_u8(5);
                h.write(s.as_bytes());
                h.write_u8(0xff);
            }
            Val::Arr(items) => {
                h.write_u8(6);
                h.write_usize(items.len());
                items.iter().for_each(|x| x.hash_into(h));
            }
            Val::Obj(o) => {
                h.write_u8(7);
                o.hash_into(h);
            }
        }
    }
}

fn hash_number(h: &mut FxHasher, n: &Number) {
    if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
        h.write_u8(3);
        h.write_u64(f.to_bits());
    } else if let Some(i) = n.as_i64() {
        h.write_u8(4);
        h.write_u64(i as u64);
    } else if let Some(u) = n.as_u64() {
        h.write_u8(4);
        h.write_u64(u);
    }
}

/// Same JSON text: same kind (integer or float) and same value (floats by bits).
fn number_text_eq(x: &Number, y: &Number) -> bool {
    if x.is_f64() || y.is_f64() {
        x.is_f64() && y.is_f64() && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
    } else {
        x.as_i64() == y.as_i64() && x.as_u64() == y.as_u64()
    }
}

/// Same numeric value, whatever the representation.
/// Numbers compare by exact value (COMPATIBILITY.md, server #10): integers as integers, floats as floats, and
/// an integer equals a float only if the float is integral and converts to exactly that
/// integer. Going through `f64` instead would make 9007199254740993 equal 9007199254740992.0
/// (both round to the same float).
fn number_value_eq(x: &Number, y: &Number) -> bool {
    match (integer_of(x), integer_of(y)) {
        (Some(a), Some(b)) => a == b,
        (Some(i), None) => y.as_f64().is_some_and(|f| float_is_integer(f, i)),
        (None, Some(i)) => x.as_f64().is_some_and(|f| float_is_integer(f, i)),
        (None, None) => match (x.as_f64(), y.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
    }
}

/// The value of an integer number (`i64` or `u64` in serde_json), `None` for a float.
fn integer_of(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Whether `f` is exactly the integer `i`.
fn float_is_integer(f: f64, i: i128) -> bool {
    // Every integral float below 2^127 in magnitude converts to i128 exactly.
    f.is_finite() && f.fract() == 0.0 && f.abs() < 1.7e38 && f as i128 == i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn val(v: Value) -> Val {
        Val::from_json(&v, &mut Interner::default())
    }

    #[test]
    fn round_trips_exactly() {
        let v = json!({"b": [1, 1.0, -0.0, "x", null, true, {"z": 1, "a": u64::MAX}], "a": -5});
        assert_eq!(val(v.clone()).to_json().to_string(), v.to_string());
    }

    #[test]
    fn text_equality_matches_serialisation() {
        let vals = [
            json!(1),
            json!(1.0),
            json!(-0.0),
            json!(0),
            json!("1"),
            json!([1]),
            json!({"a": 1}),
            json!({"a": 1.0}),
            json!({"a": 1, "b": 2}),
            json!(null),
            json!(true),
            json!(u64::MAX),
            json!(-1),
        ];
        for a in &vals {
            for b in &vals {
                let (ta, tb) = (a.to_string(), b.to_string());
                let same_text = ta == tb;
                assert_eq!(
                    val(a.clone()).text_eq(&val(b.clone())),
                    same_text,
                    "{a} {b}"
                );
                if same_text {
                    let (mut h1, mut h2) = (FxHasher::default(), FxHasher::default());
                    val(a.clone()).hash_into(&mut h1);
                    val(b.clone()).hash_into(&mut h2);
                    assert_eq!(h1.finish(), h2.finish());
                }
            }
        }
    }

    #[test]
    fn value_equality_compares_numbers_by_value() {
        assert!(val(json!(1)).value_eq(&val(json!(1.0))));
        // Above 2^53 an integer equals a float only if the float is exactly that integer.
        let two53 = 9_007_199_254_740_992i64;
        assert!(val(json!(two53)).value_eq(&val(json!(two53 as f64))));
        assert!(!val(json!(two53 + 1)).value_eq(&val(json!(two53 as f64))));
        assert!(!val(json!(two53 as f64)).value_eq(&val(json!(two53 + 1))));
        assert!(val(json!(two53 + 1)).value_eq(&val(json!(two53 + 1))));
        assert!(val(json!(u64::MAX)).value_eq(&val(json!(u64::MAX))));
        assert!(!val(json!(u64::MAX)).value_eq(&val(json!(u64::MAX as f64))));
        assert!(val(json!(i64::MIN)).value_eq(&val(json!(i64::MIN as f64))));
        assert!(!val(json!(3)).value_eq(&val(json!(3.5))));
        assert!(!val(json!(-3)).value_eq(&val(json!(3.0))));
        assert!(val(json!([1, {"a": 2}])).value_eq(&val(json!([1.0, {"a": 2.0}]))));
        assert!(!val(json!([1])).value_eq(&val(json!([1, 2]))));
        assert!(!val(json!("1")).value_eq(&val(json!(1))));
    }

    #[test]
    fn patch_keeps_order_and_replaces() {
        let o = Obj::new()
            .patched(vec![(Key::from("b"), Val::Null)])
            .patched(vec![
                (Key::from("$a"), Val::Bool(true)),
                (Key::from("b"), Val::Bool(false)),
            ]);
        assert_eq!(
            Value::Object(o.to_json()).to_string(),
            r#"{"$a":true,"b":false}"#
        );
        assert!(o.contains_key("$a") && !o.contains_key("c"));
        // An unsorted patch with a repeated key (the last wins), keys before, between and
        // after the object's, one replaced.
        let p = o.patched(vec![
            (Key::from("z"), Val::Null),
            (Key::from("b"), Val::str("first")),
            (Key::from("$"), Val::Null),
            (Key::from("a"), Val::Null),
            (Key::from("b"), Val::str("last")),
        ]);
        assert_eq!(
            Value::Object(p.to_json()).to_string(),
            r#"{"$":null,"$a":true,"a":null,"b":"last","z":null}"#
        );
        let keys: Vec<&str> = p.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["$", "$a", "a", "b", "z"]);
        assert_eq!(p.get("b").and_then(Val::as_str), Some("last"));
        assert!(p.get("bb").is_none() && p.get("").is_none());
    }
}
