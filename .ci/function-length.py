#!/usr/bin/env python3
"""Fails when a function in Sources/ or Examples/ is longer than 80 lines.

A function's length runs from its declaration line (`func`, `init` or `deinit`, after any attributes and
modifiers) to its closing brace, the first `}` at the declaration's own indentation, as `swift format`
lays code out. One-line bodies are skipped. Tests are not checked: a test reads as one story.

A function named in .ci/function-length-allowlist.txt (`path:name`, one a line, `#` comments) is
tolerated while another change shortens it; an entry that is no longer needed is reported, not failed on.

Usage: python3 .ci/function-length.py [--limit N]  (from anywhere: paths are the repository's)
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOTS = ["Sources", "Examples"]
ALLOWLIST = ROOT / ".ci" / "function-length-allowlist.txt"

DECLARATION = re.compile(
    r"^(\s*)(?:@\w+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|private|fileprivate|internal|package|static|final|override|mutating|nonisolated"
    r"|convenience|required|class)(?:\([^)]*\))?\s+)*"
    r"(func\s+([^\s(<]+)|init|deinit)\b"
)


def long_functions(path, limit):
    """(name, first line, length) of each function in `path` longer than `limit` lines."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found = []
    for index, line in enumerate(lines):
        match = DECLARATION.match(line)
        if not match:
            continue
        indent = len(match.group(1))
        name = match.group(3) or match.group(2)
        # The body opens on the declaration line or on one of the parameter lines after it.
        opening = index
        while opening < len(lines) and "{" not in lines[opening]:
            opening += 1
        if opening == len(lines):
            continue  # a protocol requirement
        body = lines[opening].rstrip()
        if body.endswith("}") and body.count("{") == body.count("}"):
            continue
        closing = opening + 1
        closing_brace = re.compile(r"^\s{%d}\}" % indent)
        while closing < len(lines) and not closing_brace.match(lines[closing]):
            closing += 1
        length = closing - index + 1
        if length > limit:
            found.append((name, index + 1, length))
    return found


def allowlist():
    if not ALLOWLIST.exists():
        return set()
    entries = set()
    for line in ALLOWLIST.read_text(encoding="utf-8").split("\n"):
        entry = line.split("#", 1)[0].strip()
        if entry:
            entries.add(entry)
    return entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=80, help="the most lines a function may have (80)")
    arguments = parser.parse_args()
    allowed = allowlist()
    offenders = []
    tolerated = set()
    for root in ROOTS:
        for path in sorted((ROOT / root).rglob("*.swift")):
            relative = path.relative_to(ROOT).as_posix()
            for name, line, length in long_functions(path, arguments.limit):
                key = f"{relative}:{name}"
                if key in allowed:
                    tolerated.add(key)
                else:
                    offenders.append(f"{relative}:{line}: {name} is {length} lines (at most {arguments.limit})")
    for key in sorted(allowed - tolerated):
        print(f"note: {key} in {ALLOWLIST.name} is no longer over {arguments.limit} lines: remove it",
              file=sys.stderr)
    if offenders:
        print(f"Functions longer than {arguments.limit} lines (split them into named pieces):", file=sys.stderr)
        for offender in offenders:
            print(f"  {offender}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
