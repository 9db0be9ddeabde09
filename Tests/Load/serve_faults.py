#!/usr/bin/env python3
"""`webimage serve` under load while its origin misbehaves (`make test-load`, part of `make test`).

    serve_faults.py --webimage PATH --image FILE [--duration 60] [--connections 64]

wrk drives the service at --connections for --duration seconds, the URLs' options in turn (sizes, effects,
trim, smart gravity, a watermark, JPEG, WebP and PNG). Every request names a different source on a
misbehaving origin (Tests/Load/fault_origin.py on 127.0.0.2): good images, a route that takes 3 s, a
500, an endless body, an HTML page, and a redirect to 127.0.0.1. The service may fetch from 127.0.0.2 only,
so the redirect must be refused. Everything stays on loopback.

Checks, each printed as PASS or FAIL (exit 1 on any FAIL):
- wrk saw no socket error (connect, read, write, timeout): every request got a response;
- each route got only the statuses it should (from the access log), and every route's own answer at
  least once (200, 504 for the slow route when the deadline is short, 502, 422, 403...);
- /metrics counted at least as many answers of each status as wrk received;
- the service is still healthy afterwards, its peak RSS stayed under the bound README documents
  (idle RSS + per-job worst case x --max-concurrency + the source cache + one body per connection), and
  SIGTERM ends it
  with status 0.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROUTES = ["image", "slow", "error", "endless", "html", "redirect"]
# What each route may answer. 503 is backpressure (any route), 504 a deadline (any slow fetch under load).
ALLOWED = {
    "image": {200, 503, 504},
    "slow": {200, 503, 504},
    "error": {502, 503, 504},
    "endless": {413, 422, 502, 503, 504},
    "html": {422, 503, 504},
    "redirect": {403, 503, 504},
}
# The answer that shows the route's own fault was handled, seen at least once per route.
OWN = {"image": {200}, "slow": {200, 504}, "error": {502}, "endless": {413, 422, 502}, "html": {422}, "redirect": {403}}

MIB = 1024 * 1024
LIMITS = {"max_source_bytes": 4 * MIB, "max_source_pixels": 4_000_000, "max_result_dimension": 1024}

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("PASS  " if ok else "FAIL  ") + name + (f": {detail}" if detail else ""), flush=True)


def wait_for_line(stream, pattern, seconds=60):
    deadline = time.time() + seconds
    lines = []
    while time.time() < deadline:
        line = stream.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(pattern, line)
        if found:
            return found
    raise SystemExit(f"error: no line matching {pattern!r}: {''.join(lines)}")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--webimage", required=True)
    parser.add_argument("--image", required=True)
    parser.add_argument("--duration", type=int, default=60)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=2)
    arguments = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    work = tempfile.mkdtemp(prefix="webimage-load.")

    origin = subprocess.Popen(
        [sys.executable, os.path.join(here, "fault_origin.py"), "127.0.0.2", arguments.image, "127.0.0.1"],
        stdout=subprocess.PIPE, text=True)
    origin_port = int(wait_for_line(origin.stdout, r"port (\d+)").group(1))
    log_path = os.path.join(work, "serve.log")
    log = open(log_path, "w")
    serve = subprocess.Popen(
        [arguments.webimage, "serve", "--host", "127.0.0.1", "--port", "0", "--allow-unsigned",
         "--allow-destination", "127.0.0.2/32", "--deadline", "10",
         "--max-concurrency", str(arguments.concurrency), "--watermark-path", arguments.image,
         "--max-source-bytes", str(LIMITS["max_source_bytes"]),
         "--max-source-pixels", str(LIMITS["max_source_pixels"]),
         "--max-result-dimension", str(LIMITS["max_result_dimension"])],
        stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        serve_port = int(wait_for_line(serve.stdout, r"listening on http://127\.0\.0\.1:(\d+)").group(1))
        threading.Thread(target=serve.stdout.read, daemon=True).start()
        service = f"http://127.0.0.1:{serve_port}"
        time.sleep(1)
        idle_kib = rss_kib(serve.pid)

        peak = [idle_kib]
        running = [True]

        def sample():
            while running[0]:
                try:
                    peak[0] = max(peak[0], rss_kib(serve.pid))
                except OSError:
                    return
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        script = os.path.join(work, "routes.lua")
        with open(script, "w") as lua:
            lua.write(WRK_SCRIPT.replace("ORIGIN", f"http://127.0.0.2:{origin_port}"))
        wrk = subprocess.run(
            ["wrk", "-t2", f"-c{arguments.connections}", f"-d{arguments.duration}s", "--timeout", "30s",
             "-s", script, service],
            capture_output=True, text=True, timeout=arguments.duration + 120)
        running[0] = False
        sampler.join()
        print(wrk.stdout, flush=True)
        check("wrk ran", wrk.returncode == 0, wrk.stderr.strip())
        errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", wrk.stdout)
        check("no socket errors: every request got a response", errors is None,
              errors.group(0) if errors else "none reported")
        tally = {}
        for status, count in re.findall(r"STATUS (\d+) (\d+)", wrk.stdout):
            tally[int(status)] = tally.get(int(status), 0) + int(count)
        total = sum(tally.values())
        check("wrk received answers", total > 100, f"{total} responses: {tally}")

        # The access log: statuses per route.
        time.sleep(1)
        per_route = {route: {} for route in ROUTES}
        with open(log_path) as lines:
            for line in lines:
                path = re.search(r"path=/\S*?/plain/http://127\.0\.0\.2:\d+/(\w+)/", line)
                status = re.search(r"status=(\d+)", line)
                if "request" in line and path and status and path.group(1) in per_route:
                    counts = per_route[path.group(1)]
                    counts[int(status.group(1))] = counts.get(int(status.group(1)), 0) + 1
        for route in ROUTES:
            seen = set(per_route[route])
            check(f"route {route}: only allowed statuses", seen <= ALLOWED[route], f"{per_route[route]}")
            check(f"route {route}: its own answer seen", bool(seen & OWN[route]), f"{per_route[route]}")

        status, metrics = get(service + "/metrics")
        check("/metrics answers", status == 200)
        counted = {}
        for status_text, value in re.findall(
                r'^webimage_serve_requests_total\{[^}]*status="(\d+)"[^}]*\} (\S+)', metrics, re.MULTILINE):
            counted[int(status_text)] = counted.get(int(status_text), 0) + int(float(value))
        check("/metrics counted every status wrk received",
              all(counted.get(code, 0) >= count for code, count in tally.items()), f"metrics {counted}, wrk {tally}")
        check("source fetch errors are counted", "webimage_serve_source_errors_total{" in metrics)

        status, body = get(service + "/health")
        check("still healthy after the run", status == 200, body.strip())
        per_job = (LIMITS["max_source_bytes"] + 4 * LIMITS["max_source_pixels"]
                   + 2 * 4 * LIMITS["max_result_dimension"] ** 2)
        # README: image memory under per-job worst case x --max-concurrency, plus the source cache (64M by
        # default), plus one response body per connection being written (at most 1 MiB here).
        source_cache = 64 * MIB
        bound_kib = idle_kib + (per_job * arguments.concurrency + source_cache + arguments.connections * MIB) // 1024
        check("peak RSS under the documented bound", peak[0] <= bound_kib,
              f"idle {idle_kib // 1024} MiB, peak {peak[0] // 1024} MiB, bound {bound_kib // 1024} MiB")
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(timeout=60)
        check("SIGTERM: exit status 0", code == 0, f"status {code}")
    finally:
        for process in (serve, origin):
            if process.poll() is None:
                process.kill()
                process.wait()
    print(f"{results.count(True)} passed, {results.count(False)} failed; the service's log: {log_path}")
    return 0 if all(results) else 1


# wrk's Lua: each request a different source, the routes in turn; each thread counts the statuses it
# received, and done() prints them for the driver.
WRK_SCRIPT = r"""
local routes = {"image", "slow", "error", "endless", "html", "redirect"}
-- imgproxy's options in turn (7 against 6 routes: every pair occurs): effects, trim, smart gravity, the
-- watermark, formats, preserve_hdr and the metadata options.
local options = {
  "rs:fill:256:256:0/q:85/f:jpg", "rs:fit:200:200/bl:2/sh:1/f:jpg", "t:10/rs:fill:128:128/g:sm/f:webp",
  "rs:fit:256:256/pix:8/bg:ffffff/fl:1/f:png", "rs:fill:200:100:1/wm:0.5:soea:4:4:0.3/f:jpg",
  "rs:fit:180:180/ph:1/sm:0/f:png", "rs:fill:160:120/sm:0/kcr:0/f:webp",
}
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function request()
  counter = counter + 1
  local route = routes[(counter % #routes) + 1]
  local option = options[(counter % #options) + 1]
  local path = string.format("/insecure/%s/plain/ORIGIN/%s/%d-%d.jpg", option, route, id, counter)
  return wrk.format("GET", path)
end

-- One global number per status (thread:get copies numbers and strings between Lua states, not tables).
function response(status, headers, body)
  local name = "status" .. status
  _G[name] = (_G[name] or 0) + 1
end

function done(summary, latency, requests)
  for _, thread in ipairs(threads) do
    for status = 100, 599 do
      local count = thread:get("status" .. status)
      if count then io.write(string.format("STATUS %d %d\n", status, count)) end
    end
  end
end
"""

if __name__ == "__main__":
    sys.exit(main())
