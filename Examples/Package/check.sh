#!/usr/bin/env bash
# Builds Examples/Package against this repository as a versioned git dependency, the way another
# package would use it: a bare clone of HEAD, tagged, named by a file:// URL with `from:`. SwiftPM
# refuses unsafe flags in a dependency and resolves only what the products need, so this proves the
# package is usable by others: the WebImage product, and the WebImageCodecs product alone (which must
# link no libcurl or SQLite), resolving no package but swift-log and swift-metrics. Run by
# `make test-package` (and CI).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/webimage-consumer.XXXXXX)"
trap 'rm -rf "$work"' EXIT
version="1.0.0"

git clone --quiet --bare "$repo" "$work/WebImage.git"
git -C "$work/WebImage.git" tag "$version" HEAD

mkdir -p "$work/consumer"
cp -R "$repo/Examples/Package/Sources" "$work/consumer/"
sed -e "s|@WEBIMAGE_GIT_URL@|file://$work/WebImage.git|" -e "s|@WEBIMAGE_VERSION@|$version|" \
    "$repo/Examples/Package/Package.swift.in" > "$work/consumer/Package.swift"

swift build --package-path "$work/consumer" 2>&1 | tee "$work/build.log" | tail -n 3
bin="$(swift build --package-path "$work/consumer" --show-bin-path)"
"$bin/WebImageConsumer"
"$bin/CodecsConsumer"
# The codecs product must not bring the downloader's libraries along.
if ldd "$bin/CodecsConsumer" | grep -E 'libcurl|libsqlite3'; then
    echo "error: CodecsConsumer (WebImageCodecs only) links the libraries above" >&2
    exit 1
fi
echo "CodecsConsumer links: $(ldd "$bin/CodecsConsumer" | awk '{print $1}' | grep -E 'lib(jpeg|png|webp|gif|avif|heif|jxl|lcms)' | sort | tr '\n' ' ')"
echo "Resolved:"
grep -E '"(identity|version)"' "$work/consumer/Package.resolved" | paste - - | sed 's/  */ /g'
# The library products need swift-log and swift-metrics only; the programs' packages sit behind the
# `Tools` trait, which a dependent leaves off (Package.swift).
heavy='"identity" : "(hummingbird|swift-nio|swift-nio-ssl|swift-nio-http2|async-http-client|swift-certificates|swift-configuration|swift-crypto|swift-argument-parser|swift-otel|swift-protobuf|swift-distributed-tracing)"'
if grep -E "$heavy" "$work/consumer/Package.resolved"; then
    echo "error: an app using WebImage and WebImageCodecs resolved the packages above" >&2
    exit 1
fi
echo "Packages resolved besides WebImage: $(grep -c '"identity"' "$work/consumer/Package.resolved" | awk '{print $1 - 1}')"
