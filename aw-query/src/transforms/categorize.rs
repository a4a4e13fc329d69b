//! Rule matching for `categorize`, `tag` and `filter_keyvals_regex`.
//!
//! A regex search per rule per event would dominate a year-long query (hundreds of thousands
//! of events × a dozen rules × every data value). Events repeat the same strings (app names,
//! window titles) over and over, so the set of rules matching a string is computed once per
//! distinct string per call and kept in a hash map as a bit set.
//!
//! A string seen for the first time is matched against every plain rule in one pass
//! ([`OnePass`], a `regex::RegexSet`) instead of one search per rule: a year of window
//! titles has tens of thousands of distinct strings, and the dashboard's thirteen category
//! rules each searched every one (a tenth of a cold 365-day desktop query's CPU). Rules the
//! `regex` crate cannot run (look-around, back-references, word boundaries: what
//! `fancy_regex` runs on its own backtracking engine) are still searched one by one. The set
//! takes about a millisecond to compile for the dashboard's rules, more than a day's few
//! hundred titles cost searched rule by rule, so a rule list compiles it when it has met
//! [`ONE_PASS_AFTER`] distinct strings in one call, or at once when an earlier call had the
//! same rule list (the dashboard sends the same categories with every query). Sets are kept
//! between calls in a small process-wide table ([`LazyOnePass`]), and shared as they are,
//! so the lazy DFA states a search builds serve later queries too.

use std::sync::{Arc, OnceLock};

use fancy_regex::{Expr, Regex};

use crate::bounded_table::BoundedTable;
use crate::data::{Key, Val};
use crate::event::{patch_data, Data, QEvent};
use crate::fxhash::FxHashMap;
use crate::parts::for_parts;

/// One compiled rule.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// The pattern; `None` for rules of type `none`, which never match.
    pub regex: Option<Regex>,
    /// Only these data keys are tested; `None` tests every data value.
    pub select_keys: Option<Vec<String>>,
}

/// How many distinct strings a call matches rule by rule before it compiles the one-pass
/// set (which saves about 0.4 µs per string for the dashboard's thirteen rules).
pub(crate) const ONE_PASS_AFTER: usize = 2048;

/// Most rule lists whose sets are kept between calls ([`BoundedTable`]). Each
/// kept set holds its search caches too (lazy DFA states: typically a few hundred KB, at
/// most the `regex` crate's 2 MB per cache), so the table stays small.
const KEPT_RULE_LISTS: usize = 16;

/// What the process-wide table knows of a rule list.
#[derive(Debug, Clone)]
enum KnownRuleList {
    /// An earlier call had it; no set was built.
    Seen,
    /// Its set (`None`: it has none, see [`OnePass::of`]).
    Built(Option<Arc<OnePass>>),
}

/// The rule list's patterns (`None` for rules of type `none`) → what is known of it.
type RuleListTable = BoundedTable<Vec<Option<String>>, KnownRuleList>;

fn rule_lists() -> &'static RuleListTable {
    static TABLE: OnceLock<RuleListTable> = OnceLock::new();
    TABLE.get_or_init(|| BoundedTable::new(KEPT_RULE_LISTS))
}

/// The one-pass set of one call's rule list: taken from the table, or built on first need
/// (see the module docs), and shared by the copies of [`RuleSet::fresh`].
#[derive(Debug)]
struct LazyOnePass {
    cell: OnceLock<Option<Arc<OnePass>>>,
    /// Built once a copy has met this many distinct strings.
    after: usize,
    /// The table's key for this rule list.
    key: Vec<Option<String>>,
}

impl LazyOnePass {
    fn for_rules(rules: &[Rule]) -> LazyOnePass {
        let key: Vec<Option<String>> = rules
            .iter()
            .map(|r| r.regex.as_ref().map(|re| re.as_str().to_string()))
            .collect();
        let cell = OnceLock::new();
        let mut after = ONE_PASS_AFTER;
        match rule_lists().get(&key) {
            Some(KnownRuleList::Built(set)) => {
                let _ = cell.set(set);
                after = 0;
            }
            Some(KnownRuleList::Seen) => after = 0,
            None => rule_lists().insert(key.clone(), KnownRuleList::Seen),
        }
        LazyOnePass { cell, after, key }
    }

    /// The set, once a copy has met `distinct` strings (building and keeping it if needed).
    fn get(&self, rules: &[Rule], distinct: usize) -> Option<&OnePass> {
        if distinct < self.after && self.cell.get().is_none() {
            return None;
        }
        self.cell
            .get_or_init(|| {
                let set = OnePass::of(rules).map(Arc::new);
                rule_lists().insert(self.key.clone(), KnownRuleList::Built(set.clone()));
                set
            })
            .as_deref()
    }
}

/// The rules whose patterns the `regex` crate runs as `fancy_regex` itself would hand them
/// to it, matched together in one pass over a string.
#[derive(Debug)]
struct OnePass {
    set: regex::RegexSet,
    /// The index in the rule list of each pattern of `set`.
    rules: Vec<usize>,
    /// Whether each rule of the rule list is one of `set`'s.
    covered: Vec<bool>,
}

impl OnePass {
    /// The set of the plain rules among `rules`, or `None` when there are fewer than two (a
    /// lone regex stops at its first match; a set reads the whole string), or when the set
    /// cannot be built (e.g. beyond the `regex` crate's size limit: then every rule is
    /// searched on its own, as before).
    fn of(rules: &[Rule]) -> Option<OnePass> {
        let mut patterns = Vec::new();
        let mut indexes = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            if let Some(pattern) = rule.regex.as_ref().and_then(plain_pattern) {
                patterns.push(pattern);
                indexes.push(i);
            }
        }
        if patterns.len() < 2 {
            return None;
        }
        let set = regex::RegexSet::new(&patterns).ok()?;
        let mut covered = vec![false; rules.len()];
        for &i in &indexes {
            if let Some(c) = covered.get_mut(i) {
                *c = true;
            }
        }
        Some(OnePass {
            set,
            rules: indexes,
            covered,
        })
    }
}

/// The pattern `fancy_regex` hands to the `regex` engine for `re` (its own parse, written
/// back in the `regex` crate's syntax), or `None` when it runs `re` on its backtracking
/// engine. Taken from fancy's parse tree, not from the text as written, because the two
/// crates read some escapes differently; so a rule matches exactly the strings it matched
/// when searched on its own.
fn plain_pattern(re: &Regex) -> Option<String> {
    let tree = Expr::parse_tree(re.as_str()).ok()?;
    if !is_plain(&tree.expr) {
        return None;
    }
    let mut pattern = String::new();
    tree.expr.to_str(&mut pattern, 0);
    Some(pattern)
}

/// Whether every node of `e` is one `fancy_regex` leaves to the `regex` engine (and can
/// write back as text: `Expr::to_str` panics on the others).
fn is_plain(e: &Expr) -> bool {
    use fancy_regex::Assertion as A;
    match e {
        Expr::Empty | Expr::Any { .. } | Expr::Literal { .. } | Expr::Delegate { .. } => true,
        Expr::Assertion(a) => matches!(
            a,
            A::StartText | A::EndText | A::StartLine { .. } | A::EndLine { .. }
        ),
        Expr::Concat(children) | Expr::Alt(children) => children.iter().all(is_plain),
        Expr::Group(child) => is_plain(child),
        Expr::Repeat { child, .. } => is_plain(child),
        _ => false,
    }
}

/// A list of rules with a per-string cache of which rules match.
#[derive(Debug)]
pub(crate) struct RuleSet {
    rules: Vec<Rule>,
    /// The plain rules, matched in one pass (shared by the copies of [`RuleSet::fresh`]).
    one_pass: Arc<LazyOnePass>,
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
    pub(crate) fn new(rules: Vec<Rule>) -> Self {
        let one_pass = Arc::new(LazyOnePass::for_rules(&rules));
        RuleSet::with_one_pass(rules, one_pass)
    }

    fn with_one_pass(rules: Vec<Rule>, one_pass: Arc<LazyOnePass>) -> Self {
        let words = rules.len().div_ceil(64).max(1);
        let any_all_values = rules
            .iter()
            .any(|r| r.regex.is_some() && r.select_keys.is_none());
        RuleSet {
            rules,
            one_pass,
            words,
            any_all_values,
            cache: FxHashMap::default(),
            all_values: vec![0; words],
        }
    }

    /// The same rules with a cache of their own (for a part of the events worked on by
    /// another thread).
    pub(crate) fn fresh(&self) -> RuleSet {
        RuleSet::with_one_pass(self.rules.clone(), self.one_pass.clone())
    }

    /// A bit set sized for [`RuleSet::matches`].
    pub(crate) fn hit_buffer(&self) -> Vec<u64> {
        vec![0; self.words]
    }

    /// Whether rule `i` is set in `hits`.
    pub(crate) fn is_hit(hits: &[u64], i: usize) -> bool {
        hits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Fills `hits` with the rules matching an event's data.
    pub(crate) fn matches(&mut self, data: &Data, hits: &mut [u64]) {
        hits.fill(0);
        let RuleSet {
            rules,
            one_pass,
            words,
            any_all_values,
            cache,
            all_values,
        } = self;
        all_values.fill(0);
        let one_pass = one_pass.get(rules, cache.len());
        if *any_all_values {
            for v in data.values() {
                if let Val::Str(s) = v {
                    with_bits(cache, rules, one_pass, *words, s, |bits| {
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
                    Some(Val::Str(s)) => with_bits(cache, rules, one_pass, *words, s, |bits| {
                        Self::is_hit(bits, i)
                    }),
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
    one_pass: Option<&OnePass>,
    words: usize,
    s: &str,
    f: impl FnOnce(&[u64]) -> R,
) -> R {
    if let Some(bits) = cache.get(s) {
        return f(bits);
    }
    let mut bits = vec![0u64; words].into_boxed_slice();
    let mut set = |i: usize| {
        if let Some(w) = bits.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    };
    if let Some(one_pass) = one_pass {
        for pattern in one_pass.set.matches(s).iter() {
            if let Some(&i) = one_pass.rules.get(pattern) {
                set(i);
            }
        }
    }
    for (i, rule) in rules.iter().enumerate() {
        if one_pass.is_some_and(|p| p.covered.get(i).copied().unwrap_or(false)) {
            continue;
        }
        // A search that exceeds the backtracking limit counts as no match.
        if let Some(re) = &rule.regex {
            if re.is_match(s).unwrap_or(false) {
                set(i);
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
pub(crate) fn categorize(
    events: Vec<QEvent>,
    categories: &[Vec<String>],
    rules: &RuleSet,
) -> Vec<QEvent> {
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
pub(crate) fn tag(events: Vec<QEvent>, names: &[String], rules: &RuleSet) -> Vec<QEvent> {
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

    /// The one-pass set gives every rule exactly the answer of its own search, for plain
    /// rules (in the set) and the others (searched alone) alike, over odd strings.
    #[test]
    fn one_pass_matches_what_each_rule_matches() {
        let patterns = [
            "GitHub|Stack Overflow|BitBucket",
            "(?i)vim|kate",
            "^code$",
            "a.c",
            "(?s)a.c",
            "(?m)^line$",
            r"\.",
            r"x{2,3}",
            "[[:alpha:]]+[0-9]",
            r"(?i)straße",
            "é|ÉCOLE",
            r"\x41\u{e9}",
            "(?x) a b  # spaced",
            r"\bword\b",
            "(?<=x)y",
            r"(a)\1",
            "(?i)(?!no)n.",
            "",
            "[^a-z]",
            r"\d+\s\w",
        ];
        let rules: Vec<Rule> = patterns.iter().map(|p| rule(p)).collect();
        let rs = RuleSet::new(rules.clone());
        let one_pass = rs.one_pass.get(&rs.rules, usize::MAX);
        let plain = one_pass.map_or(0, |p| p.rules.len());
        assert_eq!(
            plain, 16,
            "the look-around, back-reference and \\b rules stay apart"
        );
        let mut strings: Vec<String> = [
            "GitHub - x",
            "stack overflow",
            "VIM",
            "code",
            "code ",
            "abc",
            "a\nc",
            "x\nline\ny",
            ".",
            "xxx",
            "ab1",
            "STRASSE",
            "Straße",
            "école",
            "ÉCOLE",
            "Aé",
            "ab",
            "a word.",
            "swordfish",
            "xy",
            "aa",
            "No",
            "nO!",
            "",
            "Ab",
            "42 z",
            "\u{212a}ate",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let alphabet: Vec<char> = "abcxyéÉß.\n 1AWword".chars().collect();
        let mut seed = 7u64;
        for _ in 0..2000 {
            let len = (seed >> 33) as usize % 9;
            let text: String = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    alphabet[(seed >> 33) as usize % alphabet.len()]
                })
                .collect();
            strings.push(text);
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        let mut cache = FxHashMap::default();
        for s in &strings {
            let bits = with_bits(&mut cache, &rs.rules, one_pass, rs.words, s, |b| b.to_vec());
            for (i, r) in rules.iter().enumerate() {
                let alone = r
                    .regex
                    .as_ref()
                    .is_some_and(|re| re.is_match(s).unwrap_or(false));
                assert_eq!(
                    RuleSet::is_hit(&bits, i),
                    alone,
                    "{:?} on {s:?}",
                    patterns[i]
                );
            }
        }
    }

    /// A call that meets more distinct strings than [`ONE_PASS_AFTER`] switches to the set
    /// part way, and its answers stay those of each rule's own search.
    #[test]
    fn switching_to_one_pass_mid_call_changes_no_answer() {
        let patterns = ["^w1", r"w\d*7$", "(?<=w)12", "(?i)W9"];
        let rules: Vec<Rule> = patterns.iter().map(|p| rule(p)).collect();
        let names: Vec<String> = (0..patterns.len()).map(|i| format!("r{i}")).collect();
        let n = ONE_PASS_AFTER * 2 + 5;
        let events: Vec<QEvent> = (0..n)
            .map(|i| ev(i as f64, 1.0, &[("t", &format!("w{i}"))]))
            .collect();
        let rs = RuleSet::new(rules.clone());
        let out = tag(events, &names, &rs);
        for (i, e) in out.iter().enumerate() {
            let text = format!("w{i}");
            let expected: Vec<String> = rules
                .iter()
                .zip(&names)
                .filter(|(r, _)| {
                    r.regex
                        .as_ref()
                        .is_some_and(|re| re.is_match(&text).unwrap_or(false))
                })
                .map(|(_, name)| name.clone())
                .collect();
            assert_eq!(e.data["$tags"].to_json(), json!(expected), "{text}");
        }
        // Built part way by a copy of `rs` (the copies share it).
        assert!(rs.one_pass.cell.get().is_some_and(Option::is_some));
        // A later call with the same rules takes that very set at once.
        let later = RuleSet::new(rules);
        let (a, b) = (
            rs.one_pass.get(&rs.rules, 0),
            later.one_pass.get(&later.rules, 0),
        );
        assert!(a.zip(b).is_some_and(|(a, b)| std::ptr::eq(a, b)));
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
