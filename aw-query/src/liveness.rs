//! Last-use analysis: marks variable reads after which the variable is dead, so the
//! interpreter can move the value out of the environment instead of copying it.
//!
//! The language has no loops, so every execution visits statements in textual order (a
//! subsequence of it, because of `if`). A classic backwards liveness pass over the structured
//! tree is therefore exact: a read is movable when, on every path after it, the variable is
//! overwritten or never read again. Reads of `RETURN` and `TIMEINTERVAL` are never moved:
//! `RETURN` is read when the program ends and `TIMEINTERVAL` implicitly by `query_bucket`.
//! The callee of a call is looked up (not consumed) after its arguments are evaluated, so it
//! counts as a use.

use std::collections::HashSet;

use crate::parser::{Expr, Stmt};

/// Sets `movable` on every variable read that is the last use of its value.
pub(crate) fn mark_last_uses(program: &mut [Stmt]) {
    let mut live = HashSet::new();
    block(program, &mut live);
}

fn block(stmts: &mut [Stmt], live: &mut HashSet<String>) {
    for stmt in stmts.iter_mut().rev() {
        statement(stmt, live);
    }
}

fn statement(stmt: &mut Stmt, live: &mut HashSet<String>) {
    match stmt {
        Stmt::Assign(name, e) => {
            live.remove(name.as_str());
            expr(e, live);
        }
        Stmt::Expr(e) => expr(e, live),
        Stmt::Return { target, expr: e } => {
            if let Some(name) = target {
                live.remove(name.as_str());
            }
            expr(e, live);
        }
        Stmt::If {
            branches,
            otherwise,
        } => {
            let out = live.clone();
            // Live set before the "next" decision point if the current condition is false.
            let mut next = match otherwise {
                Some(b) => {
                    let mut l = out.clone();
                    block(b, &mut l);
                    l
                }
                None => out.clone(),
            };
            for (cond, body) in branches.iter_mut().rev() {
                let mut body_live = out.clone();
                block(body, &mut body_live);
                body_live.extend(next);
                expr(cond, &mut body_live);
                next = body_live;
            }
            *live = next;
        }
    }
}

fn expr(e: &mut Expr, live: &mut HashSet<String>) {
    match e {
        Expr::Number(_) | Expr::Bool(_) | Expr::Str(_) => {}
        Expr::Var { name, movable } => {
            *movable = name != "RETURN" && name != "TIMEINTERVAL" && !live.contains(name.as_str());
            live.insert(name.clone());
        }
        Expr::Call { name, args } => {
            live.insert(name.clone());
            for a in args.iter_mut().rev() {
                expr(a, live);
            }
        }
        Expr::List(items) => {
            for a in items.iter_mut().rev() {
                expr(a, live);
            }
        }
        Expr::Dict(entries) => {
            for (_, a) in entries.iter_mut().rev() {
                expr(a, live);
            }
        }
        Expr::Chain { first, rest } => {
            for (_, a) in rest.iter_mut().rev() {
                expr(a, live);
            }
            expr(first, live);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;

    /// The `movable` flags of all variable reads, in textual order.
    fn flags(src: &str) -> Vec<(String, bool)> {
        let mut p = parse(src).unwrap();
        mark_last_uses(&mut p);
        let mut out = Vec::new();
        fn walk_e(e: &Expr, out: &mut Vec<(String, bool)>) {
            match e {
                Expr::Var { name, movable } => out.push((name.clone(), *movable)),
                Expr::Call { args, .. } | Expr::List(args) => {
                    args.iter().for_each(|a| walk_e(a, out))
                }
                Expr::Dict(en) => en.iter().for_each(|(_, a)| walk_e(a, out)),
                Expr::Chain { first, rest } => {
                    walk_e(first, out);
                    rest.iter().for_each(|(_, a)| walk_e(a, out));
                }
                _ => {}
            }
        }
        fn walk_s(s: &[Stmt], out: &mut Vec<(String, bool)>) {
            for st in s {
                match st {
                    Stmt::Assign(_, e) | Stmt::Expr(e) | Stmt::Return { expr: e, .. } => {
                        walk_e(e, out)
                    }
                    Stmt::If {
                        branches,
                        otherwise,
                    } => {
                        for (c, b) in branches {
                            walk_e(c, out);
                            walk_s(b, out);
                        }
                        if let Some(b) = otherwise {
                            walk_s(b, out);
                        }
                    }
                }
            }
        }
        walk_s(&p, &mut out);
        out
    }

    fn f(v: &[(&str, bool)]) -> Vec<(String, bool)> {
        v.iter().map(|(n, b)| (n.to_string(), *b)).collect()
    }

    #[test]
    fn straight_line() {
        assert_eq!(
            flags("e = q(); a = g(e); e = h(e, a); b = m(e); c = n(e); RETURN = {\"b\": b, \"c\": c};"),
            f(&[("e", false), ("e", true), ("a", true), ("e", false), ("e", true), ("b", true), ("c", true)])
        );
        assert_eq!(
            flags("x = 1; return x + x;"),
            f(&[("x", false), ("x", true)])
        );
        assert_eq!(flags("return RETURN;"), f(&[("RETURN", false)]));
    }

    #[test]
    fn callee_counts_as_use() {
        assert_eq!(
            flags("g = flood; a = g; b = g(a);"),
            f(&[("flood", true), ("g", false), ("a", true)])
        );
    }

    #[test]
    fn branches() {
        // `x` is read in the else branch, so the read in the condition must copy.
        assert_eq!(
            flags("if x == 1 { y = 1; } else { y = x; } return y;"),
            f(&[("x", false), ("x", true), ("y", true)])
        );
        // A write in only one branch does not kill the variable.
        assert_eq!(
            flags("a = x; if c { x = 2; } return x;"),
            f(&[("x", false), ("c", true), ("x", true)])
        );
        // Read in one branch only: last use in that branch.
        assert_eq!(
            flags("if c { a = x; } elif d { a = 1; } return x;"),
            f(&[("c", true), ("x", false), ("d", true), ("x", true)])
        );
    }
}
