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
    /// A case-insensitive regex rule.
    pub fn regex(pattern: &str) -> CategoryRule {
        CategoryRule {
            rule_type: "regex".into(),
            regex: Some(pattern.into()),
            ignore_case: Some(true),
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

/// The web UI's default categories, so a fresh install has meaningful categories.
pub fn default_classes() -> Vec<Category> {
    let c = |name: &[&str], rule: CategoryRule| Category {
        name: name.iter().map(|s| s.to_string()).collect(),
        rule,
    };
    vec![
        c(&["Work"], CategoryRule::regex("Google Docs|libreoffice|ReText")),
        c(
            &["Work", "Programming"],
            CategoryRule::regex("GitHub|Stack Overflow|BitBucket|Gitlab|vim|Spyder|kate|Ghidra|Scite"),
        ),
        c(&["Work", "Programming", "ActivityWatch"], CategoryRule::regex("ActivityWatch|aw-")),
        c(&["Work", "Image"], CategoryRule::regex("GIMP|Inkscape")),
        c(&["Work", "Video"], CategoryRule::regex("Kdenlive")),
        c(&["Work", "Audio"], CategoryRule::regex("Audacity")),
        c(&["Work", "3D"], CategoryRule::regex("Blender")),
        c(&["Media", "Games"], CategoryRule::regex("Minecraft|RimWorld")),
        c(&["Media", "Video"], CategoryRule::regex("YouTube|Plex|VLC")),
        c(
            &["Media", "Social Media"],
            CategoryRule::regex("reddit|Facebook|Twitter|Instagram|devRant"),
        ),
        c(&["Media", "Music"], CategoryRule::regex("Spotify|Deezer")),
        c(&["Comms", "IM"], CategoryRule::regex("Messenger|Telegram|Signal|WhatsApp|Rambox|Slack|Riot|Element|Discord|Nheko|NeoChat|Mattermost")),
        c(&["Comms", "Email"], CategoryRule::regex("Gmail|Thunderbird|mutt|alpine")),
    ]
}

/// The categories as `categorize` takes them: `[[name…], rule]` pairs written as query
/// literals ([`crate::query_literal`]). A category whose name or rule cannot be written
/// (a part ending with a backslash) is left out, with a warning on stderr: the query then
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
                    eprintln!("Leaving category {:?} out of the query: {e}", c.name);
                    None
                }
                None => None,
            }
        })
        .collect();
    format!("[{}]", pairs.join(", "))
}
