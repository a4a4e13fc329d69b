//! `categorize`, `tag` and `filter_keyvals_regex`: rule parsing and regex compilation.
//! Every regex is compiled once per call at most, never per event: compiled patterns are
//! kept between queries (`regex_cache`).

use std::collections::BTreeMap;

use fancy_regex::Regex;

use super::args::{arity, element_error, events, list, shared_events, string, strings, type_error};
use crate::error::{QueryError, QueryResult};
use crate::transforms::categorize::{self, Rule, RuleSet};
use crate::transforms::filter;
use crate::value::DataType;

fn invalid(msg: String) -> QueryError {
    QueryError::InvalidFunctionParameters(msg)
}

/// Compiles `pattern` (the message quotes the pattern as given).
fn compile(pattern: &str, ignore_case: bool) -> QueryResult<Regex> {
    let full = if ignore_case {
        format!("(?i){pattern}")
    } else {
        pattern.to_string()
    };
    crate::regex_cache::compiled(&full).map_err(|e| {
        QueryError::RegexCompileError(format!("Failed to compile regex string '{pattern}': {e}"))
    })
}

/// Parses and compiles one rule dict.
fn parse_rule(v: DataType) -> QueryResult<Rule> {
    let map: BTreeMap<String, DataType> = match v {
        DataType::Dict(m) => m,
        other => return Err(type_error("Dict (a rule)", &other)),
    };
    let ty = match map.get("type") {
        Some(DataType::String(s)) => s.as_str(),
        Some(other) => {
            return Err(invalid(format!(
                "Rule field 'type' must be a String, got {}",
                other.describe()
            )))
        }
        None => return Err(invalid("Rule is missing the field 'type'".to_string())),
    };
    match ty {
        "none" => {
            return Ok(Rule {
                regex: None,
                select_keys: None,
            })
        }
        "regex" => {}
        other => return Err(invalid(format!("Unknown rule type '{other}'"))),
    }
    let pattern = match map.get("regex") {
        Some(DataType::String(s)) => s.as_str(),
        Some(other) => {
            return Err(invalid(format!(
                "Rule field 'regex' must be a String, got {}",
                other.describe()
            )))
        }
        None => {
            return Err(invalid(
                "Rule of type 'regex' is missing the field 'regex'".to_string(),
            ))
        }
    };
    let ignore_case = match map.get("ignore_case") {
        None => false,
        Some(DataType::Bool(b)) => *b,
        Some(other) => {
            return Err(invalid(format!(
                "Rule field 'ignore_case' must be a Bool, got {}",
                other.describe()
            )))
        }
    };
    let select_keys = match map.get("select_keys") {
        None => None,
        Some(DataType::List(items)) => {
            let mut keys = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    DataType::String(s) => keys.push(s.clone()),
                    other => {
                        return Err(invalid(format!(
                            "Rule field 'select_keys' must be a List of Strings, list contains {}",
                            other.describe()
                        )))
                    }
                }
            }
            if keys.is_empty() {
                return Err(QueryError::RegexCompileError(
                    "Rule field 'select_keys' must not be an empty list".to_string(),
                ));
            }
            Some(keys)
        }
        Some(other) => {
            return Err(invalid(format!(
                "Rule field 'select_keys' must be a List of Strings, got {}",
                other.describe()
            )))
        }
    };
    Ok(Rule {
        regex: Some(compile(pattern, ignore_case)?),
        select_keys,
    })
}

/// Splits a `[[name, rule], …]` list into names (via `name`) and compiled rules.
fn parse_pairs<T>(
    v: DataType,
    name: impl Fn(DataType) -> QueryResult<T>,
) -> QueryResult<(Vec<T>, Vec<Rule>)> {
    let items = list(v)?;
    let mut names = Vec::with_capacity(items.len());
    let mut rules = Vec::with_capacity(items.len());
    for item in items {
        let pair = match item {
            DataType::List(p) if p.len() == 2 => p,
            other => return Err(element_error("[name, rule] pairs", &other)),
        };
        let [n, r]: [DataType; 2] = match pair.try_into() {
            Ok(a) => a,
            Err(_) => return Err(invalid("Expected a [name, rule] pair".to_string())),
        };
        names.push(name(n)?);
        rules.push(parse_rule(r)?);
    }
    Ok((names, rules))
}

/// `categorize(events, [[category, rule], …])`.
pub(super) fn categorize(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e, classes] = arity::<2>(args)?;
    let e = events(e)?;
    let (categories, rules) = parse_pairs(classes, strings)?;
    let set = RuleSet::new(rules);
    Ok(DataType::from_events(categorize::categorize(
        e,
        &categories,
        &set,
    )))
}

/// `tag(events, [[tag, rule], …])`.
pub(super) fn tag(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e, tags] = arity::<2>(args)?;
    let e = events(e)?;
    let (names, rules) = parse_pairs(tags, string)?;
    let set = RuleSet::new(rules);
    Ok(DataType::from_events(categorize::tag(e, &names, &set)))
}

/// `filter_keyvals_regex(events, key, regex)`.
pub(super) fn filter_keyvals_regex(args: Vec<DataType>) -> QueryResult<DataType> {
    let [e, key, pattern] = arity::<3>(args)?;
    let e = shared_events(e)?;
    let key = string(key)?;
    let pattern = string(pattern)?;
    let mut set = RuleSet::new(vec![Rule {
        regex: Some(compile(&pattern, false)?),
        select_keys: Some(vec![key]),
    }]);
    Ok(DataType::from_events(filter::filter_keyvals_regex(
        e, &mut set,
    )))
}
