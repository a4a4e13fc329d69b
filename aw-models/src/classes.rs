//! Categories: the rules `categorize` applies, and the web UI's default set.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A category rule as stored in the `classes` setting and passed to `categorize`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CategoryRule {
    /// `"regex"` or `"none"`.
    #[serde(rename = "type")]
    pub rule_type: String,
    /// The pattern, for regex rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Case-insensitive matching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_case: Option<bool>,
}

impl CategoryRule {
    /// A regex rule, case-sensitive as the web UI's rules are unless they say otherwise.
    ///
    /// Earlier versions of this crate (as `aw_client_rust::classes`) made every `regex`
    /// rule case-insensitive, so its defaults disagreed with the web UI's; a script that
    /// wants that asks for [`CategoryRule::regex_ignore_case`].
    pub fn regex(pattern: &str) -> CategoryRule {
        CategoryRule {
            rule_type: "regex".into(),
            regex: Some(pattern.into()),
            ignore_case: None,
        }
    }

    /// A case-insensitive regex rule.
    pub fn regex_ignore_case(pattern: &str) -> CategoryRule {
        CategoryRule {
            ignore_case: Some(true),
            ..CategoryRule::regex(pattern)
        }
    }

    /// A rule that never matches (a category that only groups its children).
    pub fn none() -> CategoryRule {
        CategoryRule {
            rule_type: "none".into(),
            regex: None,
            ignore_case: None,
        }
    }
}

/// One entry of the `classes` setting: `{"name": [...], "rule": {...}}` (other keys kept
/// by the web UI, such as `data.color`, are ignored here).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Category {
    /// The category path, e.g. `["Work", "Programming"]`.
    pub name: Vec<String>,
    /// When an event belongs to it.
    pub rule: CategoryRule,
}

/// The dashboard's definition of the default categories: a JavaScript module whose array is
/// strict JSON (`aw-server/webui/default-classes.js`), the one place they are written.
const DEFAULT_CLASSES_MODULE: &str = include_str!("../../aw-server/webui/default-classes.js");

/// The default categories as JSON (`[{"name": […], "rule": {…}}, …]`): the array of the
/// dashboard's `default-classes.js`, from the `[` after `=` to the last `]`.
pub fn default_classes_json() -> &'static str {
    let module = DEFAULT_CLASSES_MODULE;
    let start = module
        .find("= [")
        .map_or(module.len(), |at| at + "= ".len());
    let end = module.rfind(']').map_or(start, |at| at + 1);
    module.get(start..end).unwrap_or("[]")
}

/// The web UI's default categories (the dashboard's, read from its definition at compile
/// time), so a fresh install has meaningful categories and scripts count as the dashboard
/// does.
pub fn default_classes() -> Vec<Category> {
    serde_json::from_str(default_classes_json()).unwrap_or_default()
}

/// The categories as `categorize` takes them: `[[name…], rule]` pairs written as query
/// literals ([`crate::query_literal`]). A category whose name or rule cannot be written
/// (a part ending with a backslash) is left out, with a logged warning: the query then
/// runs without it instead of becoming another query.
pub fn classes_to_query(classes: &[Category]) -> String {
    let pairs: Vec<String> = classes
        .iter()
        .filter_map(|c| {
            let written = serde_json::to_value(&c.name)
                .ok()
                .zip(serde_json::to_value(&c.rule).ok())
                .map(|(name, rule)| crate::query_literal::value(&Value::Array(vec![name, rule])));
            match written {
                Some(Ok(text)) => Some(text),
                Some(Err(e)) => {
                    log::warn!("Leaving category {:?} out of the query: {e}", c.name);
                    None
                }
                None => None,
            }
        })
        .collect();
    format!("[{}]", pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_dashboards() {
        let classes = default_classes();
        assert_eq!(classes.len(), 16);
        let find = |name: &[&str]| {
            classes
                .iter()
                .find(|c| c.name == name)
                .unwrap_or_else(|| panic!("no {name:?}"))
                .rule
                .clone()
        };
        assert_eq!(
            find(&["Work", "Image"]),
            CategoryRule::regex("Gimp|Inkscape")
        );
        assert_eq!(find(&["Media"]), CategoryRule::none());
        assert_eq!(find(&["Uncategorized"]), CategoryRule::none());
        let insensitive = classes
            .iter()
            .filter(|c| c.rule.ignore_case == Some(true))
            .count();
        assert_eq!(insensitive, 3);
        assert_eq!(
            find(&["Media", "Music"]),
            CategoryRule::regex_ignore_case("Spotify|Deezer")
        );
    }
}
