#!/usr/bin/env bash
# Headless Chromium loads a page of <img> tags that point at `webimage serve`, which fetches its sources
# from a loopback origin (python3 -m http.server over a folder of images). Used by ServeBrowserTests.
#
#   serve-in-chromium.sh WEBIMAGE IMAGES_FOLDER WORK_FOLDER
#
# Prints, for the test to check:
#   NAMESPACE <how the run was kept on loopback>
#   IMAGE <id> <naturalWidth>x<naturalHeight>       one per <img>, from the page after `load`
#   RESPONSE <status> <content-type> <vary> <url>   one per response Chromium read from the service (net log)
#   REQUESTED Accept: <value>                       after each RESPONSE, the Accept header Chromium sent
#   CONNECT <address>                               every TCP connection Chromium opened (net log)
#
# Nothing may leave loopback. When it can (root, or unprivileged user namespaces), the script re-runs itself
# in a new network namespace that has only `lo`, so the origin, the service and Chromium cannot reach
# anything else. Chromium is also given a dead proxy for every non-loopback URL and a resolver that finds
# no name, so its own background requests (component updates, accounts) fail at once in either case.
set -euo pipefail

webimage=$1 images=$2 work=$3
if [ -z "${WEBIMAGE_IN_NAMESPACE:-}" ]; then
    for unshare in "unshare --net" "unshare --net --map-root-user"; do
        if $unshare true 2>/dev/null; then
            WEBIMAGE_IN_NAMESPACE="$unshare" exec $unshare bash -c 'ip link set lo up && exec bash "$@"' \
                bash "$0" "$@"
        fi
    done
    WEBIMAGE_IN_NAMESPACE=none
fi
echo "NAMESPACE $WEBIMAGE_IN_NAMESPACE"

# SIGKILL, not SIGTERM: a test runner may start this script with every signal blocked, and children
# inherit that mask, so SIGTERM would never arrive.
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT

# waits until FILE has a line matching PATTERN (a server announcing its port), for up to 60 s
wait_for() {
    local file=$1 pattern=$2
    for _ in $(seq 600); do
        grep -qE "$pattern" "$file" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "error: no '$pattern' in $file:" >&2
    cat "$file" >&2
    exit 1
}

python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$images" >"$work/origin.log" 2>&1 &
pids+=($!)
wait_for "$work/origin.log" 'port [0-9]+'
origin_port=$(grep -oE 'port [0-9]+' "$work/origin.log" | head -1 | cut -d' ' -f2)

key=$(openssl rand -hex 32)
salt=$(openssl rand -hex 16)
"$webimage" serve --host 127.0.0.1 --port 0 --key "$key" --salt "$salt" --allow-destination 127.0.0.0/8 \
    --enable-webp-detection --watermark-path "$images/horse-rgba.png" \
    >"$work/serve.log" 2>&1 &
pids+=($!)
wait_for "$work/serve.log" 'listening on http://127\.0\.0\.1:[0-9]+'
serve=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$work/serve.log" | head -1)

# imgproxy's signature, made the way README shows it: HMAC-SHA256 over the salt's bytes and the path,
# base64url without padding.
sign() {
    { printf '%s' "$salt" | sed 's/../\\x&/g' | xargs -0 printf '%b'; printf '%s' "$1"; } |
        openssl dgst -sha256 -binary -mac HMAC -macopt "hexkey:$key" | base64 | tr '+/' '-_' | tr -d '=\n'
}

# id, options, source file. Those without `f:` name no format, so the service chooses from Chromium's Accept.
requests=(
    "fit coffee rs:fit:200:200:0 coffee-progressive.jpg"
    "fill coffee rs:fill:120:80:0 coffee-progressive.jpg"
    "width-only coffee w:150 coffee-progressive.jpg"
    "dpr coffee rs:fit:100:100:0/dpr:2 coffee-progressive.jpg"
    "alpha horse rs:fill:64:64:0 horse-rgba.png"
    "enlarge horse rs:fit:800:800:1 horse-rgba.png"
    "explicit-webp coffee rs:fit:200:200:0/f:webp coffee-progressive.jpg"
    "trim-smart coffee t:10/rs:fill:100:100:0/g:sm coffee-progressive.jpg"
    "effects coffee rs:fit:120:120:0/bl:1/sh:1/pix:4/fl:1:0 coffee-progressive.jpg"
    "padded horse rs:fit:60:60:0/pd:10/bg:ff0000 horse-rgba.png"
    "gif coffee rs:fit:50:50:0/f:gif coffee-progressive.jpg"
    "watermark coffee rs:fit:90:90:0/wm:0.5:soea coffee-progressive.jpg"
    "metadata coffee rs:fit:90:90:0/sm:0/kcr:0 coffee-progressive.jpg"
    "hdr horse rs:fit:64:64:0/ph:1/f:png horse-rgba.png"
)
{
    echo '<!doctype html><html><head><meta charset="utf-8"></head><body>'
    for entry in "${requests[@]}"; do
        read -r id _ options file <<<"$entry"
        path="/$options/plain/http://127.0.0.1:$origin_port/$file"
        echo "<img id=\"$id\" src=\"$serve/$(sign "$path")$path\">"
    done
    cat <<'HTML'
<pre id="result"></pre>
<script>
window.addEventListener('load', () => {
  document.getElementById('result').textContent = [...document.images]
    .map(image => `IMAGE ${image.id} ${image.naturalWidth}x${image.naturalHeight}`).join('\n');
});
</script></body></html>
HTML
} >"$work/page.html"

timeout --signal=KILL 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check \
    --disable-background-networking --disable-component-update --disable-sync --disable-default-apps \
    --disable-domain-reliability --proxy-server=127.0.0.1:9 \
    --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" \
    --user-data-dir="$work/profile" --log-net-log="$work/net-log.json" --virtual-time-budget=20000 \
    --dump-dom "file://$work/page.html" >"$work/dom.html" 2>"$work/chromium.log" || {
    echo "error: chromium failed:" >&2
    tail -20 "$work/chromium.log" >&2
    exit 1
}
grep -oE 'IMAGE [a-z-]+ [0-9]+x[0-9]+' "$work/dom.html" || true

# The net log: each response's headers (grouped by request), and every TCP connection's address.
python3 - "$work/net-log.json" "$serve" <<'PY'
import json
import sys

log = json.load(open(sys.argv[1]))
service = sys.argv[2]
names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
urls, accepts, responses = {}, {}, []
for event in log["events"]:
    name, params, source = names.get(event["type"], ""), event.get("params", {}), event["source"]["id"]
    if name == "URL_REQUEST_START_JOB" and "url" in params:
        urls[source] = params["url"]
    elif name == "HTTP_TRANSACTION_SEND_REQUEST_HEADERS":
        accepts[source] = next((h for h in params.get("headers", []) if h.lower().startswith("accept:")), "-")
    elif name == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS":
        responses.append((source, params.get("headers", [])))
    elif name == "TCP_CONNECT_ATTEMPT" and "address" in params:
        print("CONNECT", params["address"])
for source, headers in responses:
    url = urls.get(source, "")
    if not url.startswith(service):
        continue
    status = headers[0].split(" ")[1] if headers else "?"
    fields = {h.split(":", 1)[0].lower(): h.split(":", 1)[1].strip() for h in headers[1:] if ":" in h}
    print("RESPONSE", status, fields.get("content-type", "-"), fields.get("vary", "-"), url)
    print("REQUESTED", accepts.get(source, "-"))
PY
