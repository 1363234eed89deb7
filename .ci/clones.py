#!/usr/bin/env python3
"""Finds code that two controller crates both hold: a run of at least MIN_LINES lines that stand,
in the same order, in a file of one crate and in a file of another.

Lines are compared as tokens would be: whitespace is dropped, and so are lines that carry no code
of their own (blank lines, comments, `use` lines and `mod` declarations (every controller declares the same files),
lines of brackets and punctuation only), so a
clone cannot hide behind formatting or comments, and two files importing the same items are not
a clone. Within one crate repetition is left to review; between crates it means the code belongs
in the kit (shared/kit) or the test harness (e2e/harness).

Usage: clones.py [--min-lines N] CRATE_DIR... ; exits 1 and lists each clone when there is one.
"""

import re
import sys
from pathlib import Path

MIN_LINES = 6

PUNCTUATION_ONLY = re.compile(r"^[\s{}()\[\];,.?&|<>=:-]*$")
COMMENT = re.compile(r"^\s*(//|/\*|\*)")
USE = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(use\s|mod\s+\w+\s*;)")


def significant_lines(path):
    """(line number, normalized text) for each line of `path` that carries code."""
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if PUNCTUATION_ONLY.match(line) or COMMENT.match(line) or USE.match(line):
            continue
        # Trailing comments do not make two lines different.
        code = re.sub(r"\s+//.*$", "", line) if '"' not in line else line
        out.append((number, "".join(code.split())))
    return out


def windows(crate, path, lines, size):
    for start in range(len(lines) - size + 1):
        chunk = lines[start : start + size]
        yield tuple(text for _, text in chunk), (crate, path, start, chunk[0][0], chunk[-1][0])


def find(crates, size):
    """Pairs of places in different crates sharing a run of `size` lines, merged into ranges."""
    seen = {}
    pairs = {}
    for crate in crates:
        for path in sorted(crate.rglob("*.rs")):
            lines = significant_lines(path)
            for key, place in windows(crate, path, lines, size):
                for other in seen.get(key, []):
                    if other[0] != crate:
                        pairs.setdefault((other[1], path), []).append((other, place))
                seen.setdefault(key, []).append(place)
    found = []
    for (left, right), hits in pairs.items():
        hits.sort(key=lambda hit: (hit[0][2], hit[1][2]))
        run = None
        for a, b in hits:
            if run and a[2] == run[0][2] + run[2] and b[2] == run[1][2] + run[2]:
                run[2] += 1
                run[3], run[4] = a[4], b[4]
                continue
            if run:
                found.append(run)
            run = [a, b, 1, a[4], b[4]]
        if run:
            found.append(run)
    return found


def main(argv):
    size = MIN_LINES
    if len(argv) > 1 and argv[0] == "--min-lines":
        size, argv = int(argv[1]), argv[2:]
    crates = [Path(arg) for arg in argv]
    clones = find(crates, size)
    for a, b, _, a_end, b_end in clones:
        print(f"{a[1]}:{a[3]}-{a_end} is repeated at {b[1]}:{b[3]}-{b_end}")
    if clones:
        print(
            f"{len(clones)} clone(s) of {size} or more lines between controller crates: move the code into "
            "shared/kit (or, for tests, e2e/harness) and use it from both"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
