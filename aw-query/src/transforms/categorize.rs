//! Rule matching for `categorize`, `tag` and `filter_keyvals_regex` (spec §6.9).
//!
//! A regex search per rule per event would dominate a year-long query (hundreds of thousands
//! of events × a dozen rules × every data value). Events repeat the same strings (app names,
//! window titles) over and over, so the set of rules matching a string is computed once per
//! distinct string per call and kept in a hash map as a bit set.

use std::sync::Arc;

use fancy_regex::Regex;

use crate::data::{Key, Val};
use crate::event::{patch_data, Data, QEvent};
use crate::fxhash::FxHashMap;
use crate::parts::for_parts;

/// One compiled rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The pattern; `None` for rules of type `none`, which never match.
    pub regex: Option<Regex>,
    /// Only these data keys are tested; `None` tests every data value.
    pub select_keys: Option<Vec<String>>,
}

/// A list of rules with a per-string cache of which rules match.
#[derive(Debug)]
pub struct RuleSet {
    rules: Vec<Rule>,
    /// Number of `u64` words of a bit set with one bit per rule.
    words: usize,
    /// Whether some rule tests all data values (so the union over values is needed).
    any_all_values: bool,
    /// Distinct string → bit set of the rules whose regex is found in it.
    cache: FxHashMap<Box<str>, Box<[u64]>>,
    /// Scratch bit set for the union over all values of one event.
    all_values: Vec<u64>,
}

impl RuleSet {
    /// Wraps compiled rules.
    pub fn new(rules: Vec<Rule>) -> Self {
        let words = rules.len().div_ceil(64).max(1);
        let any_all_values = rules
            .iter()
            .any(|r| r.regex.is_some() && r.select_keys.is_none());
        RuleSet {
            rules,
            words,
            any_all_values,
            cache: FxHashMap::default(),
            all_values: vec![0; words],
        }
    }

    /// The same rules with a cache of their own (for a part of the events worked on by
    /// another thread).
    pub fn fresh(&self) -> RuleSet {
        RuleSet::new(self.rules.clone())
    }

    /// A bit set sized for [`RuleSet::matches`].
    pub fn hit_buffer(&self) -> Vec<u64> {
        vec![0; self.words]
    }

    /// Whether rule `i` is set in `hits`.
    pub fn is_hit(hits: &[u64], i: usize) -> bool {
        hits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Fills `hits` with the rules matching an event's data.
    pub fn matches(&mut self, data: &Data, hits: &mut [u64]) {
        hits.fill(0);
        let RuleSet {
            rules,
            words,
            any_all_values,
            cache,
            all_values,
        } = self;
        all_values.fill(0);
        if *any_all_values {
            for v in data.values() {
                if let Val::Str(s) = v {
                    with_bits(cache, rules, *words, s, |bits| {
                        for (a, b) in all_values.iter_mut().zip(bits) {
                            *a |= b;
                        }
                    });
                }
            }
        }
        for (i, rule) in rules.iter().enumerate() {
            if rule.regex.is_none() {
                continue;
            }
            let hit = match &rule.select_keys {
                None => Self::is_hit(all_values, i),
                Some(keys) => keys.iter().any(|k| match data.get(k) {
                    Some(Val::Str(s)) => {
                        with_bits(cache, rules, *words, s, |bits| Self::is_hit(bits, i))
                    }
                    _ => false,
                }),
            };
            if hit {
                if let Some(w) = hits.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
        }
    }
}

/// Calls `f` with the bit set of rules whose regex is found in `s`, computing it on first
/// sight of `s`.
fn with_bits<R>(
    cache: &mut FxHashMap<Box<str>, Box<[u64]>>,
    rules: &[Rule],
    words: usize,
    s: &str,
    f: impl FnOnce(&[u64]) -> R,
) -> R {
    if let Some(bits) = cache.get(s) {
        return f(bits);
    }
    let mut bits = vec![0u64; words].into_boxed_slice();
    for (i, rule) in rules.iter().enumerate() {
        // A search that exceeds the backtracking limit counts as no match.
        if let Some(re) = &rule.regex {
            if re.is_match(s).unwrap_or(false) {
                if let Some(w) = bits.get_mut(i / 64) {
                    *w |= 1 << (i % 64);
                }
            }
        }
    }
    let r = f(&bits);
    cache.insert(s.into(), bits);
    r
}

/// Sets `data[key]` of every event to `value_for(hits)`, the value for the bit set of
/// the rules matching its data. Long lists are worked on in parts on the CPU pool, each
/// with its own copy of `rules`.
fn set_by_rules(
    mut events: Vec<QEvent>,
    rules: &RuleSet,
    key: &str,
    value_for: impl Fn(&[u64]) -> Val + Sync,
) -> Vec<QEvent> {
    let key = Key::new(key);
    for_parts(
        &mut events,
        || rules.fresh(),
        |rules, part| {
            let mut hits = rules.hit_buffer();
            patch_data(part, |data| {
                rules.matches(data, &mut hits);
                Some(vec![(key.clone(), value_for(&hits))])
            });
        },
    );
    events
}

/// Sets `data["$category"]` of every event to the deepest matching category (ties: the later
/// rule; `["Uncategorized"]` when none matches; an empty category never wins).
pub fn categorize(events: Vec<QEvent>, categories: &[Vec<String>], rules: &RuleSet) -> Vec<QEvent> {
    // Built once per call and shared by every categorised event.
    let values: Vec<Val> = categories
        .iter()
        .map(|c| Val::Arr(c.iter().map(|s| Val::str(s)).collect()))
        .collect();
    let uncategorized = Val::Arr(Arc::from([Val::str("Uncategorized")]));
    set_by_rules(events, rules, "$category", |hits| {
        let mut best: Option<usize> = None;
        let mut best_len = 1;
        for (i, cat) in categories.iter().enumerate() {
            if RuleSet::is_hit(hits, i) && cat.len() >= best_len {
                best = Some(i);
                best_len = cat.len();
            }
        }
        match best.and_then(|i| values.get(i)) {
            Some(v) => v.clone(),
            None => uncategorized.clone(),
        }
    })
}

/// Sets `data["$tags"]` of every event to the sorted, de-duplicated names of the matching
/// rules.
pub fn tag(events: Vec<QEvent>, names: &[String], rules: &RuleSet) -> Vec<QEvent> {
    set_by_rules(events, rules, "$tags", |hits| {
        let mut tags: Vec<&String> = names
            .iter()
            .enumerate()
            .filter(|(i, _)| RuleSet::is_hit(hits, *i))
            .map(|(_, n)| n)
            .collect();
        tags.sort();
        tags.dedup();
        Val::Arr(tags.into_iter().map(|s| Val::str(s)).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transforms::testutil::ev;
    use serde_json::json;

    fn rule(re: &str) -> Rule {
        Rule {
            regex: Some(Regex::new(re).unwrap()),
            select_keys: None,
        }
    }

    fn cats(v: &[&[&str]]) -> Vec<Vec<String>> {
        v.iter()
            .map(|c| c.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn deepest_wins_ties_go_later_empty_never() {
        let events = vec![
            ev(0.0, 1.0, &[("title", "GitHub - x")]),
            ev(1.0, 1.0, &[("title", "nothing")]),
        ];
        let c = cats(&[&["Work", "Programming"], &["Work"], &["Other", "X"], &[]]);
        let rs = RuleSet::new(vec![rule("GitHub"), rule("GitHub"), rule("Git"), rule("")]);
        let out = categorize(events, &c, &rs);
        assert_eq!(out[0].data["$category"].to_json(), json!(["Other", "X"]));
        assert_eq!(out[1].data["$category"].to_json(), json!(["Uncategorized"]));
    }

    #[test]
    fn select_keys_none_rules_and_non_strings() {
        let mut e = ev(0.0, 1.0, &[("app", "vim"), ("title", "emacs")]);
        e.data = e.data.patched(vec![(Key::from("n"), Val::Num(42.into()))]);
        let rules = vec![
            Rule {
                regex: Some(Regex::new("emacs").unwrap()),
                select_keys: Some(vec!["app".into()]),
            },
            Rule {
                regex: None,
                select_keys: None,
            },
            rule("42"),
            Rule {
                regex: Some(Regex::new("vim").unwrap()),
                select_keys: Some(vec!["missing".into(), "app".into()]),
            },
        ];
        let names: Vec<String> = ["b", "none", "num", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let out = tag(vec![e], &names, &RuleSet::new(rules));
        assert_eq!(out[0].data["$tags"].to_json(), json!(["a"]));
    }

    #[test]
    fn tags_sorted_and_deduplicated() {
        let names: Vec<String> = ["z", "a", "z"].iter().map(|s| s.to_string()).collect();
        let out = tag(
            vec![ev(0.0, 1.0, &[("t", "x")]), ev(0.0, 1.0, &[("t", "")])],
            &names,
            &RuleSet::new(vec![rule("x"), rule("x"), rule("x")]),
        );
        assert_eq!(out[0].data["$tags"].to_json(), json!(["a", "z"]));
        assert_eq!(out[1].data["$tags"].to_json(), json!([]));
    }

    #[test]
    fn many_rules_use_several_words() {
        let rules: Vec<Rule> = (0..130).map(|i| rule(&format!("^w{i}$"))).collect();
        let names: Vec<String> = (0..130).map(|i| format!("n{i:03}")).collect();
        let out = tag(
            vec![ev(0.0, 1.0, &[("t", "w129")])],
            &names,
            &RuleSet::new(rules),
        );
        assert_eq!(out[0].data["$tags"].to_json(), json!(["n129"]));
    }
}
