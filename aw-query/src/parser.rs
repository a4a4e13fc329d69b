//! The syntax tree and a recursive-descent parser for it.
//!
//! Binary operators all have the same precedence and associate to the left, so a chain
//! `a + b * c` is kept flat as a first operand and a list of (operator, operand) pairs; this
//! also keeps long chains from producing deep trees. Every other kind of nesting (parentheses,
//! lists, dicts, call arguments, blocks) counts towards [`MAX_NESTING`], which bounds the
//! recursion of the parser and of every later walk over the tree.

use crate::error::{QueryError, QueryResult};
use crate::lexer::{tokenize, Tok, Token};

/// Deepest allowed nesting of parentheses, lists, dicts, call arguments and blocks: far above
/// what the reference accepts (it overflows its stack at about 2,000 levels of lists, and
/// evaluates 5,000 redundant parentheses), and within what a thread with
/// [`crate::EVAL_STACK`] can parse, evaluate, serialise and drop.
pub const MAX_NESTING: usize = 10_000;

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `==`
    Eq,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    /// A number literal.
    Number(f64),
    /// A boolean literal.
    Bool(bool),
    /// A string literal.
    Str(String),
    /// A variable read. `movable` is set by the liveness analysis when no later read can
    /// observe the variable, so its value can be moved out instead of copied.
    Var {
        /// The variable.
        name: String,
        /// Whether the read may take the value instead of copying it.
        movable: bool,
    },
    /// A call of the function stored in variable `name`.
    Call {
        /// Variable holding the function.
        name: String,
        /// Arguments, evaluated left to right.
        args: Vec<Expr>,
    },
    /// A list literal.
    List(Vec<Expr>),
    /// A dict literal (duplicate keys: last wins).
    Dict(Vec<(String, Expr)>),
    /// `first op1 e1 op2 e2 …`, evaluated left to right.
    Chain {
        /// Leftmost operand.
        first: Box<Expr>,
        /// The following operators and operands.
        rest: Vec<(BinOp, Expr)>,
    },
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stmt {
    /// `name = expr;`
    Assign(String, Expr),
    /// `expr;`, evaluated for its effect.
    Expr(Expr),
    /// `return expr;` or `return name = expr;` (which assigns and returns None).
    Return {
        /// The variable assigned by `return name = expr;`.
        target: Option<String>,
        /// The expression.
        expr: Expr,
    },
    /// `if c { … } elif c { … } else { … }`.
    If {
        /// Conditions with their blocks, in order.
        branches: Vec<(Expr, Vec<Stmt>)>,
        /// The `else` block.
        otherwise: Option<Vec<Stmt>>,
    },
}

/// Parses a whole program.
pub(crate) fn parse(src: &str) -> QueryResult<Vec<Stmt>> {
    let mut p = Parser {
        toks: tokenize(src),
        pos: 0,
        expected: Vec::new(),
        depth: 0,
    };
    let mut stmts = Vec::new();
    while p.peek().is_some() {
        if p.eat("Semi") {
            continue;
        }
        stmts.push(p.statement()?);
    }
    Ok(stmts)
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Token kinds that would have been accepted at `pos`, for error messages.
    expected: Vec<&'static str>,
    depth: usize,
}

const OPERAND_START: [&str; 7] = [
    "Bool", "Ident", "LBrace", "LBracket", "LParen", "Number", "String",
];
const OPERATORS: [&str; 6] = ["Equals", "Minus", "Percent", "Plus", "Slash", "Star"];

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn peek_kind(&self) -> Option<&'static str> {
        self.peek().map(|t| t.tok.kind_name())
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).map(|t| t.tok.clone());
        if t.is_some() {
            self.pos += 1;
            self.expected.clear();
        }
        t
    }

    /// Consumes the current token if it has kind `kind`; otherwise records it as expected.
    fn eat(&mut self, kind: &'static str) -> bool {
        if self.peek_kind() == Some(kind) {
            self.bump();
            true
        } else {
            self.expected.push(kind);
            false
        }
    }

    fn expect(&mut self, kind: &'static str) -> QueryResult<()> {
        if self.eat(kind) {
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn token_desc(&self) -> String {
        match self.peek() {
            Some(t) => format!(
                "Some(({}, Span {{ lo: {}, hi: {}, line: {} }}))",
                t.tok, t.lo, t.hi, t.line
            ),
            None => "None".to_string(),
        }
    }

    /// A syntax error at the current token listing what was expected.
    fn error(&self) -> QueryError {
        let mut names: Vec<&str> = self.expected.clone();
        names.sort_unstable();
        names.dedup();
        let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        let list = match quoted.len() {
            0 => "something else".to_string(),
            1 => quoted[0].clone(),
            2 => format!("{} or {}", quoted[0], quoted[1]),
            n => format!("{}, or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
        };
        let msg = format!("expected {list}");
        QueryError::ParsingError(format!("({}, {:?})", self.token_desc(), msg))
    }

    fn enter(&mut self) -> QueryResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            let msg = format!(
                "query is nested too deeply: at most {MAX_NESTING} levels of parentheses, \
                 lists, dicts, function calls and blocks are allowed"
            );
            return Err(QueryError::ParsingError(format!(
                "({}, {:?})",
                self.token_desc(),
                msg
            )));
        }
        Ok(())
    }

    fn statement(&mut self) -> QueryResult<Stmt> {
        if self.eat("If") {
            return self.if_chain();
        }
        if self.eat("Return") {
            let (target, expr) = self.assign()?;
            self.expect("Semi")?;
            return Ok(Stmt::Return { target, expr });
        }
        let (target, expr) = self.assign()?;
        self.expect("Semi")?;
        Ok(match target {
            Some(name) => Stmt::Assign(name, expr),
            None => Stmt::Expr(expr),
        })
    }

    /// `IDENT "=" expr | expr`.
    fn assign(&mut self) -> QueryResult<(Option<String>, Expr)> {
        if let (Some(Tok::Ident(name)), Some(Tok::Assign)) = (
            self.toks.get(self.pos).map(|t| &t.tok),
            self.toks.get(self.pos + 1).map(|t| &t.tok),
        ) {
            let name = name.clone();
            self.bump();
            self.bump();
            return Ok((Some(name), self.expr()?));
        }
        Ok((None, self.expr()?))
    }

    fn if_chain(&mut self) -> QueryResult<Stmt> {
        let mut branches = Vec::new();
        let cond = self.expr()?;
        let block = self.block()?;
        branches.push((cond, block));
        while self.eat("Elif") {
            let cond = self.expr()?;
            let block = self.block()?;
            branches.push((cond, block));
        }
        let otherwise = if self.eat("Else") {
            Some(self.block()?)
        } else {
            None
        };
        Ok(Stmt::If {
            branches,
            otherwise,
        })
    }

    fn block(&mut self) -> QueryResult<Vec<Stmt>> {
        self.expect("LBrace")?;
        self.enter()?;
        let mut stmts = Vec::new();
        loop {
            if self.eat("RBrace") {
                break;
            }
            if self.eat("Semi") {
                continue;
            }
            stmts.push(self.statement()?);
        }
        self.depth -= 1;
        Ok(stmts)
    }

    fn expr(&mut self) -> QueryResult<Expr> {
        self.enter()?;
        let first = self.operand()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek().map(|t| &t.tok) {
                Some(Tok::Plus) => BinOp::Add,
                Some(Tok::Minus) => BinOp::Sub,
                Some(Tok::Star) => BinOp::Mul,
                Some(Tok::Slash) => BinOp::Div,
                Some(Tok::Percent) => BinOp::Mod,
                Some(Tok::Equals) => BinOp::Eq,
                _ => {
                    self.expected.extend_from_slice(&OPERATORS);
                    break;
                }
            };
            self.bump();
            rest.push((op, self.operand()?));
        }
        self.depth -= 1;
        Ok(if rest.is_empty() {
            first
        } else {
            Expr::Chain {
                first: Box::new(first),
                rest,
            }
        })
    }

    /// Comma-separated expressions up to `close` (the opener is already consumed).
    fn expr_list(&mut self, close: &'static str) -> QueryResult<Vec<Expr>> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Ok(items);
        }
        loop {
            items.push(self.expr()?);
            if self.eat("Comma") {
                continue;
            }
            self.expect(close)?;
            return Ok(items);
        }
    }

    fn operand(&mut self) -> QueryResult<Expr> {
        let Some(tok) = self.peek().map(|t| t.tok.clone()) else {
            self.expected.extend_from_slice(&OPERAND_START);
            return Err(self.error());
        };
        match tok {
            Tok::Ident(name) => {
                self.bump();
                if self.eat("LParen") {
                    let args = self.expr_list("RParen")?;
                    Ok(Expr::Call { name, args })
                } else {
                    Ok(Expr::Var {
                        name,
                        movable: false,
                    })
                }
            }
            Tok::LBracket => {
                self.bump();
                Ok(Expr::List(self.expr_list("RBracket")?))
            }
            Tok::LBrace => {
                self.bump();
                let mut entries = Vec::new();
                if self.eat("RBrace") {
                    return Ok(Expr::Dict(entries));
                }
                loop {
                    let key = match self.peek().map(|t| &t.tok) {
                        Some(Tok::Str(s)) => s.clone(),
                        _ => {
                            self.expected.push("String");
                            return Err(self.error());
                        }
                    };
                    self.bump();
                    self.expect("Colon")?;
                    entries.push((key, self.expr()?));
                    if self.eat("Comma") {
                        continue;
                    }
                    self.expect("RBrace")?;
                    return Ok(Expr::Dict(entries));
                }
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect("RParen")?;
                Ok(e)
            }
            Tok::Bool(b) => {
                self.bump();
                Ok(Expr::Bool(b))
            }
            Tok::Number(n) => {
                self.bump();
                Ok(Expr::Number(n))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::Str(s))
            }
            _ => {
                self.expected.extend_from_slice(&OPERAND_START);
                Err(self.error())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perr(src: &str) -> String {
        match parse(src) {
            Err(QueryError::ParsingError(m)) => m,
            other => panic!("expected a parsing error for {src:?}, got {other:?}"),
        }
    }

    #[test]
    fn reference_error_message_for_unary_minus() {
        assert_eq!(
            QueryError::ParsingError(perr("return -1;")).to_string(),
            r#"ParsingError("(Some((Minus, Span { lo: 7, hi: 8, line: 1 })), \"expected `Bool`, `Ident`, `LBrace`, `LBracket`, `LParen`, `Number`, or `String`\")")"#
        );
    }

    #[test]
    fn missing_semicolon_reports_end_of_input() {
        let m = perr("x = 1");
        assert!(m.starts_with("(None, "), "{m}");
        assert!(m.contains("`Semi`"), "{m}");
    }

    #[test]
    fn flat_chains() {
        let stmts = parse("return 1 + 2 * 3;").unwrap();
        let Stmt::Return { expr, .. } = &stmts[0] else {
            panic!()
        };
        assert!(matches!(expr, Expr::Chain { rest, .. } if rest.len() == 2));
    }

    #[test]
    fn grammar_quirks() {
        assert!(parse("if a { } elif b { x = 1; } else { ; }").is_ok());
        assert!(parse("if a { } else if b { }").is_err());
        assert!(parse("1; \"x\"; f(a);;;").is_ok());
        assert!(parse("return x = 5;").is_ok());
        assert!(parse("split_url_events (events);").is_ok());
        assert!(parse("x = {a: 1};").is_err());
        assert!(parse("x = [1,];").is_err());
        assert!(parse("x = {\"a\": 1,};").is_err());
        assert!(parse("x = e[0];").is_err());
        assert!(parse("if a { x = 1 }").is_err());
        assert!(parse("if a { }").is_ok());
        assert!(parse("").unwrap().is_empty());
        assert!(parse("return 1; ' garbage").is_ok());
        assert!(parse("return 'a';").is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        // The server parses on threads with this stack (the test thread's is 2 MiB).
        std::thread::Builder::new()
            .stack_size(crate::EVAL_STACK)
            .spawn(deep_nesting_cases)
            .unwrap()
            .join()
            .unwrap();
    }

    fn deep_nesting_cases() {
        for (open, close) in [("[", "]"), ("(", ")"), ("f(", ")"), ("{\"a\": ", "}")] {
            let m = perr(&format!("x = {};", open.repeat(100_000)));
            assert!(m.contains("nested too deeply"), "{m}");
            // Just below the limit parses (the statement's own expression is one level).
            let depth = MAX_NESTING - 1;
            let src = format!("x = {}1{};", open.repeat(depth), close.repeat(depth));
            assert!(parse(&src).is_ok(), "{open}");
            let depth = MAX_NESTING;
            let src = format!("x = {}1{};", open.repeat(depth), close.repeat(depth));
            assert!(parse(&src).is_err(), "{open}");
        }
        let m = perr(&"if a {".repeat(100_000));
        assert!(m.contains("nested too deeply"), "{m}");
        let n = MAX_NESTING;
        let src = format!("{}{}", "if a {".repeat(n), "}".repeat(n));
        assert!(parse(&src).is_ok());
        let src = format!("{}{}", "if a {".repeat(n + 1), "}".repeat(n + 1));
        assert!(parse(&src).is_err());
    }

    #[test]
    fn long_flat_programs_are_fine() {
        let src = format!("x = 1{};", " + 1".repeat(100_000));
        assert!(parse(&src).is_ok());
        let src = format!("x = [{}1];", "1, ".repeat(100_000));
        assert!(parse(&src).is_ok());
    }

    /// A tiny deterministic generator for the fuzz test (no extra dependencies).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn fuzz_never_panics() {
        let pieces = [
            "if",
            "elif",
            "else",
            "return",
            "x",
            "y",
            "(",
            ")",
            "[",
            "]",
            "{",
            "}",
            ",",
            ":",
            ";",
            "=",
            "==",
            "+",
            "-",
            "*",
            "/",
            "%",
            "1",
            "2.5",
            "\"s\"",
            "\"",
            "\\",
            "#c\n",
            "true",
            " ",
            "\n",
            "'",
            "é",
            "flood",
            "query_bucket",
            "RETURN",
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..20_000 {
            let n = (rng.next() % 30) as usize;
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(pieces[(rng.next() % pieces.len() as u64) as usize]);
            }
            let _ = parse(&s);
        }
        // Raw random bytes (lossily made UTF-8).
        for _ in 0..5_000 {
            let n = (rng.next() % 40) as usize;
            let bytes: Vec<u8> = (0..n).map(|_| (rng.next() % 128) as u8).collect();
            let _ = parse(&String::from_utf8_lossy(&bytes));
        }
    }
}
