//! Privacy filter rules: drop or redact events before they are stored.
//!
//! The rules live in the setting `privacy_filters` (key `settings.privacy_filters`) as a JSON
//! array of `{"enabled", "bucket_prefix", "field", "pattern", "action", "replacement"}`.
//! The reference server has the engine but never loads it over HTTP; we load it at startup
//! and whenever that setting is written, so a rule a user saves takes effect at once.
//! A rule that does not validate is skipped with a warning rather than rejecting the settings
//! write, because the web dashboard stores this key itself and must not be refused.
//!
//! Rules fail closed: when matching fails (a pattern hits the regex engine's backtrack
//! limit on a long title), the rule counts as matching, so the event is dropped or
//! redacted rather than stored raw; a warning names the rule, at most once a minute per
//! rule ([`LogThrottle`]).
//!
//! Applied to the stored history ([`PrivacyFilter::judge_past`]), the same rules fail
//! open instead: a value a pattern cannot be evaluated on counts as no match, and is
//! counted as such in the report. Failing closed is right for one new event; on years of
//! history it would delete them.

use fancy_regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::new_event::NewEvent;
use aw_models::raw_event::data_to_text;
use aw_platform::log_throttle::LogThrottle;

/// How often a failing rule is named in the log.
const WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// The settings key the rules are stored under.
pub const PRIVACY_FILTERS_KEY: &str = "settings.privacy_filters";

#[derive(Deserialize)]
struct RuleText {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    bucket_prefix: Option<String>,
    #[serde(default)]
    field: Option<String>,
    pattern: String,
    action: String,
    #[serde(default)]
    replacement: Option<String>,
}

enum Action {
    Drop,
    Redact(String),
}

impl Action {
    fn name(&self) -> &'static str {
        match self {
            Action::Drop => "drop",
            Action::Redact(_) => "redact",
        }
    }
}

/// The most samples a report gives per rule.
pub(crate) const MAX_SAMPLES: usize = 5;

/// The longest sample value shown (characters); longer ones are cut.
const SAMPLE_CHARS: usize = 120;

/// What the rules did, or would do, to the stored history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PrivacyReport {
    /// Events looked at.
    pub events: u64,
    /// Events dropped (by any rule).
    pub dropped: u64,
    /// Events redacted and kept.
    pub redacted: u64,
    /// Each enabled rule's part, in the setting's order.
    pub rules: Vec<RuleReport>,
    /// Rules of the setting that were skipped (not valid).
    pub skipped_rules: Vec<String>,
}

/// One rule's part in a run over the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuleReport {
    /// Its position in the setting's array.
    pub rule: usize,
    /// `drop` or `redact`.
    pub action: &'static str,
    /// The field it looks at (`title`, `a.b`).
    pub field: String,
    /// Its pattern.
    pub pattern: String,
    /// Events it dropped.
    pub dropped: u64,
    /// Events it redacted.
    pub redacted: u64,
    /// Values the pattern could not be evaluated on (counted as no match).
    pub unevaluable: u64,
    /// Up to five of the events it matched.
    pub samples: Vec<PrivacySample>,
}

/// One event a rule matched.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrivacySample {
    /// Its bucket.
    pub bucket: String,
    /// Its id.
    pub id: i64,
    /// Its start.
    pub timestamp: String,
    /// The value the rule matched (cut to 120 characters).
    pub value: String,
}

/// What the rules do to one stored event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PastVerdict {
    /// Left as it is.
    Keep,
    /// Deleted.
    Drop,
    /// Its data becomes this text.
    Redact(String),
}

struct Rule {
    /// Its position in the setting's array (how the log names it).
    index: usize,
    bucket_prefix: Option<String>,
    field: Vec<String>,
    pattern: Regex,
    action: Action,
    warnings: LogThrottle,
}

impl Rule {
    /// Whether the rule matches `text`; an error while matching counts as a match.
    fn matches(&self, text: &str) -> bool {
        self.pattern.is_match(text).unwrap_or_else(|e| {
            if let Some(held_back) = self.warnings.allow() {
                log::warn!(
                    "Privacy rule {} (pattern '{}') could not be matched ({e}); treated as a match{}",
                    self.index,
                    self.pattern.as_str(),
                    if held_back > 0 {
                        format!(" ({held_back} more times since the last warning)")
                    } else {
                        String::new()
                    }
                );
            }
            true
        })
    }
}

/// What a filter decided for one event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Store the event (possibly redacted).
    Keep,
    /// Do not store it.
    Drop,
}

/// The compiled, enabled rules.
#[derive(Default)]
pub(crate) struct PrivacyFilter {
    rules: Vec<Rule>,
}

impl PrivacyFilter {
    /// Compiles the rules in `json` (the setting's value); returns the filter and one message
    /// per rule that was skipped.
    pub(crate) fn from_json(json: &str) -> (PrivacyFilter, Vec<String>) {
        let mut problems = Vec::new();
        let items: Vec<Value> = match serde_json::from_str(json) {
            Ok(Value::Array(items)) => items,
            Ok(Value::Null) => Vec::new(),
            _ => {
                problems.push("privacy_filters is not a JSON array".to_string());
                Vec::new()
            }
        };
        let mut rules = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            match compile(i, item) {
                Ok(Some(rule)) => rules.push(rule),
                Ok(None) => {}
                Err(e) => problems.push(format!("rule {i}: {e}")),
            }
        }
        (PrivacyFilter { rules }, problems)
    }

    /// An empty report with a line per enabled rule, and the setting's skipped rules.
    pub(crate) fn report(&self, skipped_rules: Vec<String>) -> PrivacyReport {
        PrivacyReport {
            rules: self
                .rules
                .iter()
                .map(|r| RuleReport {
                    rule: r.index,
                    action: r.action.name(),
                    field: r.field.join("."),
                    pattern: r.pattern.as_str().to_string(),
                    ..RuleReport::default()
                })
                .collect(),
            skipped_rules,
            ..PrivacyReport::default()
        }
    }

    /// What the rules do to a stored event of `bucket` (`id`, starting at `start` ns, data
    /// `text`), counted into `report` (made by [`PrivacyFilter::report`]). Unlike
    /// [`PrivacyFilter::apply`], a value a pattern cannot be evaluated on counts as no
    /// match, and data that is not an object is left alone.
    pub(crate) fn judge_past(
        &self,
        bucket: &str,
        (id, start): (i64, i64),
        text: &str,
        report: &mut PrivacyReport,
    ) -> PastVerdict {
        report.events += 1;
        let applicable = self
            .rules
            .iter()
            .zip(report.rules.iter_mut())
            .filter(|(r, _)| {
                r.bucket_prefix
                    .as_deref()
                    .is_none_or(|p| bucket.starts_with(p))
            });
        let mut data: Option<Map<String, Value>> = None;
        let mut changed = false;
        for (rule, counts) in applicable {
            if data.is_none() {
                match serde_json::from_str::<Map<String, Value>>(text) {
                    Ok(parsed) => data = Some(parsed),
                    Err(_) => return PastVerdict::Keep,
                }
            }
            let Some(object) = data.as_mut() else {
                return PastVerdict::Keep;
            };
            let Some(value) = lookup(object, &rule.field).and_then(Value::as_str) else {
                continue;
            };
            match rule.pattern.is_match(value) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(_) => {
                    counts.unevaluable += 1;
                    continue;
                }
            }
            // Redacted already (a pattern that matches its own replacement): no change.
            if matches!(&rule.action, Action::Redact(r) if r == value) {
                continue;
            }
            if counts.samples.len() < MAX_SAMPLES {
                counts.samples.push(PrivacySample {
                    bucket: bucket.to_string(),
                    id,
                    timestamp: aw_models::timestamp::format(&aw_models::timestamp::from_ns(start)),
                    value: value.chars().take(SAMPLE_CHARS).collect(),
                });
            }
            match &rule.action {
                Action::Drop => {
                    counts.dropped += 1;
                    report.dropped += 1;
                    return PastVerdict::Drop;
                }
                Action::Redact(replacement) => {
                    if let Some(slot) = lookup_mut(object, &rule.field) {
                        *slot = Value::String(replacement.clone());
                        counts.redacted += 1;
                        changed = true;
                    }
                }
            }
        }
        match (changed, data) {
            (true, Some(object)) => {
                report.redacted += 1;
                PastVerdict::Redact(data_to_text(&object))
            }
            _ => PastVerdict::Keep,
        }
    }

    /// Whether no rule is active (the common case: then events are not even parsed).
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Applies the rules in order to an event bound for `bucket`, redacting it in place.
    pub(crate) fn apply(&self, bucket: &str, event: &mut NewEvent) -> Verdict {
        let applicable: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|r| {
                r.bucket_prefix
                    .as_deref()
                    .is_none_or(|p| bucket.starts_with(p))
            })
            .collect();
        if applicable.is_empty() {
            return Verdict::Keep;
        }
        let Ok(mut data) = serde_json::from_str::<Map<String, Value>>(&event.data) else {
            // Stored data is always a JSON object; if it were not, no rule could be checked.
            log::warn!("Dropping an event for '{bucket}': its data could not be checked by the privacy rules");
            return Verdict::Drop;
        };
        let mut changed = false;
        for rule in applicable {
            let matches = lookup(&data, &rule.field)
                .and_then(Value::as_str)
                .is_some_and(|s| rule.matches(s));
            if !matches {
                continue;
            }
            match &rule.action {
                Action::Drop => return Verdict::Drop,
                Action::Redact(replacement) => {
                    if let Some(slot) = lookup_mut(&mut data, &rule.field) {
                        *slot = Value::String(replacement.clone());
                        changed = true;
                    }
                }
            }
        }
        if changed {
            event.data = data_to_text(&data);
        }
        Verdict::Keep
    }
}

fn compile(index: usize, item: Value) -> Result<Option<Rule>, String> {
    let text: RuleText = serde_json::from_value(item).map_err(|e| e.to_string())?;
    if !text.enabled {
        return Ok(None);
    }
    let field: Vec<String> = match text.field.as_deref() {
        Some(f) if !f.is_empty() => f.split('.').map(str::to_string).collect(),
        _ => return Err(format!("action '{}' needs a field", text.action)),
    };
    let action = match text.action.as_str() {
        "drop" => Action::Drop,
        "redact" => match text.replacement {
            Some(r) if !r.is_empty() => Action::Redact(r),
            _ => return Err("redact needs a non-empty replacement".to_string()),
        },
        other => return Err(format!("unknown action '{other}'")),
    };
    let pattern = Regex::new(&text.pattern).map_err(|e| format!("invalid pattern: {e}"))?;
    Ok(Some(Rule {
        index,
        warnings: LogThrottle::new(WARN_EVERY),
        bucket_prefix: text.bucket_prefix.filter(|p| !p.is_empty()),
        field,
        pattern,
        action,
    }))
}

fn lookup<'a>(data: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(data.get(first)?, |v, key| v.as_object()?.get(key))
}

fn lookup_mut<'a>(data: &'a mut Map<String, Value>, path: &[String]) -> Option<&'a mut Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(data.get_mut(first)?, |v, key| {
        v.as_object_mut()?.get_mut(key)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &str) -> NewEvent {
        NewEvent {
            id: None,
            start: 0,
            end: 0,
            data: data.into(),
        }
    }

    #[test]
    fn drop_and_redact() {
        let (f, problems) = PrivacyFilter::from_json(
            r#"[{"enabled":true,"bucket_prefix":"aw-watcher-web","field":"url","pattern":"bank","action":"drop"},
                {"enabled":true,"field":"meta.title","pattern":"(?i)secret","action":"redact","replacement":"***"},
                {"enabled":false,"field":"x","pattern":"","action":"drop"},
                {"enabled":true,"field":"x","pattern":"(","action":"drop"}]"#,
        );
        assert_eq!(problems.len(), 1);
        let mut e = event(r#"{"url":"https://bank.example"}"#);
        assert_eq!(f.apply("aw-watcher-web-chrome", &mut e), Verdict::Drop);
        assert_eq!(f.apply("aw-watcher-window", &mut e), Verdict::Keep);
        let mut e = event(r#"{"meta":{"title":"My SECRET"},"n":1}"#);
        assert_eq!(f.apply("any", &mut e), Verdict::Keep);
        assert_eq!(e.data, r#"{"meta":{"title":"***"},"n":1}"#);
    }

    #[test]
    fn a_rule_that_cannot_be_matched_counts_as_a_match() {
        // A back-reference makes fancy_regex backtrack; on this title it hits its limit.
        let (f, problems) = PrivacyFilter::from_json(
            r#"[{"enabled":true,"field":"title","pattern":"(a*)*\\1c","action":"redact","replacement":"(hidden)"},
                {"enabled":true,"field":"app","pattern":"(x*)*\\1y","action":"drop"}]"#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let title = "a".repeat(40);
        let mut e = event(&format!(r#"{{"app":"editor","title":"{title}"}}"#));
        assert!(
            f.rules[0].pattern.is_match(&title).is_err(),
            "the limit is hit"
        );
        assert_eq!(f.apply("any", &mut e), Verdict::Keep);
        assert_eq!(e.data, r#"{"app":"editor","title":"(hidden)"}"#);
        let mut e = event(&format!(r#"{{"app":"{}","title":"t"}}"#, "x".repeat(40)));
        assert_eq!(f.apply("any", &mut e), Verdict::Drop);
    }
}
