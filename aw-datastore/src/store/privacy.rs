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
//! The same engine runs the retention rules (`retention.rs`) over the stored history: a
//! rule there has a [`Scope`] (a bucket type, a host, an age, a length) and may match
//! every event in it, with no field or pattern.
//!
//! Applied to the stored history ([`PrivacyFilter::judge_past`]), the rules fail
//! open instead: a value a pattern cannot be evaluated on counts as no match, and is
//! counted as such in the report. Failing closed is right for one new event; on years of
//! history it would delete them.

use fancy_regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::new_event::NewEvent;
use aw_models::raw_event::data_to_text;
use aw_platform::log_throttle::LogThrottle;

pub use crate::store::privacy_report::{PrivacyReport, PrivacySample, RuleReport};
use crate::store::privacy_report::{MAX_SAMPLES, SAMPLE_CHARS};

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

/// What a rule does to an event it matches.
pub(crate) enum Action {
    /// Deletes it.
    Drop,
    /// Replaces the matched (or named) fields with this text.
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

/// What the rules do to one stored event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PastVerdict {
    /// Left as it is.
    Keep,
    /// Deleted, by the rule of this index.
    Drop(usize),
    /// Its data becomes this text.
    Redact(String),
}

/// Which stored events a rule looks at besides its bucket prefix (a retention rule's
/// conditions; a privacy rule's are all `None`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    /// Only buckets of this type.
    pub bucket_type: Option<String>,
    /// Only buckets of this host.
    pub hostname: Option<String>,
    /// Only events that end at or before this instant (ns).
    pub ended_by: Option<i64>,
    /// Only events shorter than this (ns).
    pub shorter_than: Option<i64>,
}

/// The bucket of a stored event, as a rule's scope sees it.
#[derive(Debug, Clone)]
pub(crate) struct PastBucket {
    /// Its id.
    pub name: String,
    /// Its type.
    pub kind: String,
    /// Its host.
    pub hostname: String,
}

/// One compiled rule.
pub(crate) struct Rule {
    /// Its position in the setting's array (how the log names it).
    pub(super) index: usize,
    pub(super) bucket_prefix: Option<String>,
    /// The fields it looks at (a privacy rule: one) or redacts; none: the whole event.
    pub(super) fields: Vec<Vec<String>>,
    /// The values it matches; `None`: every value.
    pub(super) pattern: Option<Regex>,
    pub(super) action: Action,
    pub(super) scope: Scope,
    /// Whether it may delete every event of a bucket (a retention rule must say so).
    pub(super) may_empty: bool,
    pub(super) warnings: LogThrottle,
}

impl Rule {
    /// A rule with these parts, nothing in its scope yet.
    pub(super) fn new(
        index: usize,
        bucket_prefix: Option<String>,
        fields: Vec<Vec<String>>,
        pattern: Option<Regex>,
        action: Action,
    ) -> Rule {
        Rule {
            index,
            bucket_prefix: bucket_prefix.filter(|p| !p.is_empty()),
            fields,
            pattern,
            action,
            scope: Scope::default(),
            may_empty: true,
            warnings: LogThrottle::new(WARN_EVERY),
        }
    }

    /// Whether a stored event of `bucket` from `start` to `end` is in the rule's reach.
    fn reaches(&self, bucket: &PastBucket, start: i64, end: i64) -> bool {
        let s = &self.scope;
        self.bucket_prefix
            .as_deref()
            .is_none_or(|p| bucket.name.starts_with(p))
            && s.bucket_type.as_deref().is_none_or(|t| bucket.kind == t)
            && s.hostname.as_deref().is_none_or(|h| bucket.hostname == h)
            && s.ended_by.is_none_or(|t| end <= t)
            && s.shorter_than.is_none_or(|d| end.saturating_sub(start) < d)
    }

    /// Whether the rule matches `text`; an error while matching counts as a match.
    fn matches(&self, text: &str) -> bool {
        let Some(pattern) = &self.pattern else {
            return true;
        };
        pattern.is_match(text).unwrap_or_else(|e| {
            if let Some(held_back) = self.warnings.allow() {
                log::warn!(
                    "Privacy rule {} (pattern '{}') could not be matched ({e}); treated as a match{}",
                    self.index,
                    pattern.as_str(),
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
    pub(super) rules: Vec<Rule>,
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
                    field: r
                        .fields
                        .iter()
                        .map(|f| f.join("."))
                        .collect::<Vec<_>>()
                        .join(", "),
                    pattern: r
                        .pattern
                        .as_ref()
                        .map_or(String::new(), |p| p.as_str().to_string()),
                    ..RuleReport::default()
                })
                .collect(),
            skipped_rules,
            ..PrivacyReport::default()
        }
    }

    /// What the rules do to a stored event of `bucket` (`id`, from `start` to `end` ns,
    /// data `text`), counted into `report` (made by [`PrivacyFilter::report`]). Unlike
    /// [`PrivacyFilter::apply`], a value a pattern cannot be evaluated on counts as no
    /// match, and data that is not an object is left alone.
    pub(crate) fn judge_past(
        &self,
        bucket: &PastBucket,
        (id, start, end): (i64, i64, i64),
        text: &str,
        report: &mut PrivacyReport,
    ) -> PastVerdict {
        report.events += 1;
        let dropped = &mut report.dropped;
        let applicable = self
            .rules
            .iter()
            .zip(report.rules.iter_mut())
            .filter(|(r, _)| r.reaches(bucket, start, end));
        let mut data: Option<Map<String, Value>> = None;
        let mut changed = false;
        let seconds = end.saturating_sub(start) as f64 / 1e9;
        for (rule, counts) in applicable {
            if rule.fields.is_empty() {
                // A retention rule over whole events: every event in its reach.
                sample(counts, bucket, (id, start), text);
                return drop_by(rule.index, counts, dropped, seconds);
            }
            if data.is_none() {
                match serde_json::from_str::<Map<String, Value>>(text) {
                    Ok(parsed) => data = Some(parsed),
                    Err(_) => return PastVerdict::Keep,
                }
            }
            let Some(object) = data.as_mut() else {
                return PastVerdict::Keep;
            };
            let mut hit = false;
            for field in &rule.fields {
                let Some(value) = lookup(object, field).and_then(Value::as_str) else {
                    continue;
                };
                let matched = match &rule.pattern {
                    None => true,
                    Some(p) => p.is_match(value).unwrap_or_else(|_| {
                        counts.unevaluable += 1;
                        false
                    }),
                };
                // Redacted already (a replacement the pattern matches): no change.
                if !matched || matches!(&rule.action, Action::Redact(r) if r == value) {
                    continue;
                }
                if !hit {
                    sample(counts, bucket, (id, start), value);
                    hit = true;
                }
                match &rule.action {
                    Action::Drop => return drop_by(rule.index, counts, dropped, seconds),
                    Action::Redact(replacement) => {
                        if let Some(slot) = lookup_mut(object, field) {
                            *slot = Value::String(replacement.clone());
                        }
                    }
                }
            }
            if hit {
                counts.redacted += 1;
                counts.seconds += seconds;
                changed = true;
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

    /// The rules that may not delete every event of a bucket, by their index.
    pub(crate) fn must_not_empty(&self, index: usize) -> bool {
        self.rules.iter().any(|r| r.index == index && !r.may_empty)
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
            for field in &rule.fields {
                let matches = lookup(&data, field)
                    .and_then(Value::as_str)
                    .is_some_and(|s| rule.matches(s));
                if !matches {
                    continue;
                }
                match &rule.action {
                    Action::Drop => return Verdict::Drop,
                    Action::Redact(replacement) => {
                        if let Some(slot) = lookup_mut(&mut data, field) {
                            *slot = Value::String(replacement.clone());
                            changed = true;
                        }
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
    Ok(Some(Rule::new(
        index,
        text.bucket_prefix,
        vec![field],
        Some(pattern),
        action,
    )))
}

/// Counts a sample of what `counts`'s rule matched (the first five), and its bucket.
fn sample(counts: &mut RuleReport, bucket: &PastBucket, (id, start): (i64, i64), value: &str) {
    if !counts.buckets.contains(&bucket.name) {
        counts.buckets.push(bucket.name.clone());
    }
    if counts.samples.len() < MAX_SAMPLES {
        counts.samples.push(PrivacySample {
            bucket: bucket.name.clone(),
            id,
            timestamp: aw_models::timestamp::format(&aw_models::timestamp::from_ns(start)),
            value: value.chars().take(SAMPLE_CHARS).collect(),
        });
    }
}

/// Counts an event of `seconds` dropped by rule `index` (`counts` its line).
fn drop_by(index: usize, counts: &mut RuleReport, dropped: &mut u64, seconds: f64) -> PastVerdict {
    counts.dropped += 1;
    counts.seconds += seconds;
    *dropped += 1;
    PastVerdict::Drop(index)
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
            f.rules[0]
                .pattern
                .as_ref()
                .unwrap()
                .is_match(&title)
                .is_err(),
            "the limit is hit"
        );
        assert_eq!(f.apply("any", &mut e), Verdict::Keep);
        assert_eq!(e.data, r#"{"app":"editor","title":"(hidden)"}"#);
        let mut e = event(&format!(r#"{{"app":"{}","title":"t"}}"#, "x".repeat(40)));
        assert_eq!(f.apply("any", &mut e), Verdict::Drop);
    }
}
