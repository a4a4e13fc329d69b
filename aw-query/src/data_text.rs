//! Parsing stored event-data text straight into an [`Obj`].
//!
//! A year of events holds hundreds of thousands of distinct data texts (browser events
//! differ in tab count and URL). Parsing each into a `serde_json::Map` first and converting
//! that builds and frees a B-tree with owned key strings and a value tree per event; this
//! parser builds the object's entries directly, interning keys and strings as it reads
//! them. The result is the same as `Obj::from_json` of the parsed map (a property test
//! checks it): keys sorted by bytes, a repeated key keeps its last value, numbers keep
//! serde_json's integer/float distinction.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

use crate::data::{Interner, Key, Obj, Val};
use std::sync::Arc;

/// Parses `text`, which must be a JSON object, into an [`Obj`] whose keys and strings come
/// from `strings`. Fails like `serde_json::from_str::<Map<String, Value>>` would.
pub(crate) fn parse_obj(text: &str, strings: &mut Interner) -> serde_json::Result<Obj> {
    let mut de = serde_json::Deserializer::from_str(text);
    let obj = ObjSeed(strings).deserialize(&mut de)?;
    de.end()?;
    Ok(obj)
}

/// Reads one object.
struct ObjSeed<'s>(&'s mut Interner);

/// String values up to this many bytes are interned (keys always are).
const SHARED_VALUE_LEN: usize = 32;

/// Reads one object key.
struct KeySeed<'s>(&'s mut Interner);

/// Reads one value.
struct ValSeed<'s>(&'s mut Interner);

impl<'de> DeserializeSeed<'de> for ObjSeed<'_> {
    type Value = Obj;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Obj, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ObjSeed<'_> {
    type Value = Obj;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Obj, A::Error> {
        let mut entries: Vec<(Key, Val)> = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(key) = map.next_key_seed(KeySeed(&mut *self.0))? {
            let val = map.next_value_seed(ValSeed(&mut *self.0))?;
            entries.push((key, val));
        }
        Ok(Obj::from_entries(entries))
    }
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: Error>(self, s: &str) -> Result<Key, E> {
        Ok(self.0.key(s))
    }
}

impl<'de> DeserializeSeed<'de> for ValSeed<'_> {
    type Value = Val;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Val, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValSeed<'_> {
    type Value = Val;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: Error>(self) -> Result<Val, E> {
        Ok(Val::Null)
    }

    fn visit_bool<E: Error>(self, b: bool) -> Result<Val, E> {
        Ok(Val::Bool(b))
    }

    fn visit_i64<E: Error>(self, n: i64) -> Result<Val, E> {
        Ok(Val::Num(Number::from(n)))
    }

    fn visit_u64<E: Error>(self, n: u64) -> Result<Val, E> {
        Ok(Val::Num(Number::from(n)))
    }

    fn visit_f64<E: Error>(self, n: f64) -> Result<Val, E> {
        Number::from_f64(n)
            .map(Val::Num)
            .ok_or_else(|| E::custom("not a JSON number"))
    }

    fn visit_str<E: Error>(self, s: &str) -> Result<Val, E> {
        // Short values (app names, statuses, domains) repeat across objects and are shared;
        // long ones (titles, URLs) are mostly unique to their object, where looking them up
        // costs more than it saves.
        if s.len() <= SHARED_VALUE_LEN {
            Ok(Val::Str(self.0.get(s)))
        } else {
            Ok(Val::Str(Arc::from(s)))
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Val, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(item) = seq.next_element_seed(ValSeed(&mut *self.0))? {
            items.push(item);
        }
        Ok(Val::Arr(items.into()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Val, A::Error> {
        ObjSeed(self.0).visit_map(map).map(Val::Obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    /// The conversion this parser replaces.
    fn via_map(text: &str) -> serde_json::Result<Obj> {
        let map: Map<String, Value> = serde_json::from_str(text)?;
        Ok(Obj::from_json(&map, &mut Interner::default()))
    }

    fn same(text: &str) {
        let direct = parse_obj(text, &mut Interner::default());
        match (direct, via_map(text)) {
            (Ok(a), Ok(b)) => {
                assert!(a.text_eq(&b), "{text}");
                assert_eq!(a.to_json(), b.to_json(), "{text}");
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{text}: {a:?} vs {b:?}"),
        }
    }

    #[test]
    fn matches_the_map_conversion_on_awkward_inputs() {
        for text in [
            r#"{}"#,
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2,"b":3,"a":4}"#,
            r#"{"n":-1,"u":18446744073709551615,"big":18446744073709551616,"f":1.0,"e":1e3}"#,
            r#"{"s":"esc\"aped \u00e9 \ud83d\ude00","x":null,"t":true,"nested":{"z":[1,{"b":2,"a":1}],"y":[]}}"#,
            r#"{"k":"v"} "#,
            r#"{"k":"v"} x"#,
            r#"[1,2]"#,
            r#""text""#,
            r#"{"a":1"#,
            r#"{"a":1e400}"#,
            "",
        ] {
            same(text);
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        same(&format!(r#"{{"d":{deep}}}"#));
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[a-c\"\\\\é😀]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(("[a-d$]{0,3}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn matches_the_map_conversion(
            entries in prop::collection::vec(("[a-e]{0,3}", json()), 0..8),
        ) {
            // Written by hand, so keys can repeat and come in any order.
            let body: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), v))
                .collect();
            same(&format!("{{{}}}", body.join(",")));
        }
    }
}
