"""Compares two WebImageBench reports row by row: the tables both have, matched by section and row.

usage: compare_reports.py BASE.md HEAD.md [--again HEAD2.md BASE2.md] --base-label L --head-label L
                          [--threshold 0.10] [--command C]

Prints a Markdown report: for every numeric cell of a row both reports have, the base value, the head value
and the change, with each column's better direction read from its header (throughput and ratios of
WebImage over a client: higher; CPU, memory, latency, instructions, errors: lower). With --again, a second
pair run in the other order (head first): the change of each order and their geometric mean, in which a
drift of the machine between the runs cancels out; the verdict is on the mean. A change in the worse
direction larger than the threshold is marked **worse**; the summary lists those rows of WebImage's own.
"""

import argparse
import re

HIGHER = ("/s", "÷", "per core", "images/cpu-s", "requests/s")
LOWER = ("cpu", "rss", " ms", "ms/", "µs", "p50", "p95", "p99", "instructions", "errors", "fetches", "mb", "ms")
# The tables that describe the run (machine, versions, targets as text) rather than measure it.
SKIPPED = ("machine", "targets", "command")
NEUTRAL = ("cores used", "connections", "share", "count", "rows", "files", "urls", "images per run")


def direction(header):
    h = header.lower()
    # A ratio of times or CPU (WebImage ÷ C (time), ÷ client (CPU/image)): lower is better.
    if "÷" in h and any(word in h for word in ("time", "cpu", " ms")):
        return -1
    if any(word in h for word in NEUTRAL) and not any(word in h for word in HIGHER):
        return 0
    if any(word in h for word in HIGHER):
        return 1
    if any(word in h for word in LOWER):
        return -1
    return 0


def number(cell):
    text = cell.replace("**", "").replace(",", "").replace("×", "").strip()
    match = re.match(r"^-?\d+(\.\d+)?", text)
    return float(match.group(0)) if match else None


def tables(path):
    """{(section, row key): {column: value}} and each section's order."""
    rows, order = {}, []
    section = None
    header = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                section = line.lstrip("#").strip()
                header = None
                continue
            if section is None or any(word in section.lower() for word in SKIPPED):
                continue
            if not line.startswith("|"):
                header = None
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
                continue
            if all(set(c) <= set("-:") for c in cells):
                continue
            keys = [cells[0]] + [
                cells[i] for i, name in enumerate(header) if i > 0 and name.lower() in ("concurrency", "format", "source")
            ]
            key = (section, " · ".join(k for k in keys if k))
            values = {}
            for i, name in enumerate(header[1:], start=1):
                if i < len(cells) and name.lower() not in ("concurrency",):
                    value = number(cells[i])
                    if value is not None:
                        values[name] = value
            if values:
                if key not in rows:
                    order.append(key)
                rows[key] = values
    return rows, order


def is_webimages_column(column):
    """Whether a column measures WebImage itself, not a baseline beside it (a C library's time)."""
    return not any(word in column.lower() for word in ("c library", "vipsthumbnail", "pillow", "img2dataset ", "thumbor"))


def is_webimages(key):
    text = key[1].lower()
    return any(word in text for word in ("webimage", "bulk", "serve", "transport", "floor")) or key[0].lower().startswith(
        ("decoders", "thumbnails", "webimage:", "`webimage bulk`: peak")
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("--base-label", required=True)
    parser.add_argument("--head-label", required=True)
    parser.add_argument("--again", nargs=2, metavar=("HEAD2", "BASE2"))
    parser.add_argument("--threshold", type=float, default=0.10)
    parser.add_argument("--command", default="make bench-compare")
    args = parser.parse_args()
    base, _ = tables(args.base)
    head, order = tables(args.head)
    head2, base2 = (tables(args.again[0])[0], tables(args.again[1])[0]) if args.again else ({}, {})

    out = []
    worse = []
    current = None
    for key in order:
        if key not in base:
            continue
        section, row = key
        if section != current:
            out.append(f"\n### {section}\n")
            if args.again:
                out.append(f"| row | column | {args.base_label} | {args.head_label} | change | "
                           "change, head run first | mean change | |")
                out.append("|---|---|---:|---:|---:|---:|---:|---|")
            else:
                out.append(f"| row | column | {args.base_label} | {args.head_label} | change | |")
                out.append("|---|---|---:|---:|---:|---|")
            current = section
        for column, new in head[key].items():
            old = base[key].get(column)
            if old is None:
                continue
            change = (new - old) / old if old else 0.0
            second = None
            old2, new2 = base2.get(key, {}).get(column), head2.get(key, {}).get(column)
            if old2 and new2 is not None:
                second = (new2 - old2) / old2
            verdict = change
            if second is not None and old and new and new2:
                verdict = ((new / old) * (new2 / old2)) ** 0.5 - 1 if new / old > 0 and new2 / old2 > 0 else change
            sense = direction(column)
            mark = ""
            if sense and old and -sense * verdict > args.threshold:
                mark = "**worse**"
                if is_webimages(key) and is_webimages_column(column):
                    worse.append((section, row, column, old, new, verdict))
            elif sense and old and sense * verdict > args.threshold:
                mark = "better"
            if args.again:
                again = f"{second * 100:+.1f} %" if second is not None else "—"
                out.append(f"| {row} | {column} | {old:g} | {new:g} | {change * 100:+.1f} % | {again} | "
                           f"{verdict * 100:+.1f} % | {mark} |")
            else:
                out.append(f"| {row} | {column} | {old:g} | {new:g} | {change * 100:+.1f} % | {mark} |")

    print("# WebImage benchmarks: before and after")
    print()
    order_text = (
        f"`{args.base_label}`, then `{args.head_label}`, then `{args.head_label}` again and `{args.base_label}` "
        "again (the second pair in the other order, so that a drift of the machine cancels out in the mean)"
        if args.again else f"`{args.base_label}` first, then `{args.head_label}`")
    print(f"Generated by `{args.command}`. The benchmark harness of each checkout ran one after the other on")
    print(f"this machine, in one invocation: {order_text}. Every row the reports share is below; a column's")
    print("better direction comes from its header, and a change of more than")
    print(f"{args.threshold * 100:.0f} % the worse way is marked **worse** (the baselines' rows, measured in the same rounds,")
    print("show how much the machine itself moved between the runs).")
    print()
    print("## WebImage's own rows that got worse")
    print()
    if worse:
        print("| section | row | column | before | after | change (mean of both orders with --again) |")
        print("|---|---|---|---:|---:|---:|")
        for section, row, column, old, new, change in worse:
            print(f"| {section} | {row} | {column} | {old:g} | {new:g} | {change * 100:+.1f} % |")
    else:
        print(f"None beyond {args.threshold * 100:.0f} %.")
    print()
    print("## Every row")
    print("\n".join(out))


main()
