//! The canonical text of a JSON object: compact, keys sorted, numbers and strings as
//! serde_json writes them. Event `data` is stored in this form, so that equal data has equal
//! text (heartbeat merging and import deduplication compare texts) and so that stored text
//! can be spliced into responses unchanged.
//!
//! [`canonical_object`] checks raw input in one pass without building a tree and only
//! re-serialises the (rare) input that is not canonical already: exports from this server or
//! the reference are canonical, so importing them costs a scan, not a parse and a rewrite.

use serde_json::{Map, Value};
use std::borrow::Cow;

/// The canonical text of the JSON object `raw`; `None` when `raw` is not a JSON object.
pub fn canonical_object(raw: &str) -> Option<Cow<'_, str>> {
    if is_canonical_object(raw.as_bytes()) {
        return Some(Cow::Borrowed(raw));
    }
    let map: Map<String, Value> = serde_json::from_str(raw).ok()?;
    serde_json::to_string(&map).ok().map(Cow::Owned)
}

/// Whether `text` is exactly one JSON object in canonical form.
fn is_canonical_object(text: &[u8]) -> bool {
    let mut p = Parser { s: text, i: 0 };
    text.first() == Some(&b'{') && p.value(0) && p.i == text.len()
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

/// Deeper nesting than this is left to serde_json (which has its own limit).
const MAX_DEPTH: usize = 64;

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        self.i += 1;
        if self.eat(b'}') {
            return true;
        }
        let mut previous: Option<&'a [u8]> = None;
        loop {
            let Some(key) = self.string() else {
                return false;
            };
            // Keys strictly ascending by bytes, which is `String`'s order (no duplicates).
            if previous.is_some_and(|p| p >= key) {
                return false;
            }
            previous = Some(key);
            if !self.eat(b':') || !self.value(depth + 1) {
                return false;
            }
            if self.eat(b'}') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.i += 1;
        if self.eat(b']') {
            return true;
        }
        loop {
            if !self.value(depth + 1) {
                return false;
            }
            if self.eat(b']') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// A string without escapes (escaped input is re-serialised instead, since serde_json
    /// writes most escaped characters raw). Returns its content bytes.
    fn string(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.i;
        loop {
            match self.peek()? {
                b'"' => break,
                b'\\' => return None,
                c if c < 0x20 => return None,
                _ => self.i += 1,
            }
        }
        let text: &'a [u8] = self.s;
        let content = &text[start..self.i];
        self.i += 1;
        Some(content)
    }

    /// A number exactly as serde_json would print it.
    fn number(&mut self) -> bool {
        let start = self.i;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.i += 1;
        }
        let Ok(token) = std::str::from_utf8(&self.s[start..self.i]) else {
            return false;
        };
        if !token.contains(['.', 'e', 'E']) {
            // Integers keep their digits, if serde_json reads them as i64/u64.
            let digits = token.strip_prefix('-').unwrap_or(token);
            let well_formed = !digits.is_empty()
                && (digits == "0" || !digits.starts_with('0'))
                && digits.bytes().all(|b| b.is_ascii_digit());
            return well_formed
                && token != "-0"
                && (token.parse::<i64>().is_ok() || token.parse::<u64>().is_ok());
        }
        match token.parse::<f64>() {
            Ok(f) if f.is_finite() => ryu::Buffer::new().format_finite(f) == token,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(raw: &str) -> Option<String> {
        let map: Map<String, Value> = serde_json::from_str(raw).ok()?;
        serde_json::to_string(&map).ok()
    }

    #[test]
    fn canonical_input_is_borrowed() {
        for raw in [
            "{}",
            r#"{"a":1,"b":"x"}"#,
            r#"{"app":"code","title":"main.rs — x","url":"https://a/b?c=1"}"#,
            r#"{"a":[1,2.5,-3,1e-7,null,true,false,{"x":{}}],"b":{"c":-0.5}}"#,
            r#"{"m":-9223372036854775808,"n":18446744073709551615}"#,
        ] {
            match canonical_object(raw) {
                Some(Cow::Borrowed(s)) => assert_eq!(s, raw),
                other => panic!("{raw}: {other:?}"),
            }
        }
    }

    #[test]
    fn non_canonical_input_is_rewritten_like_serde() {
        for raw in [
            r#"{"b":1,"a":2}"#,
            r#"{ "a": 1 }"#,
            r#"{"a":1.50}"#,
            r#"{"a":1E2}"#,
            r#"{"a":"\u00e9\n"}"#,
            r#"{"a":-0}"#,
            r#"{"a":007}"#,
            r#"{"a":99999999999999999999}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"x":{"b":1,"a":2}}"#,
        ] {
            let got = canonical_object(raw).map(|c| c.into_owned());
            assert_eq!(got, reference(raw), "{raw}");
        }
    }

    #[test]
    fn non_objects_are_refused() {
        for raw in ["[]", "1", "\"x\"", "{", "{\"a\":}", "null"] {
            assert!(canonical_object(raw).is_none(), "{raw}");
        }
    }
}
