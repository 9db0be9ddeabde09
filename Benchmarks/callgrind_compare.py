#!/usr/bin/env python3
"""The small-file profile of two WebImageBench builds side by side, in one invocation.

`make bench-profile-compare BASE=<commit>` runs this with BASE's harness (built in .bench-base/) and this
tree's. Each runs its `webimage` client (the downloader, six transfers at a time, bodies kept, no decode) over
200 and then 1,200 files of 20 KiB from one nginx on 127.0.0.1, under `valgrind --tool=callgrind`;
instructions per file are the difference of the two runs ÷ 1,000, so start-up and shutdown cancel out.
Callgrind counts instructions, not time, so the numbers hardly move from run to run (within 1 %) and do not
depend on what else the machine is doing: a change of a few per cent is real, where the timed rows of
`make bench-compare` move by more than that between two runs of one build.

The report has the rows of the profile in docs/BENCHMARKS.md (inclusive instructions per file of the
downloader's functions, matched by name without their module, so a type that moved to another module still
lines up), and the functions whose own instructions per file changed most.
"""

import argparse
import datetime
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SHORT = 200
LONG = 1200
FILES = 2000
SIZE = 20 * 1024

# (symbol as callgrind_annotate shows it after demangling, label): the same rows as Profiler.breakdown.
BREAKDOWN = [
    ("TransportLoop.run()", "transport thread, all of it (libcurl + callbacks)"),
    ("curlHeaderCallback", "· header callback"),
    ("ResponseHeadParser.consume(line:)", "· · ResponseHeadParser.consume(line:)"),
    ("curlWriteCallback", "· write callback"),
    ("ImageDownloaderOperation.transferDidReceiveData(_:totalReceived:)", "· · Operation.transferDidReceiveData"),
    ("CurlTransfer.deliverResponse()", "· · CurlTransfer.deliverResponse() (effective URL, delegate)"),
    ("ImageDownloaderOperation.transferDidReceiveResponse(_:)", "· · · Operation.transferDidReceiveResponse"),
    ("CurlTransfer.finish(code:cancelled:)", "· CurlTransfer.finish (metrics, completion)"),
    ("OperationQueue._schedule(_:)", "corelibs OperationQueue._schedule"),
    ("ImageDownloaderOperation.start()", "ImageDownloaderOperation.start()"),
    ("CurlTransfer.init(request:pool:share:delegate:)", "· CurlTransfer.init (pooled easy handle + options)"),
    ("ImageDownloaderOperation.process(_:metrics:", "completion processing (process: serve callers, finish)"),
    ("QueueChannel.drain()", "callback queue: drained blocks (notifications, completions)"),
    ("closure #1 in ImageDownloaderOperation.post(_:)", "· Start / ReceiveResponse notifications (post)"),
]

MODULES = re.compile(r"\b(WebImageTransport|WebImageCodecs|WebImage|Foundation|FoundationEssentials)\.")


def log(message):
    print(f"callgrind_compare: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_files(root):
    """FILES pseudo-random files of SIZE bytes (a fixed seed: every run serves the same bytes)."""
    folder = os.path.join(root, "www", "small")
    os.makedirs(folder)
    generator = random.Random(7)
    noise = generator.randbytes(FILES * 64 + SIZE)
    for index in range(FILES):
        with open(os.path.join(folder, f"s{index:04d}.bin"), "wb") as file:
            file.write(noise[index * 64 : index * 64 + SIZE])


def start_nginx(root, port):
    os.makedirs(os.path.join(root, "logs"))
    configuration = os.path.join(root, "nginx.conf")
    with open(configuration, "w") as file:
        file.write(
            f"""worker_processes 1;
daemon on;
pid {root}/nginx.pid;
error_log {root}/logs/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  keepalive_requests 100000;
  client_body_temp_path {root}/body;
  proxy_temp_path {root}/proxy;
  fastcgi_temp_path {root}/fastcgi;
  uwsgi_temp_path {root}/uwsgi;
  scgi_temp_path {root}/scgi;
  types {{ application/octet-stream bin; }}
  server {{ listen 127.0.0.1:{port}; root {root}/www; }}
}}
"""
        )
    subprocess.run(["nginx", "-p", root, "-c", configuration], check=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"nginx did not listen on 127.0.0.1:{port} within 10 s")


def stop_nginx(root):
    try:
        with open(os.path.join(root, "nginx.pid")) as file:
            os.kill(int(file.read().strip()), signal.SIGQUIT)
    except (OSError, ValueError):
        pass


def callgrind(binary, url_list, out):
    outcome = subprocess.run(
        ["valgrind", "--tool=callgrind", "--quiet", f"--callgrind-out-file={out}", binary, "webimage",
         "--urls", url_list, "--parallel", "6"],
        capture_output=True, text=True)
    if outcome.returncode != 0:
        raise SystemExit(f"callgrind run of {binary} failed ({outcome.returncode}): {outcome.stderr[-2000:]}")


def total(out):
    with open(out) as file:
        for line in reversed(file.read().splitlines()):
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise SystemExit(f"no totals in {out}")


def costs(out, inclusive):
    """Function name (module prefixes removed) → instructions, from callgrind_annotate."""
    annotate = subprocess.run(
        f"callgrind_annotate --inclusive={'yes' if inclusive else 'no'} --threshold=100 '{out}'"
        " | (swift demangle --simplified 2>/dev/null || cat)",
        shell=True, capture_output=True, text=True, check=True).stdout
    table = {}
    for line in annotate.splitlines():
        match = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(?:\?\?\?|[^:\s]+):(.*?)(?:\s+\[[^\]]*\])?\s*$", line)
        if not match:
            continue
        name = MODULES.sub("", match.group(2).strip())
        table[name] = table.get(name, 0) + int(match.group(1).replace(",", ""))
    return table


def per_file(short, long):
    return {name: (long.get(name, 0) - short.get(name, 0)) / (LONG - SHORT) for name in set(short) | set(long)}


def lookup(table, symbol):
    """The largest entry whose name contains `symbol`, protocol witnesses and partial applies aside (they wrap
    the function), as the profile in docs/BENCHMARKS.md picks its rows."""
    values = [value for name, value in table.items()
              if symbol in name and not name.startswith(("protocol witness", "partial apply"))]
    return max(values) if values else 0.0


def profile(label, binary, root, lists):
    tag = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-")
    stripped = os.path.join(root, tag + "-nodebug")
    # valgrind 3.19 cannot read the DWARF 5 that Swift 6 writes; the symbol table keeps the names.
    if subprocess.run(["objcopy", "--strip-debug", binary, stripped]).returncode != 0:
        shutil.copy(binary, stripped)
    outs = {}
    for count, url_list in lists.items():
        out = os.path.join(root, f"callgrind.{tag}.{count}.out")
        log(f"{label}: {count} files under callgrind")
        callgrind(stripped, url_list, out)
        outs[count] = out
    return {
        "total": (total(outs[LONG]) - total(outs[SHORT])) / (LONG - SHORT),
        "inclusive": per_file(costs(outs[SHORT], True), costs(outs[LONG], True)),
        "self": per_file(costs(outs[SHORT], False), costs(outs[LONG], False)),
    }


def change(before, after):
    return f"{(after - before) / before * 100:+.1f} %" if before else "—"


def report(args, base, head):
    lines = [
        "# WebImage's small-file profile: before and after",
        "",
        f"Generated by `{args.command}` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%dT%H:%M:%SZ}; "
        "do not edit by hand.",
        "",
        f"```\n{args.command}\n```",
        "",
        f"Both builds' `WebImageBench webimage` client (the downloader, six transfers at a time, bodies kept, no "
        f"decode) over {SHORT} and then {LONG} files of 20 KiB from one nginx on 127.0.0.1, under "
        f"`valgrind --tool=callgrind`, one build after the other in this invocation. Instructions per file are "
        f"the difference of the two runs ÷ {LONG - SHORT}: start-up and shutdown cancel out. Callgrind counts "
        "instructions, so these numbers hardly move from run to run whatever else the machine does (two runs of "
        "this command on the same two builds: totals within 0.3 %, every row within 1 %, the threads' "
        "interleaving changing a little how often locks and wake-ups are taken); they are not times "
        "(instructions do not all cost the same), but a change of a few per cent here is a change in the "
        "code's work. A function's row is its inclusive count (itself and what it calls), matched by name without "
        "module or argument labels where they were renamed.",
        "",
        f"| row | {args.base_label} | {args.head_label} | change |",
        "|---|---:|---:|---:|",
        f"| all of the process, instructions per file | {base['total']:.0f} | {head['total']:.0f} "
        f"| {change(base['total'], head['total'])} |",
    ]
    for symbol, label in BREAKDOWN:
        before, after = lookup(base["inclusive"], symbol), lookup(head["inclusive"], symbol)
        lines.append(f"| {label} | {before:.0f} | {after:.0f} | {change(before, after)} |")
    lines += [
        "",
        "## The functions whose own instructions per file changed most",
        "",
        "Self cost (the function's own instructions, not its callees'), the 25 largest changes either way. "
        "Identical functions may share one symbol in the binary, so a copy or destroy helper can appear under "
        "the name of another type with the same layout.",
        "",
        f"| function | {args.base_label} | {args.head_label} | difference |",
        "|---|---:|---:|---:|",
    ]
    names = set(base["self"]) | set(head["self"])
    ranked = sorted(names, key=lambda name: -abs(head["self"].get(name, 0) - base["self"].get(name, 0)))
    for name in [n for n in ranked if n != "PROGRAM TOTALS"][:25]:
        before, after = base["self"].get(name, 0), head["self"].get(name, 0)
        shown = name if len(name) <= 110 else name[:107] + "…"
        shown = shown.replace("|", "\\|")
        lines.append(f"| `{shown}` | {before:.0f} | {after:.0f} | {after - before:+.0f} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the base's WebImageBench executable")
    parser.add_argument("--head", required=True, help="this tree's WebImageBench executable")
    parser.add_argument("--base-label", default="base")
    parser.add_argument("--head-label", default="head")
    parser.add_argument("--output", required=True)
    parser.add_argument("--command", default="Benchmarks/callgrind_compare.py")
    args = parser.parse_args()
    for tool in ["valgrind", "callgrind_annotate", "nginx", "objcopy"]:
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing (make deps-bench installs valgrind)")
    root = tempfile.mkdtemp(prefix="webimage-callgrind-")
    # nginx's worker drops root's rights (to nobody) and must read the files: mkdtemp makes the folder 0700.
    os.chmod(root, 0o755)
    try:
        make_files(root)
        port = free_port()
        start_nginx(root, port)
        lists = {}
        for count in (SHORT, LONG):
            path = os.path.join(root, f"list{count}.txt")
            with open(path, "w") as file:
                file.write("".join(f"http://127.0.0.1:{port}/small/s{index:04d}.bin\n" for index in range(count)))
            lists[count] = path
        base = profile(args.base_label, args.base, root, lists)
        head = profile(args.head_label, args.head, root, lists)
        with open(args.output, "w") as file:
            file.write(report(args, base, head))
        log(f"wrote {args.output}: {base['total']:.0f} → {head['total']:.0f} instructions per file")
    finally:
        stop_nginx(root)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
