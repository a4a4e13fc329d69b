//! Tokenizer for query2, the query language of ActivityWatch's `/api/0/query`.
//!
//! Longest match wins; keywords and booleans are only recognised as whole identifiers. An
//! unrecognised character silently ends tokenization (the reference lexer's behaviour), so the
//! tokens before it must form a complete program on their own.

use std::fmt;

/// A token kind with its payload.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// `if`
    If,
    /// `elif`
    Elif,
    /// `else`
    Else,
    /// `return`
    Return,
    /// `true`, `false`, `True`, `False`
    Bool(bool),
    /// A string literal, escapes already resolved.
    Str(String),
    /// A number literal.
    Number(f64),
    /// An identifier.
    Ident(String),
    /// `==`
    Equals,
    /// `=`
    Assign,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `:`
    Colon,
    /// `;`
    Semi,
}

impl Tok {
    /// The kind's name as shown in "expected …" lists.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Tok::If => "If",
            Tok::Elif => "Elif",
            Tok::Else => "Else",
            Tok::Return => "Return",
            Tok::Bool(_) => "Bool",
            Tok::Str(_) => "String",
            Tok::Number(_) => "Number",
            Tok::Ident(_) => "Ident",
            Tok::Equals => "Equals",
            Tok::Assign => "Assign",
            Tok::Plus => "Plus",
            Tok::Minus => "Minus",
            Tok::Star => "Star",
            Tok::Slash => "Slash",
            Tok::Percent => "Percent",
            Tok::LParen => "LParen",
            Tok::RParen => "RParen",
            Tok::LBracket => "LBracket",
            Tok::RBracket => "RBracket",
            Tok::LBrace => "LBrace",
            Tok::RBrace => "RBrace",
            Tok::Comma => "Comma",
            Tok::Colon => "Colon",
            Tok::Semi => "Semi",
        }
    }
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Bool(b) => write!(f, "Bool({b})"),
            Tok::Str(s) => write!(f, "String({s:?})"),
            Tok::Number(n) => write!(f, "Number({n:?})"),
            Tok::Ident(s) => write!(f, "Ident({s:?})"),
            other => f.write_str(other.kind_name()),
        }
    }
}

/// A token with its byte span and 1-based line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    /// What was read.
    pub tok: Tok,
    /// First byte.
    pub lo: usize,
    /// One past the last byte.
    pub hi: usize,
    /// Line of the first byte.
    pub line: usize,
}

/// Splits `src` into tokens, stopping silently at the first unrecognised character.
pub(crate) fn tokenize(src: &str) -> Vec<Token> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while let Some(&c) = bytes.get(i) {
        let start = i;
        let start_line = line;
        let tok = match c {
            b'\n' => {
                line += 1;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => {
                while bytes.get(i).is_some_and(|&b| b != b'\n') {
                    i += 1;
                }
                continue;
            }
            b'"' => match string_end(bytes, i) {
                Some(end) => {
                    let content = &src[i + 1..end];
                    line += content.bytes().filter(|&b| b == b'\n').count();
                    i = end + 1;
                    Tok::Str(content.replace("\\\"", "\""))
                }
                None => break,
            },
            b'0'..=b'9' => {
                i = number_end(bytes, i);
                // Digits with an optional fraction always parse; infinity for huge literals.
                Tok::Number(src[start..i].parse().unwrap_or(f64::INFINITY))
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while bytes
                    .get(i)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                {
                    i += 1;
                }
                word(&src[start..i])
            }
            b'=' => {
                if bytes.get(i + 1) == Some(&b'=') {
                    i += 2;
                    Tok::Equals
                } else {
                    i += 1;
                    Tok::Assign
                }
            }
            _ => match punctuation(c) {
                Some(tok) => {
                    i += 1;
                    tok
                }
                None => break,
            },
        };
        tokens.push(Token {
            tok,
            lo: start,
            hi: i,
            line: start_line,
        });
    }
    tokens
}

/// One past the last byte of the number starting at `i`: digits, then optionally a dot
/// and more digits.
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    i
}

/// A whole word: a keyword, a boolean, else an identifier.
fn word(text: &str) -> Tok {
    match text {
        "if" => Tok::If,
        "elif" => Tok::Elif,
        "else" => Tok::Else,
        "return" => Tok::Return,
        "true" | "True" => Tok::Bool(true),
        "false" | "False" => Tok::Bool(false),
        word => Tok::Ident(word.to_string()),
    }
}

/// The one-character token `c` is, if any (`=` is read before: it may be `==`).
fn punctuation(c: u8) -> Option<Tok> {
    Some(match c {
        b'+' => Tok::Plus,
        b'-' => Tok::Minus,
        b'*' => Tok::Star,
        b'/' => Tok::Slash,
        b'%' => Tok::Percent,
        b'(' => Tok::LParen,
        b')' => Tok::RParen,
        b'[' => Tok::LBracket,
        b']' => Tok::RBracket,
        b'{' => Tok::LBrace,
        b'}' => Tok::RBrace,
        b',' => Tok::Comma,
        b':' => Tok::Colon,
        b';' => Tok::Semi,
        _ => return None,
    })
}

/// Index of the closing quote of the string starting at `open`, by longest match of
/// `"( [^"] | \" )*"`: a quote preceded by a backslash may be content, so the string ends at
/// the first quote not preceded by a backslash, or else at the last quote seen.
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut last_candidate = None;
    let mut k = open + 1;
    while let Some(&b) = bytes.get(k) {
        if b == b'"' {
            if bytes.get(k - 1) == Some(&b'\\') && k - 1 > open {
                last_candidate = Some(k);
            } else {
                return Some(k);
            }
        }
        k += 1;
    }
    last_candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn keywords_need_whole_words() {
        assert_eq!(
            toks("if iffy returned return True false"),
            vec![
                Tok::If,
                Tok::Ident("iffy".into()),
                Tok::Ident("returned".into()),
                Tok::Return,
                Tok::Bool(true),
                Tok::Bool(false)
            ]
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(
            toks("1 1. 1.5 007"),
            vec![
                Tok::Number(1.0),
                Tok::Number(1.0),
                Tok::Number(1.5),
                Tok::Number(7.0)
            ]
        );
        // `.5`: the dot is unrecognised and ends tokenization.
        assert_eq!(toks("1 .5"), vec![Tok::Number(1.0)]);
        assert_eq!(toks("1.5.3"), vec![Tok::Number(1.5)]);
    }

    #[test]
    fn string_escape_rule() {
        assert_eq!(toks(r#""\d+""#), vec![Tok::Str(r"\d+".into())]);
        assert_eq!(toks(r#""a\\"b""#), vec![Tok::Str(r#"a\"b"#.into())]);
        // `\"` followed by a later quote: the escaped quote is content.
        assert_eq!(toks(r#""a\" x""#), vec![Tok::Str(r#"a" x"#.into())]);
        // No later quote: the string ends at the escaped quote, keeping the backslash.
        assert_eq!(toks(r#""a\""#), vec![Tok::Str(r"a\".into())]);
        // Unterminated: tokenization stops.
        assert_eq!(toks(r#"1 "abc"#), vec![Tok::Number(1.0)]);
        assert_eq!(toks("\"a\nb\" x")[1], Tok::Ident("x".into()));
        assert_eq!(tokenize("\"a\nb\" x")[1].line, 2);
    }

    #[test]
    fn operators_comments_and_stop() {
        assert_eq!(
            toks("a == b = c # comment ; \n ; ' rest ;"),
            vec![
                Tok::Ident("a".into()),
                Tok::Equals,
                Tok::Ident("b".into()),
                Tok::Assign,
                Tok::Ident("c".into()),
                Tok::Semi
            ]
        );
        assert_eq!(toks("x é y"), vec![Tok::Ident("x".into())]);
    }

    #[test]
    fn spans() {
        let t = tokenize("return -1;");
        assert_eq!((t[1].lo, t[1].hi, t[1].line), (7, 8, 1));
    }
}
