//! Values written as query-language literals, so that data can never change a query.
//!
//! The query language's strings know one escape, `\"` → `"`; every other backslash is kept
//! as it is (`"\d+"` is the text `\d+`, which a regex then reads), and a string cannot end
//! with a backslash (its closing quote would read as `\"`). So a string is written by
//! escaping its quotes only, and one that ends with a backslash cannot be written at all:
//! [`string`] refuses it rather than let the rest of the query become part of it. JSON's
//! own escapes (`\\`, `\n`, `\u0001`) are not the query language's: writing a bucket id with
//! `serde_json::to_string` (what this crate did before) doubled its backslashes.

use serde_json::Value;

/// Why a value cannot be written as a query-language literal.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LiteralError {
    /// A string that ends with a backslash (a bucket id, a hostname, a category name).
    #[error("{0:?} ends with a backslash, which a query-language string cannot")]
    TrailingBackslash(String),
    /// JSON `null`, which the query language has no literal for.
    #[error("null has no query-language literal")]
    Null,
}

/// `text` as a query-language string literal.
pub fn string(text: &str) -> Result<String, LiteralError> {
    if text.ends_with('\\') {
        return Err(LiteralError::TrailingBackslash(text.to_string()));
    }
    Ok(format!("\"{}\"", text.replace('"', "\\\"")))
}

/// A JSON value as a query-language literal: strings as [`string`], numbers, booleans,
/// lists and dicts (whose keys are strings too).
pub fn value(v: &Value) -> Result<String, LiteralError> {
    Ok(match v {
        Value::Null => return Err(LiteralError::Null),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s)?,
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(value)
                .collect::<Result<Vec<_>, _>>()?
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| Ok(format!("{}: {}", string(k)?, value(v)?)))
                .collect::<Result<Vec<_>, LiteralError>>()?
                .join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_quotes_are_escaped_and_a_trailing_backslash_is_refused() {
        assert_eq!(string(r"a\d+").unwrap(), r#""a\d+""#);
        assert_eq!(string(r#"x";y"#).unwrap(), r#""x\";y""#);
        assert_eq!(string("line\nünï").unwrap(), "\"line\nünï\"");
        assert_eq!(
            string(r"host\"),
            Err(LiteralError::TrailingBackslash(r"host\".into()))
        );
        assert_eq!(
            value(&json!({"k": [1, 2.5, true, "\\w"]})).unwrap(),
            r#"{"k": [1, 2.5, true, "\w"]}"#
        );
        assert_eq!(value(&json!([null])), Err(LiteralError::Null));
    }
}
