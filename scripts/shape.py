#!/usr/bin/env python3
"""Keeps the production code readable in one sitting: no file over 500 lines, no function
over 100 lines (80 in aw-datastore, whose worker paths are the hardest to review).

Production code is every `.rs` file under `<crate>/src/` of the workspace's members with
each `#[cfg(test)]` item taken out (a `#[cfg(test)] mod x;` takes out its file too). Not
production: `tests/`, `benches/` and `examples/` folders, and the `tests` crate
(`aw-tests`), which is the end-to-end tests' harness. Items are found by matching braces,
skipping comments, string literals (raw ones too) and char literals.

A function's length is the number of production lines from its `fn` line to its closing
brace; a file's, its number of production lines.

    python3 scripts/shape.py                       # violations as `path:line name N lines`; exit 1 if any
    python3 scripts/shape.py --skip aw-datastore   # leave a crate out (repeatable)
    python3 scripts/shape.py --report              # also the largest file and longest function per crate

No dependencies beyond Python 3's standard library.
"""

import argparse
import os
import re
import sys

MAX_FILE_LINES = 500
MAX_FN_LINES = 100
# Crate folder -> a stricter function limit.
MAX_FN_LINES_BY_CRATE = {"aw-datastore": 80}
# Workspace members whose `src/` is test code, not production.
NOT_PRODUCTION = {"tests"}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Keywords that start an item (as opposed to a field, a statement or an expression).
ITEM_KEYWORDS = {
    "fn", "impl", "mod", "trait", "enum", "struct", "union", "const", "static", "use",
    "type", "extern", "unsafe", "async", "macro_rules", "pub", "default",
}
# Items that end at a `;`, even when they hold braces (`static X: T = T { .. };`).
SEMICOLON_ITEMS = {"const", "static", "use", "type"}


class Token:
    """One token: an identifier (`ident`), a punctuation character (`punct`) or a
    literal (`lit`, its text not kept), with its 1-based line and offset."""

    __slots__ = ("kind", "text", "line", "pos", "end")

    def __init__(self, kind, text, line, pos, end):
        self.kind = kind
        self.text = text
        self.line = line
        self.pos = pos
        self.end = end

    def is_punct(self, ch):
        return self.kind == "punct" and self.text == ch

    def is_ident(self, word=None):
        return self.kind == "ident" and (word is None or self.text == word)


def _is_ident_start(ch):
    return ch == "_" or ch.isalpha()


def _is_ident_char(ch):
    return ch == "_" or ch.isalnum()


def tokenize(src):
    """Rust source -> tokens, without comments; literals become one `lit` token each."""
    tokens = []
    i = 0
    n = len(src)
    line = 1

    def skip_quoted(j, quote):
        # j is just after the opening quote; returns the offset after the closing one.
        while j < n:
            c = src[j]
            if c == "\\":
                j += 2
                continue
            if c == quote:
                return j + 1
            j += 1
        return n

    def skip_raw(j):
        # j is at the `#`s or `"` after `r`; returns the offset after the closing quote.
        hashes = 0
        while j < n and src[j] == "#":
            hashes += 1
            j += 1
        # src[j] == '"'
        close = '"' + "#" * hashes
        k = src.find(close, j + 1)
        return n if k < 0 else k + len(close)

    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if src.startswith("//", i):
            k = src.find("\n", i)
            i = n if k < 0 else k
            continue
        if src.startswith("/*", i):
            depth = 0
            j = i
            while j < n:
                if src.startswith("/*", j):
                    depth += 1
                    j += 2
                elif src.startswith("*/", j):
                    depth -= 1
                    j += 2
                    if depth == 0:
                        break
                else:
                    j += 1
            line += src.count("\n", i, j)
            i = j
            continue
        start = i
        if _is_ident_start(c):
            j = i
            while j < n and _is_ident_char(src[j]):
                j += 1
            word = src[i:j]
            nxt = src[j] if j < n else ""
            end = None
            if word in ("r", "br", "cr") and (nxt == '"' or (nxt == "#" and _raw_string_follows(src, j))):
                end = skip_raw(j)
            elif word in ("b", "c") and nxt == '"':
                end = skip_quoted(j + 1, '"')
            elif word == "b" and nxt == "'":
                end = skip_quoted(j + 1, "'")
            elif word == "r" and nxt == "#" and j + 1 < n and _is_ident_start(src[j + 1]):
                # A raw identifier: r#type.
                k = j + 1
                while k < n and _is_ident_char(src[k]):
                    k += 1
                tokens.append(Token("ident", src[j + 1:k], line, start, k))
                i = k
                continue
            if end is not None:
                tokens.append(Token("lit", "", line, start, end))
                line += src.count("\n", start, end)
                i = end
                continue
            tokens.append(Token("ident", word, line, start, j))
            i = j
            continue
        if c.isdigit():
            j = i
            while j < n and (_is_ident_char(src[j]) or (src[j] == "." and j + 1 < n and src[j + 1].isdigit())):
                j += 1
            tokens.append(Token("lit", "", line, start, j))
            i = j
            continue
        if c == '"':
            end = skip_quoted(i + 1, '"')
            tokens.append(Token("lit", "", line, start, end))
            line += src.count("\n", start, end)
            i = end
            continue
        if c == "'":
            # A char literal ('a', '\n', '\u{7f}', '{') or a lifetime / label ('a, 'static).
            if i + 1 < n and src[i + 1] == "\\":
                end = skip_quoted(i + 1, "'")
                tokens.append(Token("lit", "", line, start, end))
                i = end
                continue
            if i + 2 < n and src[i + 2] == "'":
                tokens.append(Token("lit", "", line, start, i + 3))
                i += 3
                continue
            j = i + 1
            while j < n and _is_ident_char(src[j]):
                j += 1
            tokens.append(Token("lit", "", line, start, j))
            i = j
            continue
        tokens.append(Token("punct", c, line, start, i + 1))
        i += 1
    return tokens


def _raw_string_follows(src, j):
    while j < len(src) and src[j] == "#":
        j += 1
    return j < len(src) and src[j] == '"'


OPEN = {"(": ")", "[": "]", "{": "}"}
CLOSE = {")", "]", "}"}


def _matching(tokens, k):
    """Index of the token closing the bracket opened at tokens[k]."""
    depth = 0
    for m in range(k, len(tokens)):
        t = tokens[m]
        if t.kind != "punct":
            continue
        if t.text in OPEN:
            depth += 1
        elif t.text in CLOSE:
            depth -= 1
            if depth == 0:
                return m
    return len(tokens) - 1


def _attribute_end(tokens, k):
    """If tokens[k] starts an outer attribute `#[..]`, the index after it, else None."""
    if k + 1 < len(tokens) and tokens[k].is_punct("#") and tokens[k + 1].is_punct("["):
        return _matching(tokens, k + 1) + 1
    return None


def _is_cfg_test(tokens, k, end):
    """Whether the attribute tokens[k:end] is `#[cfg(test)]` or `#[cfg(all(.., test, ..))]`."""
    words = [t for t in tokens[k:end] if t.kind != "punct" or t.text not in "#[]"]
    texts = [t.text for t in words]
    if texts == ["cfg", "(", "test", ")"]:
        return True
    if texts[:4] == ["cfg", "(", "all", "("] and texts[-2:] == [")", ")"]:
        # Only the top level of all(..): `test` between commas.
        inner = texts[4:-2]
        depth = 0
        top = []
        for t in inner:
            if t in OPEN:
                depth += 1
            elif t in CLOSE:
                depth -= 1
            elif depth == 0:
                top.append(t)
        return "test" in top
    return False


def _item_end(tokens, k):
    """Index of the last token of the item, field or statement starting at tokens[k]
    (after its attributes)."""
    while True:
        after = _attribute_end(tokens, k)
        if after is None:
            break
        k = after
    if k >= len(tokens):
        return len(tokens) - 1
    # The item's keyword, past `pub(crate)` and the like.
    m = k
    keyword = None
    while m < len(tokens):
        t = tokens[m]
        if t.is_ident("pub") and m + 1 < len(tokens) and tokens[m + 1].is_punct("("):
            m = _matching(tokens, m + 1) + 1
            continue
        if t.is_ident() and t.text in ITEM_KEYWORDS and t.text not in ("pub", "unsafe", "async", "default", "extern"):
            keyword = t.text
            if keyword == "const" and m + 1 < len(tokens) and tokens[m + 1].is_ident("fn"):
                keyword = "fn"
            break
        if t.is_ident() and t.text in ("pub", "unsafe", "async", "default", "extern"):
            m += 1
            continue
        if t.kind == "lit" and m > k and tokens[m - 1].is_ident("extern"):
            m += 1  # extern "C"
            continue
        break
    item = keyword is not None
    semicolon_only = keyword in SEMICOLON_ITEMS
    depth = 0
    for m in range(k, len(tokens)):
        t = tokens[m]
        if t.kind != "punct":
            continue
        if t.text in OPEN:
            depth += 1
            continue
        if t.text in CLOSE:
            depth -= 1
            if depth < 0:
                # The enclosing block ends: the field or expression ended before it.
                return m - 1
            if depth == 0 and t.text == "}" and not semicolon_only:
                return m
            continue
        if depth == 0 and t.text == ";":
            return m
        if depth == 0 and t.text == "," and not item:
            return m
    return len(tokens) - 1


def _module_dir(path):
    base = os.path.basename(path)
    if base in ("lib.rs", "main.rs", "mod.rs"):
        return os.path.dirname(path)
    return os.path.splitext(path)[0]


class SourceFile:
    """One production file: its tokens, the lines `#[cfg(test)]` takes out, and the
    files of the test-only modules it declares (`#[cfg(test)] mod x;`)."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.src = f.read()
        self.tokens = tokenize(self.src)
        self.line_count = self.src.count("\n") + (0 if self.src.endswith("\n") or not self.src else 1)
        self.removed_tokens = set()
        self.removed_lines = set()
        self.test_modules = []
        self._remove_test_items()

    def _remove_test_items(self):
        tokens = self.tokens
        # `#![cfg(test)]` at the top: the whole file is test code.
        if len(tokens) > 2 and tokens[0].is_punct("#") and tokens[1].is_punct("!") and tokens[2].is_punct("["):
            end = _matching(tokens, 2) + 1
            shifted = [tokens[0]] + tokens[2:end]
            if _is_cfg_test(shifted, 0, len(shifted)):
                self.removed_tokens = set(range(len(tokens)))
                self.removed_lines = set(range(1, self.line_count + 1))
                return
        spans = []
        k = 0
        while k < len(tokens):
            after = _attribute_end(tokens, k)
            if after is None:
                k += 1
                continue
            if not _is_cfg_test(tokens, k, after):
                k += 1  # attributes may nest items (a `#[cfg(test)]` inside a macro's body)
                continue
            end = _item_end(tokens, after)
            spans.append((k, end))
            self._note_test_module(after, end)
            k = end + 1
        for first, last in spans:
            self.removed_tokens.update(range(first, last + 1))
        # A line is taken out when every token on it is, or it is blank or a comment
        # between two taken-out tokens of one item.
        kept_lines = set()
        for idx, t in enumerate(tokens):
            if idx not in self.removed_tokens:
                for ln in range(t.line, t.line + self.src.count("\n", t.pos, t.end) + 1):
                    kept_lines.add(ln)
        for first, last in spans:
            start_line = tokens[first].line
            end_line = tokens[last].line + self.src.count("\n", tokens[last].pos, tokens[last].end)
            for ln in range(start_line, end_line + 1):
                if ln not in kept_lines:
                    self.removed_lines.add(ln)

    def _note_test_module(self, after, end):
        # `#[cfg(test)] [#[attr]] [pub(..)] mod name;`
        toks = [t for t in self.tokens[after:end + 1]]
        words = [t.text for t in toks if t.kind == "ident"]
        if toks and toks[-1].is_punct(";") and "mod" in words:
            name = words[words.index("mod") + 1] if words.index("mod") + 1 < len(words) else None
            if name:
                d = _module_dir(self.path)
                for candidate in (os.path.join(d, name + ".rs"), os.path.join(d, name, "mod.rs")):
                    if os.path.exists(candidate):
                        self.test_modules.append(os.path.normpath(candidate))

    def production_lines(self, first=1, last=None):
        """Production lines among first..=last (1-based)."""
        last = self.line_count if last is None else last
        return sum(1 for ln in range(first, last + 1) if ln not in self.removed_lines)

    def functions(self):
        """(name, line of `fn`, production lines) of each function with a body."""
        tokens = self.tokens
        out = []
        for k, t in enumerate(tokens):
            if not t.is_ident("fn") or k in self.removed_tokens:
                continue
            if k + 1 >= len(tokens) or not tokens[k + 1].is_ident():
                continue  # a function pointer type: fn(u8) -> u8
            name = tokens[k + 1].text
            m = k + 2
            body = None
            while m < len(tokens):
                u = tokens[m]
                if u.is_punct("(") or u.is_punct("["):
                    m = _matching(tokens, m) + 1
                    continue
                if u.is_punct("{"):
                    body = m
                    break
                if u.is_punct(";") or u.is_punct("}"):
                    break
                m += 1
            if body is None:
                continue
            close = _matching(tokens, body)
            out.append((name, t.line, self.production_lines(t.line, tokens[close].line)))
        return out


def workspace_crates():
    """The workspace's member folders, from the root Cargo.toml."""
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^members\s*=\s*\[(.*?)\]", text, re.S | re.M)
    if not m:
        sys.exit("shape.py: no [workspace] members in Cargo.toml")
    return re.findall(r'"([^"]+)"', m.group(1))


def package_name(crate):
    try:
        with open(os.path.join(ROOT, crate, "Cargo.toml"), encoding="utf-8") as f:
            m = re.search(r'^name\s*=\s*"([^"]+)"', f.read(), re.M)
            return m.group(1) if m else crate
    except OSError:
        return crate


def crate_files(crate):
    """Production files of a crate: `src/**/*.rs` without test-only modules' files."""
    src = os.path.join(ROOT, crate, "src")
    paths = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".rs"):
                paths.append(os.path.normpath(os.path.join(dirpath, name)))
    files = {p: SourceFile(p) for p in paths}
    test_only = set()
    for f in files.values():
        test_only.update(f.test_modules)
    # A test module's own submodules are test code too.
    changed = True
    while changed:
        changed = False
        for p in list(test_only):
            d = _module_dir(p)
            for q in paths:
                if q not in test_only and q.startswith(d + os.sep):
                    test_only.add(q)
                    changed = True
    return [files[p] for p in paths if p not in test_only]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip", action="append", default=[], metavar="CRATE",
                        help="leave out a crate (its folder or package name); repeatable")
    parser.add_argument("--report", action="store_true",
                        help="also print the largest file and the longest function of each crate")
    args = parser.parse_args()

    crates = workspace_crates()
    known = set(crates) | {package_name(c) for c in crates}
    for s in args.skip:
        if s not in known:
            sys.exit(f"shape.py: --skip {s}: not a workspace member")

    violations = []
    report = []
    for crate in crates:
        if crate in NOT_PRODUCTION or crate in args.skip or package_name(crate) in args.skip:
            continue
        fn_limit = MAX_FN_LINES_BY_CRATE.get(crate, MAX_FN_LINES)
        largest = None
        longest = None
        for f in crate_files(crate):
            rel = os.path.relpath(f.path, ROOT)
            size = f.production_lines()
            if largest is None or size > largest[1]:
                largest = (rel, size)
            if size > MAX_FILE_LINES:
                violations.append(f"{rel}:1 (file) {size} lines")
            for name, line, length in f.functions():
                if longest is None or length > longest[3]:
                    longest = (rel, line, name, length)
                if length > fn_limit:
                    violations.append(f"{rel}:{line} {name} {length} lines")
        report.append((crate, fn_limit, largest, longest))

    for v in violations:
        print(v)
    if args.report:
        if violations:
            print()
        for crate, fn_limit, largest, longest in report:
            print(f"{crate}:")
            if largest:
                print(f"  largest file      {largest[0]} {largest[1]} lines (limit {MAX_FILE_LINES})")
            if longest:
                print(f"  longest function  {longest[0]}:{longest[1]} {longest[2]} {longest[3]} lines (limit {fn_limit})")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
