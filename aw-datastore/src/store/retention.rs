//! Retention rules: what of the stored history goes, or loses its text, once it is old.
//!
//! The rules live in the setting `retention_rules` (key `settings.retention_rules`) as a
//! JSON array, each rule an object:
//!
//! | key | meaning |
//! |---|---|
//! | `enabled` | `true` (the default) or `false` |
//! | `bucket_prefix`, `bucket_type`, `hostname` | which buckets (all three optional; all that are given must hold) |
//! | `older_than_days` | a whole number of days, at least 1: the rule takes events that ended at least that long ago |
//! | `action` | `delete` (the events), `redact` (the `fields` get the `replacement` text), or `delete_shorter` (events shorter than `shorter_than_seconds`) |
//! | `fields` | for `redact`: the data fields (`title`, `url`, `a.b`), at least one |
//! | `replacement` | for `redact`: the text (default `(redacted)`) |
//! | `shorter_than_seconds` | for `delete_shorter`: a number of seconds above 0 |
//! | `all_of_bucket` | `true` lets a deleting rule delete every event of a bucket; without it such a run is refused (a dry run names the bucket) |
//! | `everywhere` | `true`: a deletion travels to the other devices at their next sync pass, as a deletion by hand does (for privacy); `false` (the default): this device only, to save its space, and the others keep their copies |
//!
//! An event is old when it *ended* before the rule's cutoff (now minus the days): an event
//! across the cutoff stays whole. The rules compile into the privacy rules' engine
//! (`privacy.rs`) with a scope, and run over the history as a privacy run does
//! (`privacy_past.rs`): in steps, all or nothing, heartbeats answered meanwhile.
//!
//! Unlike `privacy_filters` (which the reference's dashboard writes, so a bad rule there is
//! skipped), this setting is ours: a rule that does not validate is refused when it is
//! written, with the rule and the problem named ([`check_retention_rules`]).

use serde::Deserialize;

use crate::store::day_digest::DAY_NS;
use crate::store::privacy::{Action, PrivacyFilter, Rule, Scope};

/// The settings key the rules are stored under.
pub const RETENTION_RULES_KEY: &str = "settings.retention_rules";

/// The replacement text of a `redact` rule that gives none.
const DEFAULT_REPLACEMENT: &str = "(redacted)";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleText {
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    bucket_prefix: Option<String>,
    #[serde(default)]
    bucket_type: Option<String>,
    #[serde(default)]
    hostname: Option<String>,
    older_than_days: u32,
    action: String,
    #[serde(default)]
    fields: Vec<String>,
    #[serde(default)]
    replacement: Option<String>,
    #[serde(default)]
    shorter_than_seconds: Option<f64>,
    #[serde(default)]
    all_of_bucket: bool,
    #[serde(default)]
    everywhere: bool,
}

fn yes() -> bool {
    true
}

/// The compiled, enabled retention rules as of one instant.
pub(crate) struct RetentionRules {
    /// The rules in the privacy engine's form.
    pub filter: PrivacyFilter,
    /// The enabled rules whose changes stay on this device: position and cutoff (ns).
    pub local: Vec<(usize, i64)>,
    /// The number of rules in the setting (enabled or not).
    pub count: usize,
}

/// Checks the setting's value: `Err` names the first rule that does not validate and why.
pub fn check_retention_rules(json: &str) -> Result<(), String> {
    compile(json, 0).map(|_| ())
}

/// The enabled rules of the setting's value whose changes stay on this device (`everywhere`
/// false), each as its position and its cutoff with the ages counted from `now` (ns): what
/// the sync must keep from travelling. `Err` as [`check_retention_rules`].
pub fn local_rule_cutoffs(json: &str, now: i64) -> Result<Vec<(usize, i64)>, String> {
    compile(json, now).map(|rules| rules.local)
}

/// Compiles the setting's value (`None`: no rules) with the cutoffs of `now` (ns).
pub(crate) fn compile(json: &str, now: i64) -> Result<RetentionRules, String> {
    let items: Vec<serde_json::Value> = match serde_json::from_str(json) {
        Ok(serde_json::Value::Array(items)) => items,
        Ok(serde_json::Value::Null) => Vec::new(),
        Ok(_) => return Err("retention_rules must be a JSON array of rules".into()),
        Err(e) => return Err(format!("retention_rules is not valid JSON: {e}")),
    };
    let mut rules = RetentionRules {
        filter: PrivacyFilter::default(),
        local: Vec::new(),
        count: items.len(),
    };
    for (index, item) in items.into_iter().enumerate() {
        let text: RuleText =
            serde_json::from_value(item).map_err(|e| format!("retention rule {index}: {e}"))?;
        let rule = rule(index, text, now).map_err(|e| format!("retention rule {index}: {e}"))?;
        if let Some((rule, local)) = rule {
            if let (true, Some(cutoff)) = (local, rule.scope.ended_by) {
                rules.local.push((index, cutoff));
            }
            rules.filter.rules.push(rule);
        }
    }
    Ok(rules)
}

/// One rule compiled (`None` when it is disabled), and whether it stays on this device.
fn rule(index: usize, text: RuleText, now: i64) -> Result<Option<(Rule, bool)>, String> {
    if text.older_than_days < 1 {
        return Err("older_than_days must be at least 1".into());
    }
    let (fields, action, shorter_than) = match text.action.as_str() {
        "delete" => (Vec::new(), Action::Drop, None),
        "redact" => {
            if text.fields.is_empty() || text.fields.iter().any(|f| f.is_empty()) {
                return Err(
                    "redact needs `fields`: one or more data fields, such as \"title\"".into(),
                );
            }
            let replacement = text
                .replacement
                .unwrap_or_else(|| DEFAULT_REPLACEMENT.into());
            if replacement.is_empty() {
                return Err("the replacement of redact must not be empty".into());
            }
            let fields = text
                .fields
                .iter()
                .map(|f| f.split('.').map(str::to_string).collect())
                .collect();
            (fields, Action::Redact(replacement), None)
        }
        "delete_shorter" => match text.shorter_than_seconds {
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 * 366.0 => {
                (Vec::new(), Action::Drop, Some((s * 1e9) as i64))
            }
            _ => {
                return Err(
                    "delete_shorter needs shorter_than_seconds, a number of seconds above 0".into(),
                )
            }
        },
        other => {
            return Err(format!(
                "unknown action '{other}': delete, redact or delete_shorter"
            ))
        }
    };
    if !matches!(action, Action::Drop) && text.all_of_bucket {
        return Err("all_of_bucket is for the rules that delete".into());
    }
    if !text.enabled {
        return Ok(None);
    }
    let mut rule = Rule::new(index, text.bucket_prefix, fields, None, action);
    rule.scope = Scope {
        bucket_type: text.bucket_type.filter(|t| !t.is_empty()),
        hostname: text.hostname.filter(|h| !h.is_empty()),
        ended_by: Some(now.saturating_sub(i64::from(text.older_than_days) * DAY_NS)),
        shorter_than,
    };
    rule.may_empty = text.all_of_bucket || !matches!(rule.action, Action::Drop);
    Ok(Some((rule, !text.everywhere)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_rule_is_named_with_its_problem() {
        let bad = [
            (r#"{"a": 1}"#, "must be a JSON array"),
            (
                r#"[{"older_than_days": 0, "action": "delete"}]"#,
                "rule 0: older_than_days",
            ),
            (
                r#"[{"older_than_days": 3, "action": "shred"}]"#,
                "unknown action 'shred'",
            ),
            (
                r#"[{"older_than_days": 3, "action": "redact"}]"#,
                "redact needs `fields`",
            ),
            (
                r#"[{"older_than_days": 3, "action": "delete"}, {"older_than_days": 3, "action": "delete_shorter"}]"#,
                "rule 1: delete_shorter needs",
            ),
            (
                r#"[{"older_than_days": 3, "action": "delete", "color": 1}]"#,
                "unknown field `color`",
            ),
            (
                r#"[{"action": "delete"}]"#,
                "missing field `older_than_days`",
            ),
            (
                r#"[{"older_than_days": 3, "action": "redact", "fields": ["title"], "all_of_bucket": true}]"#,
                "all_of_bucket is for",
            ),
        ];
        for (json, named) in bad {
            let err = check_retention_rules(json).unwrap_err();
            assert!(err.contains(named), "{json}: {err}");
        }
        let good = r#"[{"older_than_days": 30, "action": "redact", "fields": ["title", "url"]},
                       {"enabled": false, "older_than_days": 1, "action": "delete"},
                       {"older_than_days": 1, "action": "delete_shorter", "shorter_than_seconds": 1,
                        "bucket_type": "currentwindow", "everywhere": true}]"#;
        let rules = compile(good, 100 * DAY_NS).unwrap();
        assert_eq!(rules.filter.rules.len(), 2);
        assert_eq!(rules.local, vec![(0, 70 * DAY_NS)]);
        assert_eq!(rules.count, 3);
        assert_eq!(rules.filter.rules[0].scope.ended_by, Some(70 * DAY_NS));
    }
}
