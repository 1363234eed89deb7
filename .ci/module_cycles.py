#!/usr/bin/env python3
"""Finds modules of one crate that import each other, directly or around a longer circle.

A module is a source file (`src/a.rs` and `src/a/mod.rs` are `a`, `src/a/b.rs` is `a::b`, the
crate root is `crate`). Module M uses module N when M's code names N by a path: `crate::n::item`,
`super::item`, `self::n`, or a child module by its bare name (`n::item`); `mod n;` alone is not a
use; a file's inline test module is left out. An item named through a path belongs to the longest module prefix of the path, or, when that
module only re-exports it (`pub use child::Item`), to the module it comes from: a facade that
re-exports its children is not a use of them. Comments and strings are skipped.

Usage: module_cycles.py DIR... ; exits 1 and lists each circle when there is one.
"""

import re
import sys
from pathlib import Path

PATH = re.compile(r"\b(crate|super|self|[a-z_][a-z0-9_]*)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)")
USE_GROUP = re.compile(r"\buse\s+(crate|super|self)::\{([^;]*)\}\s*;", re.S)
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def strip(text):
    """The source without comments, string and char literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "r" and re.match(r'r#*"', text[i:]):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = '"' + hashes
            j = text.find(end, i + 2 + len(hashes))
            i = n if j < 0 else j + len(end)
            out.append('""')
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            i += len(re.match(r"'(\\.|[^\\'])'", text[i:]).group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


TESTS = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def without_tests(text):
    """The source without its inline test module (by convention the file's last item), whose
    `super` is the file's own module."""
    match = TESTS.search(text)
    return text[: match.start()] if match else text


def modules(src):
    """Module path (tuple) -> file, for one crate's `src`."""
    found = {}
    # A crate with a library and a binary: the binary (main.rs, bin/) is a crate of its own.
    root = "lib" if (src / "lib.rs").exists() else "main"
    for file in src.rglob("*.rs"):
        rel = file.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[0] == "bin" or parts in (["lib"], ["main"]) and parts[0] != root:
            continue
        if parts == [root]:
            parts = []
        elif parts[-1] == "mod":
            parts = parts[:-1]
        found[tuple(parts)] = file
    return found


def resolve(mods, exports, base, names):
    """The module of `mods` that defines what `names` (below `base`) reaches: the longest module
    prefix, or the module an item re-exported there comes from; None outside the crate."""
    path = list(base)
    best = tuple(base) if tuple(base) in mods else None
    for name in names:
        if best is not None and name in exports.get(best, {}):
            return exports[best][name]
        path.append(name)
        if tuple(path) in mods:
            best = tuple(path)
        else:
            break
    return best


PUB_USE = re.compile(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);")


def reexports(mods, texts):
    """Module -> {name: module it comes from} for its `pub use self_or_child::...` items."""
    out = {}
    for module, text in texts.items():
        children = set(MOD_DECL.findall(text))
        table = {}
        for clause in PUB_USE.findall(text):
            clause = " ".join(clause.split())
            prefix, _, group = clause.partition("{")
            prefix = prefix.rstrip(":").strip()
            items = [item.strip() for item in group.rstrip("}").split(",")] if group else [None]
            for item in items:
                full = prefix if item is None else f"{prefix}::{item}"
                full = full.split(" as ")
                alias = full[1].strip() if len(full) > 1 else None
                parts = [part for part in full[0].strip().split("::") if part]
                if not parts:
                    continue
                if parts[0] == "self":
                    parts = parts[1:]
                if not parts or parts[0] not in children:
                    continue
                origin = list(module)
                for part in parts[:-1]:
                    if tuple(origin + [part]) in mods:
                        origin.append(part)
                table[alias or parts[-1]] = tuple(origin)
        out[module] = table
    return out


def edges(mods):
    graph = {module: set() for module in mods}
    texts = {module: without_tests(strip(file.read_text())) for module, file in mods.items()}
    exports = reexports(mods, texts)
    for module in mods:
        text = texts[module]
        # A module's own re-exports are its facade, not a use of what it re-exports.
        text = PUB_USE.sub("", text)
        children = set(MOD_DECL.findall(text))
        # `use crate::{a::x, b::y}` names several paths at once.
        targets = []
        for root, inner in USE_GROUP.findall(text):
            for piece in re.split(r",", inner):
                piece = piece.strip().split(" as ")[0]
                names = [part for part in piece.split("::") if part and part not in "{}"]
                if names:
                    targets.append((root, names))
        for root, rest in PATH.findall(text):
            names = [part for part in rest.split("::") if part and part != "{"]
            # `crate::{...}` names its members (above), not the module the group sits in.
            if names:
                targets.append((root, names))
        for root, names in targets:
            if root == "crate":
                base = ()
            elif root == "super":
                base = module[:-1]
                while names and names[0] == "super":
                    base, names = base[:-1], names[1:]
            elif root == "self":
                base = module
            elif root in children:
                base, names = module, [root] + names
            else:
                continue
            target = resolve(mods, exports, base, names)
            if target is not None and target != module:
                graph[module].add(target)
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def name(module):
    return "crate" if not module else "::".join(module)


def main(roots):
    failed = False
    crates = sorted({toml.parent for root in roots for toml in Path(root).rglob("Cargo.toml")})
    for crate in crates:
        src = crate / "src"
        if not src.is_dir():
            continue
        graph = edges(modules(src))
        for component in cycles(graph):
            failed = True
            members = ", ".join(name(module) for module in component)
            print(f"{crate}: modules that import each other: {members}")
            for module in component:
                uses = sorted(name(target) for target in graph[module] if target in component)
                print(f"    {name(module)} uses {', '.join(uses)}")
    if failed:
        print("Move what the modules share into a module of its own that imports none of them.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["."]))
