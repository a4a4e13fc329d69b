#!/usr/bin/env python3
"""Draws aw-datastore from its own imports and checks its layering.

Every production file of `aw-datastore/src` (a `#[cfg(test)]` item and the files only tests
declare are left out) is a node; an edge goes from a file to each file it names in code:
every `use` line (braces expanded) and every inline path that starts with `crate::`,
`super::`, `self::` or the name of a child module. A path resolves to the file of its
longest module prefix; a name that module re-exports (`pub use` / `pub(crate) use`) is
followed to the file that defines it, so a folder's `mod.rs` that only re-exports is no
hub. Comments and string literals are not code (the tokens come from `shape.py`).

The crate's rooms, from the top down (a room may import from the rooms below it):

    lib.rs  >  handle/  >  worker/  >  file/  >  store/  >  the files at the top of src/

Three numbers come out, and the script fails when any is over its limit:
* file names used twice in the crate (`mod.rs` aside: a name says which concept a file
  holds, so two files of one name are two places for it); the limit is 0;
* import circles: groups of files that reach each other through their imports
  (strongly connected components of more than one file); the limit is 0;
* upward imports: edges from a file in a lower room to a file in a higher one; the
  limit is 4, and each is listed.

`--graph` prints every edge too.
"""

import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shape import SourceFile  # noqa: E402  (the one Rust tokenizer of the scripts)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "aw-datastore", "src")
ROOMS = ["lib.rs", "handle", "worker", "file", "store"]  # then: top-level files
MAX_CIRCLES = 0
MAX_UPWARD = 4


def production_code(path):
    """The file's code as written, without comments, string and char literals, or
    `#[cfg(test)]` items: the tokens `shape.py` keeps, joined by the spacing between them."""
    source = SourceFile(path)
    out, prev_end = [], None
    for k, t in enumerate(source.tokens):
        if k in source.removed_tokens:
            continue
        if prev_end is not None and prev_end != t.pos:
            out.append("\n" if "\n" in source.src[prev_end:t.pos] else " ")
        out.append('""' if t.kind == "lit" else source.src[t.pos:t.end])
        prev_end = t.end
    return "".join(out)


def module_of(rel):
    """`store/events.rs` -> ('store', 'events'); `store/mod.rs` -> ('store',)."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def load():
    files = {}
    for dirpath, _, names in os.walk(ROOT):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
                files[rel] = production_code(path)
    modules = {module_of(rel): rel for rel in files}
    # Only the modules production code declares (test-only files are left out).
    declared = {()}
    changed = True
    while changed:
        changed = False
        for mod in list(declared):
            code = files[modules[mod]]
            for child in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code, re.M):
                key = mod + (child,)
                if key in modules and key not in declared:
                    declared.add(key)
                    changed = True
    return {mod: (modules[mod], files[modules[mod]]) for mod in declared}


def expand_use(tree):
    """`a::{b, c::{d, e as f}}` -> [['a','b'], ['a','c','d'], ['a','c','e']]."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree)

    def parse(s, i, prefix):
        paths, seg = [], ""
        while i < len(s):
            c = s[i]
            if c == "{":
                inner, i = parse(s, i + 1, prefix + [x for x in seg.split("::") if x])
                paths += inner
                seg = None
            elif c == "}":
                if seg:
                    paths.append(prefix + [x for x in seg.split("::") if x])
                return paths, i + 1
            elif c == ",":
                if seg:
                    paths.append(prefix + [x for x in seg.split("::") if x])
                seg = ""
                i += 1
                continue
            else:
                if seg is not None:
                    seg += c
            if c != "{":
                i += 1
        if seg:
            paths.append(prefix + [x for x in seg.split("::") if x])
        return paths, i

    paths, _ = parse(tree, 0, [])
    return paths


USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)


def main():
    mods = load()
    children = defaultdict(set)
    for mod in mods:
        if mod:
            children[mod[:-1]].add(mod[-1])

    def absolute(mod, path):
        """The path from the crate root, or None when it leaves the crate."""
        path = [p.strip() for p in path if p.strip()]
        if not path:
            return None
        if path[0] == "crate":
            return path[1:]
        if path[0] in ("self", "super"):
            base = list(mod)
            while path and path[0] in ("self", "super"):
                if path.pop(0) == "super":
                    base = base[:-1]
            return base + path
        if path[0] in children[mod]:
            return list(mod) + path
        return None

    # What each module re-exports: name -> absolute path.
    reexports = defaultdict(dict)
    for mod, (_, code) in mods.items():
        for vis, tree in USE.findall(code):
            if not vis:
                continue
            for path in expand_use(tree):
                target = absolute(mod, path)
                if target and path[-1] not in ("self", "*"):
                    reexports[mod][path[-1]] = target

    def resolve(path, seen=0):
        """The module (file) an absolute path names."""
        mod = ()
        i = 0
        while i < len(path) and mod + (path[i],) in mods:
            mod += (path[i],)
            i += 1
        if i < len(path) and path[i] in reexports[mod] and seen < 10:
            return resolve(reexports[mod][path[i]], seen + 1)
        return mod

    edges = defaultdict(set)
    for mod, (rel, code) in mods.items():
        names = []
        for _, tree in USE.findall(code):
            names += expand_use(tree)
        body = USE.sub("", code)
        starts = ["crate", "super", "self"] + sorted(children[mod])
        inline = re.compile(r"(?<![\w:])((?:%s)(?:::\w+)+)" % "|".join(starts))
        names += [m.split("::") for m in inline.findall(body)]
        for path in names:
            target = absolute(mod, path)
            if target is None:
                continue
            dest = resolve(target)
            if dest != mod:
                edges[mod].add(dest)

    def room(mod):
        rel = mods[mod][0]
        top = rel.split("/")[0]
        return ROOMS.index(top) if top in ROOMS else len(ROOMS)

    def name(mod):
        return mods[mod][0]

    # Strongly connected components (Tarjan).
    index, low, stack, on, sccs = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    for v in sorted(mods):
        if v not in index:
            visit(v)
    circles = [sorted(name(m) for m in c) for c in sccs if len(c) > 1]
    upward = sorted(
        (name(a), name(b)) for a in mods for b in edges[a] if room(b) < room(a)
    )

    if "--graph" in sys.argv:
        for a in sorted(mods, key=name):
            for b in sorted(edges[a], key=name):
                print(f"{name(a)} -> {name(b)}")
    print(f"aw-datastore: {len(mods)} production files, "
          f"{sum(len(e) for e in edges.values())} imports between them")
    print(f"import circles: {len(circles)} (limit {MAX_CIRCLES})")
    for c in circles:
        print("  " + " <-> ".join(c))
    print(f"upward imports: {len(upward)} (limit {MAX_UPWARD})")
    for a, b in upward:
        print(f"  {a} -> {b}")
    names = defaultdict(list)
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".rs") and f != "mod.rs":
                names[f].append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    twice = {n: sorted(p) for n, p in names.items() if len(p) > 1}
    print(f"file names used twice: {len(twice)} (limit 0)")
    for n, paths in sorted(twice.items()):
        print(f"  {n}: {', '.join(paths)}")
    if len(circles) > MAX_CIRCLES or len(upward) > MAX_UPWARD or twice:
        sys.exit(1)


if __name__ == "__main__":
    main()
