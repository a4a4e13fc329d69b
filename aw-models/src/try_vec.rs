//! A list that keeps the elements it can parse and silently skips the rest.

use serde::de::{DeserializeOwned, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::marker::PhantomData;

/// A `Vec` whose deserialisation skips elements that do not parse, as the reference does for
/// the `events` of a created or imported bucket: one malformed event must not make a whole
/// export file unimportable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TryVec<T>(pub Vec<T>);

impl<T> TryVec<T> {
    /// Wraps a vector.
    pub fn new(items: Vec<T>) -> Self {
        TryVec(items)
    }

    /// The parsed elements.
    pub fn into_inner(self) -> Vec<T> {
        self.0
    }
}

impl<T: Serialize> Serialize for TryVec<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for TryVec<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TryVecVisitor<T>(PhantomData<T>);

        impl<'de, T: DeserializeOwned> Visitor<'de> for TryVecVisitor<T> {
            type Value = TryVec<T>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
                // Each element is first read as a generic JSON value (which always succeeds
                // for well-formed JSON) and only then converted, so a bad element can be
                // skipped without aborting the surrounding parse.
                while let Some(value) = seq.next_element::<serde_json::Value>()? {
                    if let Ok(item) = serde_json::from_value(value) {
                        items.push(item);
                    }
                }
                Ok(TryVec(items))
            }
        }

        deserializer.deserialize_seq(TryVecVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Event;
    use serde_json::json;

    #[test]
    fn skips_bad_elements() {
        let v: TryVec<Event> = serde_json::from_value(json!([
            {"timestamp": "2020-01-01T00:00:00Z", "data": {}},
            {"timestamp": "bad", "data": {}},
            3,
            {"timestamp": "2020-01-01T00:00:01Z", "duration": 1, "data": {"a": 1}}
        ]))
        .unwrap();
        assert_eq!(v.0.len(), 2);
    }
}
