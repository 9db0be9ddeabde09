#!/usr/bin/env bash
# Checks the runtime stage of deploy/Dockerfile without a Docker engine (`make check-deploy`).
#
#   1. builds `webimage` the way the Dockerfile's build stage does (release, --static-swift-stdlib), into
#      .build-static;
#   2. makes a Debian bookworm root file system with debootstrap (minbase), cached in .build-rootfs/, and
#      works in a fresh copy of it on every run;
#   3. installs in that copy exactly the packages of the Dockerfile's last stage `apt-get install` line
#      (read from the Dockerfile, so the check follows it), and the user it creates;
#   4. copies the binary to /usr/local/bin/webimage, fails if `ldd` finds a library missing, and runs
#      `--help`, `info`, `convert` and a real `bulk` (sample images served from the host on 127.0.0.1)
#      inside the root file system, as the Dockerfile's unprivileged uid;
#   5. with .venv-test's moto, boto3 and pyarrow (make test-python), runs `bulk` again with a Parquet list
#      read from s3:// and --output s3://, against moto's S3 server on 127.0.0.1.
#
# Also dry-runs the build stage's `apt-get install` in the same root file system, and warns (without
# failing) when the build stage's `swift:` image tag is not the local toolchain's version.
#
# Run as root from the repository root (chroot, mount, debootstrap). Needs the network for the Debian
# mirror the host's apt uses. Exits non-zero if any check fails; prints a PASS/FAIL summary either way.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
DOCKERFILE=${DOCKERFILE:-deploy/Dockerfile}   # another file only to test this script
SCRATCH=.build-static
CACHE=.build-rootfs
BASE="$CACHE/bookworm-minbase"   # debootstrap's result, kept between runs
ROOT="$CACHE/run"                # this run's copy: the "container"
ARCHIVES="$CACHE/apt-archives"   # downloaded .debs, kept between runs
summary=()   # one line per step: PASS/FAIL/WARN, name, seconds
failures=0
SAMPLES=(astronaut-baseline.jpg coffee-progressive.jpg horse-rgba.png chelsea-palette.png astronaut-lossy.webp)

if [ "$(id -u)" -ne 0 ]; then
    echo "error: $0 needs root (debootstrap, chroot, mount); run it with sudo" >&2
    exit 2
fi

# ---------------------------------------------------------------------------------------------------
# Bookkeeping: each step runs in a subshell with errexit on; its result and time go into the summary.

print_summary() {
    echo
    echo "== deploy/check-runtime.sh summary"
    local line
    for line in "${summary[@]}"; do echo "  $line"; done
    if [ "$failures" -eq 0 ]; then
        echo "PASS: the Dockerfile's runtime stage runs webimage (${SECONDS} s in all)"
    else
        echo "FAIL: $failures step(s) failed (${SECONDS} s in all)"
    fi
}

# step NAME FUNCTION: runs FUNCTION in a subshell with errexit on and records PASS/FAIL and its duration
# in the summary; its status is left in step_rc. (Never call it after `if`, `||` or `&&`: bash ignores
# errexit in everything run from such a context, the subshell included.)
step_rc=0
step() {
    local name=$1 fn=$2 start=$SECONDS
    echo
    echo "==> $name"
    set +e
    (
        set -e
        "$fn"
    )
    step_rc=$?
    set -e
    if [ "$step_rc" -eq 0 ]; then
        summary+=("PASS  $name ($((SECONDS - start)) s)")
    else
        summary+=("FAIL  $name ($((SECONDS - start)) s, exit $step_rc)")
        failures=$((failures + 1))
    fi
}

# A step the later ones need: on failure, stop here.
required() {
    step "$@"
    if [ "$step_rc" -ne 0 ]; then
        print_summary
        exit 1
    fi
}

# Everything mounted under the run copy, deepest first.
mounts_under() {
    local dir
    dir=$(realpath -m "$1")
    awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r
}

cleanup() {
    local m
    for m in $(mounts_under "$ROOT"); do umount "$m" 2>/dev/null || umount -l "$m" || true; done
}
trap cleanup EXIT

# Removes the run copy, refusing while anything is still mounted inside it.
remove_run_copy() {
    if [ -n "$(mounts_under "$ROOT")" ]; then
        echo "error: still mounted under $ROOT:" $(mounts_under "$ROOT") >&2
        return 1
    fi
    rm -rf "$ROOT"
}

# Runs a command inside the root file system with a container-like clean environment; `as_user` runs it
# as the Dockerfile's uid (the USER of the image).
in_root() {
    chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
as_user() {
    chroot --userspec="$RUN_UID:$RUN_UID" "$ROOT" /usr/bin/env -i \
        PATH=/usr/local/bin:/usr/bin:/bin HOME="/home/$RUN_USER" LANG=C.UTF-8 "$@"
}

# ---------------------------------------------------------------------------------------------------
# What the Dockerfile says. Stage 1 (first FROM) builds; the last stage is the image `docker build` makes.

# stage first|last: that stage's lines, with backslash continuations joined.
stage() {
    awk -v which="$1" '
        /^FROM / { n++; if (which == "last") buf = "" }
        which == "first" && n == 1 { buf = buf $0 "\n" }
        which == "last" { buf = buf $0 "\n" }
        END { printf "%s", buf }' "$DOCKERFILE" |
        sed -e ':a' -e '/\\$/{N; s/\\\n/ /; ba}'
}

# stage_packages first|last: the packages of that stage's `apt-get install` (options and what follows
# `&&` dropped).
stage_packages() {
    stage "$1" | grep -m1 'apt-get install' | sed -e 's/.*apt-get install//' -e 's/&&.*//' |
        tr -s ' \t' '\n' | grep -v -e '^-' -e '^$' || true
}

RUNTIME_PACKAGES=$(stage_packages last | tr '\n' ' ')
BUILD_PACKAGES=$(stage_packages first | tr '\n' ' ')
# The user the last stage creates (`useradd ... --uid N NAME`) and switches to with USER.
RUN_UID=$(stage last | grep -m1 -o -- '--uid [0-9]*' | awk '{ print $2 }' || true)
RUN_USER=$(stage last | awk '/^USER /{ print $2 }' | tail -1)
# The build stage's Swift image tag (swift:X.Y.Z-bookworm) against the toolchain this check builds with.
IMAGE_SWIFT=$(stage first | sed -n -E 's/^FROM swift:([0-9.]+)-.*/\1/p' | head -1)
LOCAL_SWIFT=$("$SWIFT" --version 2>/dev/null | sed -n -E 's/.*Swift version ([0-9.]+).*/\1/p' | head -1)
if [ -z "$RUNTIME_PACKAGES" ] || [ -z "$RUN_UID" ] || [ -z "$RUN_USER" ]; then
    echo "error: cannot read the runtime packages, uid or USER from $DOCKERFILE's last stage" >&2
    exit 2
fi
echo "From $DOCKERFILE's last stage: packages: $RUNTIME_PACKAGES"
echo "                               user: $RUN_USER (uid $RUN_UID)"
echo "Build stage: swift:$IMAGE_SWIFT; this machine: Swift $LOCAL_SWIFT"
if [ "$IMAGE_SWIFT" != "$LOCAL_SWIFT" ]; then
    summary+=("WARN  the Dockerfile builds with swift:$IMAGE_SWIFT, this check with Swift $LOCAL_SWIFT")
fi

# The Debian mirror the host's apt already uses (deb822 .sources files or one-line .list entries), for a
# suite given as $1; deb.debian.org when none is found.
host_mirror() {
    local suite=$1 default=$2 uri=""
    shopt -s nullglob
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        # Paragraphs separated by blank lines; the first whose Suites has the suite.
        uri=$(awk -v s="$suite" '
            /^[[:space:]]*$/ { if (ok && u != "") exit; ok = 0; u = ""; next }
            /^URIs:/   { u = $2 }
            /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
            END { if (ok && u != "") print u }' "$f")
        if [ -n "$uri" ]; then break; fi
    done
    if [ -z "$uri" ]; then
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [ -f "$f" ] || continue
            uri=$(sed -E 's/\[[^]]*\]//' "$f" |
                awk -v s="$suite" '$1 == "deb" && $3 == s { print $2; exit }')
            if [ -n "$uri" ]; then break; fi
        done
    fi
    shopt -u nullglob
    echo "${uri:-$default}"
}
MIRROR=$(host_mirror bookworm http://deb.debian.org/debian)
SECURITY_MIRROR=$(host_mirror bookworm-security http://deb.debian.org/debian-security)
echo "Debian mirror: $MIRROR (security: $SECURITY_MIRROR)"

# ---------------------------------------------------------------------------------------------------
# The steps.

build_binary() {
    # As the Dockerfile's build stage: release, the Swift runtime linked in statically.
    "$SWIFT" build -c release --traits Tools,OTel --product webimage --static-swift-stdlib --scratch-path "$SCRATCH"
}

bin_path() {
    echo "$("$SWIFT" build -c release --traits Tools,OTel --static-swift-stdlib --scratch-path "$SCRATCH" --show-bin-path)/webimage"
}

make_base_rootfs() {
    if [ -f "$BASE/.complete" ]; then
        echo "reusing $BASE (delete it to make a new one)"
        return 0
    fi
    if ! command -v debootstrap >/dev/null; then
        echo "installing debootstrap"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
    fi
    rm -rf "$BASE"
    mkdir -p "$CACHE"
    debootstrap --variant=minbase bookworm "$BASE" "$MIRROR"
    touch "$BASE/.complete"
}

prepare_run_copy() {
    remove_run_copy
    cp -a "$BASE" "$ROOT"
    # The suites a debian:bookworm-slim image has, from the host's mirrors.
    cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY_MIRROR bookworm-security main
EOF
    cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
    # debootstrap in a container may leave plain files where the device nodes belong.
    local dev
    for dev in "null 1 3" "zero 1 5" "random 1 8" "urandom 1 9"; do
        set -- $dev
        if [ ! -c "$ROOT/dev/$1" ]; then rm -f "$ROOT/dev/$1"; mknod -m 666 "$ROOT/dev/$1" c "$2" "$3"; fi
    done
    mount -t proc proc "$ROOT/proc"
    mkdir -p "$ARCHIVES/partial" "$ROOT/var/cache/apt/archives"
    mount --bind "$ARCHIVES" "$ROOT/var/cache/apt/archives"
}

install_runtime_packages() {
    in_root apt-get update -qq
    # Use-Pty=0: no /dev/pts in the chroot.
    # shellcheck disable=SC2086 # one word per package
    in_root apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends $RUNTIME_PACKAGES
    # The Dockerfile's user.
    in_root useradd --create-home --uid "$RUN_UID" "$RUN_USER"
}

# The build stage's packages resolve in bookworm too (a dry run: the image's Swift toolchain is not here).
check_build_packages() {
    # shellcheck disable=SC2086 # one word per package
    in_root apt-get install --simulate -qq --no-install-recommends $BUILD_PACKAGES >/dev/null
    echo "resolve: $BUILD_PACKAGES"
}

install_binary() {
    install -D -m 755 "$(bin_path)" "$ROOT/usr/local/bin/webimage"
    ls -l "$ROOT/usr/local/bin/webimage"
}

check_libraries() {
    local out
    out=$(in_root ldd /usr/local/bin/webimage)
    echo "$out"
    if grep -q 'not found' <<<"$out"; then
        echo "error: libraries missing from the runtime stage:" >&2
        grep 'not found' <<<"$out" >&2
        return 1
    fi
    # The Swift runtime must be linked in, not looked up (the image has no toolchain).
    if grep -Eq 'libswift|libFoundation|libdispatch' <<<"$out"; then
        echo "error: the binary links the Swift runtime dynamically" >&2
        return 1
    fi
}

check_help() {
    local out
    out=$(as_user webimage --help)
    echo "$out" | head -20
    grep -q 'bulk' <<<"$out"
}

# Sample images the user can read, and /data (the Dockerfile's output mount) owned by the user.
prepare_data() {
    mkdir -p "$ROOT/data/in"
    cp SampleImages/astronaut-baseline.jpg SampleImages/chelsea-palette.png "$ROOT/data/in/"
    chown -R "$RUN_UID:$RUN_UID" "$ROOT/data"
}

check_info() {
    as_user webimage info /data/in/astronaut-baseline.jpg /data/in/chelsea-palette.png
    as_user webimage info --json /data/in/astronaut-baseline.jpg | grep -q '"width"'
}

check_convert() {
    # JPEG in, each encoder out (libwebp, libpng, libavif, libjpeg), then read back with info.
    local format
    for format in webp png avif jpg; do
        as_user webimage convert /data/in/astronaut-baseline.jpg "/data/converted.$format" \
            --thumbnail 128x128 --force
        as_user webimage info "/data/converted.$format"
    done
}

# Serves SampleImages/ from the host on 127.0.0.1 (a free port) until the calling step's subshell exits.
start_server() {
    PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 -m http.server --bind 127.0.0.1 --directory SampleImages "$PORT" >"$CACHE/http-server.log" 2>&1 &
    SERVER_PID=$!
    trap "kill $SERVER_PID 2>/dev/null || true" EXIT
    local i
    for i in $(seq 50); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
            echo "serving SampleImages/ on http://127.0.0.1:$PORT (pid $SERVER_PID)"
            return 0
        fi
        sleep 0.1
    done
    echo "error: the sample image server did not start (see $CACHE/http-server.log)" >&2
    return 1
}

check_bulk() {
    start_server
    # The URL list points at the host's server; the chroot shares the host's network namespace.
    local name
    : >"$ROOT/data/urls.txt"
    for name in "${SAMPLES[@]}"; do echo "http://127.0.0.1:$PORT/$name" >>"$ROOT/data/urls.txt"; done
    chown "$RUN_UID:$RUN_UID" "$ROOT/data/urls.txt"
    cat "$ROOT/data/urls.txt"
    as_user webimage bulk /data/urls.txt --output /data/out --size 64 --allow-destination 127.0.0.0/8
    ls -l "$ROOT/data/out"
    test -s "$ROOT/data/out/00000.tar"
    test -s "$ROOT/data/out/00000_stats.json"
    cat "$ROOT/data/out/00000_stats.json"
    echo
    local successes images
    successes=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["successes"])' \
        "$ROOT/data/out/00000_stats.json")
    images=$(tar -tf "$ROOT/data/out/00000.tar" | grep -c '\.jpg$' || true)
    echo "successes: $successes of ${#SAMPLES[@]}; JPEGs in 00000.tar: $images"
    [ "$successes" -gt 0 ] && [ "$successes" -eq "${#SAMPLES[@]}" ] && [ "$images" -eq "$successes" ]
}

# The object-storage path the deploy/ examples use: a Parquet list (SNAPPY pages, as LAION's) read from
# s3:// and the shards written to s3://, against moto's S3 server on 127.0.0.1 (from .venv-test, which
# `make test-python` sets up). Skipped, with a note in the summary, without it.
S3_PYTHON=${S3_PYTHON:-.venv-test/bin/python3}
has_moto() {
    [ -x "$S3_PYTHON" ] && "$S3_PYTHON" -c 'import moto.server, boto3, pyarrow' 2>/dev/null
}

check_bulk_s3() {
    start_server
    local s3_port moto_pid
    s3_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$S3_PYTHON" -m moto.server -H 127.0.0.1 -p "$s3_port" >"$CACHE/moto.log" 2>&1 &
    moto_pid=$!
    # Both servers stop when this step's subshell exits.
    trap "kill $moto_pid $SERVER_PID 2>/dev/null || true" EXIT
    local i up=0
    for i in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$s3_port") 2>/dev/null; then up=1; break; fi
        sleep 0.1
    done
    if [ "$up" -ne 1 ]; then
        echo "error: moto's S3 server did not start (see $CACHE/moto.log)" >&2
        return 1
    fi
    echo "moto's S3 server on http://127.0.0.1:$s3_port (pid $moto_pid)"
    local aws=(AWS_ACCESS_KEY_ID=deploy AWS_SECRET_ACCESS_KEY=deploy AWS_REGION=us-east-1
        "AWS_ENDPOINT_URL=http://127.0.0.1:$s3_port")
    local urls=() name
    for name in "${SAMPLES[@]}"; do urls+=("http://127.0.0.1:$PORT/$name"); done
    env -u AWS_SESSION_TOKEN -u AWS_PROFILE -u AWS_ENDPOINT_URL_S3 "${aws[@]}" "$S3_PYTHON" - "${urls[@]}" <<'PY'
import io, sys, boto3, pyarrow as pa, pyarrow.parquet as pq
s3 = boto3.client("s3")
s3.create_bucket(Bucket="deploy")
buffer = io.BytesIO()
pq.write_table(pa.table({"URL": sys.argv[1:], "TEXT": ["sample %d" % i for i in range(len(sys.argv) - 1)]}),
               buffer, compression="snappy")
s3.put_object(Bucket="deploy", Key="in/urls.parquet", Body=buffer.getvalue())
PY
    as_user "${aws[@]}" webimage bulk s3://deploy/in/urls.parquet --url-col URL --caption-col TEXT \
        --output s3://deploy/out --size 64 --allow-destination 127.0.0.0/8
    env -u AWS_SESSION_TOKEN -u AWS_PROFILE -u AWS_ENDPOINT_URL_S3 "${aws[@]}" "$S3_PYTHON" - "${#SAMPLES[@]}" <<'PY'
import io, json, sys, tarfile, boto3
s3 = boto3.client("s3")
keys = sorted(item["Key"] for item in s3.list_objects_v2(Bucket="deploy", Prefix="out/")["Contents"])
print("objects:", " ".join(keys))
stats = json.loads(s3.get_object(Bucket="deploy", Key="out/00000_stats.json")["Body"].read())
tar = tarfile.open(fileobj=io.BytesIO(s3.get_object(Bucket="deploy", Key="out/00000.tar")["Body"].read()))
images = [name for name in tar.getnames() if name.endswith(".jpg")]
captions = [name for name in tar.getnames() if name.endswith(".txt")]
print("successes: %d of %s; JPEGs in 00000.tar: %d, captions: %d" % (stats["successes"], sys.argv[1], len(images), len(captions)))
assert stats["successes"] == int(sys.argv[1]) == len(images) == len(captions), stats
PY
}

# ---------------------------------------------------------------------------------------------------

required "build webimage (release, --static-swift-stdlib, $SCRATCH)" build_binary
required "debootstrap --variant=minbase bookworm ($BASE)" make_base_rootfs
required "fresh copy of the root file system ($ROOT), /proc mounted" prepare_run_copy
required "apt-get install the Dockerfile's runtime packages; useradd uid $RUN_UID" install_runtime_packages
step "the build stage's packages resolve in bookworm (apt-get --simulate)" check_build_packages
required "copy the binary to /usr/local/bin/webimage" install_binary
step "ldd: no library 'not found'" check_libraries
required "sample images in /data" prepare_data
step "webimage --help (uid $RUN_UID)" check_help
step "webimage info (uid $RUN_UID)" check_info
step "webimage convert to webp, png, avif, jpg (uid $RUN_UID)" check_convert
step "webimage bulk from 127.0.0.1 --size 64 --allow-destination 127.0.0.0/8 (uid $RUN_UID)" check_bulk
if has_moto; then
    step "webimage bulk s3://…/urls.parquet --output s3://… against moto on 127.0.0.1 (uid $RUN_UID)" check_bulk_s3
else
    summary+=("SKIP  bulk with s3:// input and output: $S3_PYTHON has no moto[server], boto3 and pyarrow (make test-python)")
fi

print_summary
[ "$failures" -eq 0 ]
