//! Compiled rule regexes, kept from one query to the next.
//!
//! The dashboard sends the same category rules with every query, and compiling them was
//! most of a small query's time: the thirteen default categories take about 2 ms to
//! compile, a 1-day desktop query about 4 ms in all, and a week view compiles them once per
//! day. A compiled regex is immutable and answers the same for the same pattern text, so one
//! compiled copy serves every later query; each gets its own clone (cheap: the compiled
//! program is shared, the search scratch space is not).
//!
//! Bounded ([`BoundedTable`]): at most [`MAX_PATTERNS`] patterns of at most
//! [`MAX_PATTERN_BYTES`] bytes each. Patterns that fail to compile are not kept (their error
//! is made again).

use std::sync::OnceLock;

use fancy_regex::Regex;

use crate::bounded_table::BoundedTable;

/// The most patterns kept.
pub(crate) const MAX_PATTERNS: usize = 256;

/// Longer patterns are compiled each time and not kept.
pub(crate) const MAX_PATTERN_BYTES: usize = 4096;

fn table() -> &'static BoundedTable<String, Regex> {
    static TABLE: OnceLock<BoundedTable<String, Regex>> = OnceLock::new();
    TABLE.get_or_init(|| BoundedTable::new(MAX_PATTERNS))
}

/// `pattern` compiled, from the table when it was compiled before.
pub(crate) fn compiled(pattern: &str) -> Result<Regex, Box<fancy_regex::Error>> {
    let keep = pattern.len() <= MAX_PATTERN_BYTES;
    if keep {
        if let Some(known) = table().get(pattern) {
            return Ok(known);
        }
    }
    let regex = Regex::new(pattern).map_err(Box::new)?;
    if keep {
        table().insert(pattern.to_string(), regex.clone());
    }
    Ok(regex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_regexes_answer_as_new_ones_and_the_table_stays_bounded() {
        let first = compiled("(?i)GitHub|vim").unwrap();
        let again = compiled("(?i)GitHub|vim").unwrap();
        for text in ["github", "VIM", "emacs", ""] {
            assert_eq!(first.is_match(text).unwrap(), again.is_match(text).unwrap());
        }
        assert_eq!(again.as_str(), "(?i)GitHub|vim");
        assert!(compiled("(unclosed").is_err());
        for i in 0..MAX_PATTERNS * 2 {
            assert!(compiled(&format!("^p{i}$"))
                .unwrap()
                .is_match(&format!("p{i}"))
                .unwrap());
        }
        assert!(table().len() <= MAX_PATTERNS);
        let long = format!("^{}$", "a".repeat(MAX_PATTERN_BYTES));
        assert!(compiled(&long)
            .unwrap()
            .is_match(&"a".repeat(MAX_PATTERN_BYTES))
            .unwrap());
        assert!(table().get(&long).is_none());
    }
}
