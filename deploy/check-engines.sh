#!/usr/bin/env bash
# Runs deploy/spark/bulk_spark.py and deploy/ray/bulk_ray.py for real (`make check-engines`): Spark in
# local mode (local[2]) and a local Ray cluster, each spreading the shards of one URL list over three
# tasks, against sample images served on 127.0.0.1. Checks that each engine's output equals a plain
# `webimage bulk` run's (the same keys, each a success, the same image bytes by sha256), that a second
# run of the same job writes nothing new, and that a bad option ends the job with status 2 before any
# task starts. With .venv-test's moto (make test-python), both engines run again with --output s3://…
# against moto's S3 server on 127.0.0.1.
#
# PySpark and Ray go into .venv-engines (pip, the first time; Spark also needs a Java 17+ runtime).
# Not part of `make test`: the two packages are large and Spark starts slowly.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
VENV=.venv-engines
PYTHON=$VENV/bin/python3

if ! [ -x "$PYTHON" ] || ! "$PYTHON" -c 'import pyspark, ray' 2>/dev/null; then
    echo "==> installing pyspark and ray into $VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q pyspark 'ray[default]'
fi
command -v java >/dev/null || { echo "error: Spark needs java (Debian: openjdk-17-jre-headless)" >&2; exit 2; }

echo "==> building webimage"
"$SWIFT" build --traits Tools --product webimage >/dev/null
WEBIMAGE="$("$SWIFT" build --show-bin-path)/webimage"

WORK=$(mktemp -d /tmp/webimage-engines-XXXXXX)
SERVER_PID=""
MOTO_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
    [ -n "$MOTO_PID" ] && kill "$MOTO_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# The images: the bundled samples that decode, under distinct query strings, 60 rows in 6 shards of 10.
PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PYTHON" -m http.server "$PORT" --bind 127.0.0.1 --directory SampleImages >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/horse-rgba.png" && break; sleep 0.1; done
SAMPLES=(astronaut-baseline.jpg coffee-progressive.jpg horse-rgba.png chelsea-palette.png astronaut-lossy.webp
    camera-gray.jpg)
{
    echo "url,caption"
    for n in $(seq 0 59); do echo "http://127.0.0.1:$PORT/${SAMPLES[$((n % 6))]}?n=$n,sample $n"; done
} >"$WORK/urls.csv"
# bulk connects to public addresses only unless told otherwise; the sample server is on loopback.
OPTIONS=(--url-col url --caption-col caption --shard-size 10 --size 32 --concurrency 8 --allow-destination 127.0.0.0/8)

failures=0
check() {  # check NAME COMMAND...: runs COMMAND, prints PASS or FAIL
    local name=$1
    shift
    if "$@"; then echo "  PASS  $name"; else echo "  FAIL  $name"; failures=$((failures + 1)); fi
}

# What a finished output directory holds: "key sha256" per image in its tars, sorted.
images() {
    "$PYTHON" - "$1" <<'PY'
import glob, hashlib, os, sys, tarfile
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.tar"))):
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            if not member.name.endswith((".json", ".txt")):
                print(member.name, hashlib.sha256(tar.extractfile(member).read()).hexdigest())
PY
}

successes() { "$WEBIMAGE" bulk-stats "$1" --json | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["successes"])'; }

echo "==> reference: one webimage bulk process"
"$WEBIMAGE" bulk "$WORK/urls.csv" --output "$WORK/reference" "${OPTIONS[@]}" >/dev/null
images "$WORK/reference" | sort >"$WORK/reference.txt"

same_as_reference() { images "$1" | sort | cmp -s - "$WORK/reference.txt"; }
all_succeeded() { [ "$(successes "$1")" = 60 ]; }
wrote_nothing() { grep -q '"written": 0' "$1" && grep -q '"skipped": 6' "$1"; }

# run_engine NAME SCRIPT: the job, the same job again, then a job with a bad option (its exit status goes
# to $WORK/NAME-bad.status).
run_engine() {
    local name=$1 script=$2 status=0
    "$PYTHON" "$script" "$WORK/urls.csv" "$WORK/$name" --tasks 3 --webimage "$WEBIMAGE" -- "${OPTIONS[@]}" \
        >"$WORK/$name-1.out" 2>"$WORK/$name-1.err" || { tail -20 "$WORK/$name-1.err"; false; }
    tail -1 "$WORK/$name-1.out"
    "$PYTHON" "$script" "$WORK/urls.csv" "$WORK/$name" --tasks 3 --webimage "$WEBIMAGE" -- "${OPTIONS[@]}" \
        >"$WORK/$name-2.out" 2>"$WORK/$name-2.err"
    "$PYTHON" "$script" "$WORK/urls.csv" "$WORK/$name-bad" --webimage "$WEBIMAGE" -- --size 0 \
        >/dev/null 2>&1 || status=$?
    echo "$status" >"$WORK/$name-bad.status"
}

export PYSPARK_PYTHON="$PWD/$PYTHON" PYSPARK_SUBMIT_ARGS="--master local[2] pyspark-shell"
echo "==> Spark (local[2]), 3 tasks"
run_engine spark deploy/spark/bulk_spark.py
echo "==> Ray (local cluster), 3 tasks"
run_engine ray deploy/ray/bulk_ray.py

# Object storage: each engine again with --output s3://engines/NAME, against moto's S3 server on 127.0.0.1
# (from .venv-test, which `make test-python` sets up; skipped without it). The drivers hand their AWS_*
# variables to the tasks; nothing here reaches AWS.
S3_PYTHON=.venv-test/bin/python3
S3_RAN=false
if [ -x "$S3_PYTHON" ] && "$S3_PYTHON" -c 'import moto.server, boto3' 2>/dev/null; then
    S3_PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$S3_PYTHON" -m moto.server -H 127.0.0.1 -p "$S3_PORT" >"$WORK/moto.log" 2>&1 &
    MOTO_PID=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$S3_PORT/" && break; sleep 0.1; done
    export AWS_ACCESS_KEY_ID=engines AWS_SECRET_ACCESS_KEY=engines AWS_REGION=us-east-1 \
        AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
    unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL_S3
    "$S3_PYTHON" -c 'import boto3; boto3.client("s3").create_bucket(Bucket="engines")'
    for name in spark ray; do
        echo "==> $name, 3 tasks, --output s3://engines/$name"
        "$PYTHON" "deploy/$name/bulk_$name.py" "$WORK/urls.csv" "s3://engines/$name" --tasks 3 \
            --webimage "$WEBIMAGE" -- "${OPTIONS[@]}" >"$WORK/$name-s3.out" 2>"$WORK/$name-s3.err" \
            || tail -20 "$WORK/$name-s3.err"
        "$S3_PYTHON" - "$name/" "$WORK/$name-s3" <<'PY'
import os, sys, boto3
s3 = boto3.client("s3")
for page in s3.get_paginator("list_objects_v2").paginate(Bucket="engines", Prefix=sys.argv[1]):
    for item in page.get("Contents", []):
        path = os.path.join(sys.argv[2], item["Key"][len(sys.argv[1]):])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        s3.download_file("engines", item["Key"], path)
PY
    done
    S3_RAN=true
fi

echo
echo "== deploy/check-engines.sh"
check "reference: 60 of 60 downloaded" all_succeeded "$WORK/reference"
check "Spark: 60 of 60, in the 6 shards' stats" all_succeeded "$WORK/spark"
check "Spark: the same images as one process (sha256 per member)" same_as_reference "$WORK/spark"
check "Spark: a second run writes nothing (6 shards skipped)" wrote_nothing "$WORK/spark-2.out"
check "Spark: a bad option ends the job with status 2" grep -qx 2 "$WORK/spark-bad.status"
check "Ray: 60 of 60, in the 6 shards' stats" all_succeeded "$WORK/ray"
check "Ray: the same images as one process (sha256 per member)" same_as_reference "$WORK/ray"
check "Ray: a second run writes nothing (6 shards skipped)" wrote_nothing "$WORK/ray-2.out"
check "Ray: a bad option ends the job with status 2" grep -qx 2 "$WORK/ray-bad.status"
if $S3_RAN; then
    check "Spark, s3:// output: 60 of 60, in the 6 shards' stats objects" all_succeeded "$WORK/spark-s3"
    check "Spark, s3:// output: the same images as one process" same_as_reference "$WORK/spark-s3"
    check "Ray, s3:// output: 60 of 60, in the 6 shards' stats objects" all_succeeded "$WORK/ray-s3"
    check "Ray, s3:// output: the same images as one process" same_as_reference "$WORK/ray-s3"
else
    echo "  SKIP  s3:// output: .venv-test has no moto[server] and boto3 (make test-python installs them)"
fi
if [ "$failures" -eq 0 ]; then echo "PASS (${SECONDS} s)"; else echo "FAIL: $failures check(s)"; exit 1; fi
