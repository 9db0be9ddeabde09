#!/usr/bin/env python3
"""Builds every ```swift block of README.md, so the README's code is code that compiles.

Run by `make test-readme` (and CI). The convention, also in README.md ("The README's code"):

- Each ```swift block becomes the main.swift of its own executable target in a generated package,
  so it is compiled as top-level code: `try` and `await` work there, `return` does not.
- A block with no `import` line continues the quick start: it is compiled after the prelude below
  (Foundation and WebImage imported, `downloader` and `url` defined).
- A block that imports WebImageCodecs and not WebImage is linked with the WebImageCodecs product
  only; one that imports WebImageDataset is also linked with that product, and one that imports Crypto
  with swift-crypto's.
- A block marked `<!-- test-readme: compiled-in: PATH -->` is not built here: PATH, a Swift file of a
  test target, holds the block between the lines `// README: begin` and `// README: end` (indentation
  aside; there the lines are the body of a function) and imports what the block imports; `make test`'s
  build compiles it, and this script checks that the two are the same lines. Every block of the README
  is marked so today: a generated package builds WebImage, and the `Tools` trait's packages for some
  blocks, a second time, which cost CI minutes. When no unmarked block is left, nothing is built.
- A block that is deliberately not compilable (a Package.swift excerpt, pseudo-code) is marked by the
  line `<!-- test-readme: skip: REASON -->` right before its fence; the script lists each skipped block
  with its reason. A skip marker without a reason, one not followed by a ```swift block, or an
  unclosed fence is an error.

The generated package depends on this repository by path and on swift-log and swift-metrics with the
same requirements as this repository's Package.swift, and starts from its Package.resolved, so it
builds against the pins the repository uses, through the same git URLs (and so the same local mirror
git is configured with) as `make test-package`.

Usage: check.py [REPO]    (REPO: the repository's folder, by default the one this script is in)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PRELUDE = """import Foundation
import WebImage

let downloader = ImageDownloader()
let url = URL(string: "https://example.com/cat.webp")!
"""

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")
SKIP = re.compile(r"^\s*<!--\s*test-readme:\s*skip\b:?\s*(.*?)\s*-->\s*$")
COMPILED_IN = re.compile(r"^\s*<!--\s*test-readme:\s*compiled-in:\s*(\S+)\s*-->\s*$")


def compiled_in_errors(repo, line, path, code):
    """Why the block at README.md:line is not the lines of `path` between its README markers (none: it is)."""
    full = os.path.join(repo, path)
    if not os.path.isfile(full):
        return [f"README.md:{line}: compiled-in names {path}, which does not exist"]
    with open(full, encoding="utf-8") as handle:
        source = [text.strip() for text in handle.read().split("\n")]
    if "// README: begin" not in source or "// README: end" not in source:
        return [f"README.md:{line}: {path} has no // README: begin and // README: end lines"]
    start = source.index("// README: begin")
    compiled = source[start + 1:source.index("// README: end", start)]
    block = [text.strip() for text in code.split("\n") if text.strip()]
    imports = [text for text in block if text.startswith("import ")]
    body = [text for text in block if not text.startswith("import ")]
    errors = []
    missing = [text for text in imports if text not in source]
    if missing:
        errors.append(f"README.md:{line}: {path} does not have the block's {', '.join(missing)}")
    if [text for text in compiled if text] != body:
        errors.append(f"README.md:{line}: the block differs from the lines between the README markers of {path}")
    return errors


def extract(readme_text, repo="."):
    """Returns (blocks, skipped, errors, compiled_in): blocks as (line, code), skipped as (line, reason),
    compiled_in as (line, path)."""
    lines = readme_text.split("\n")
    blocks, skipped, errors, compiled_in = [], [], [], []
    pending_skip = None  # (line, reason) of a marker waiting for its block
    pending_file = None  # (line, path) of a compiled-in marker waiting for its block
    index = 0
    while index < len(lines):
        line = lines[index]
        elsewhere = COMPILED_IN.match(line)
        if elsewhere:
            pending_file = (index + 1, elsewhere.group(1))
            index += 1
            continue
        marker = SKIP.match(line)
        if marker:
            if not marker.group(1):
                errors.append(f"README.md:{index + 1}: a skip marker needs a reason")
            pending_skip = (index + 1, marker.group(1))
            index += 1
            continue
        fence = FENCE.match(line)
        if not fence:
            if line.strip() and pending_skip:
                errors.append(f"README.md:{pending_skip[0]}: the skip marker is not followed by a ```swift block")
                pending_skip = None
            if line.strip() and pending_file:
                errors.append(f"README.md:{pending_file[0]}: the compiled-in marker is not followed by a ```swift block")
                pending_file = None
            index += 1
            continue
        indent, ticks, language = fence.group(1), fence.group(2), fence.group(3).lower()
        start = index + 1
        body = []
        index += 1
        while index < len(lines) and not re.match(r"^\s*" + re.escape(ticks[0]) + "{" + str(len(ticks)) + r",}\s*$",
                                                      lines[index]):
            body.append(lines[index][len(indent):] if lines[index].startswith(indent) else lines[index].lstrip())
            index += 1
        if index == len(lines):
            errors.append(f"README.md:{start}: the fence opened here is never closed")
            break
        index += 1  # the closing fence
        if language == "swift":
            if pending_file:
                errors += compiled_in_errors(repo, start, pending_file[1], "\n".join(body))
                compiled_in.append((start, pending_file[1]))
            elif pending_skip:
                skipped.append((start, pending_skip[1]))
            else:
                blocks.append((start, "\n".join(body) + "\n"))
        elif pending_file:
            errors.append(f"README.md:{pending_file[0]}: the compiled-in marker is followed by a ```{language} block")
        elif pending_skip:
            errors.append(f"README.md:{pending_skip[0]}: the skip marker is followed by a ```{language} block")
        pending_skip = None
        pending_file = None
    if pending_skip:
        errors.append(f"README.md:{pending_skip[0]}: the skip marker is not followed by a ```swift block")
    if pending_file:
        errors.append(f"README.md:{pending_file[0]}: the compiled-in marker is not followed by a ```swift block")
    return blocks, skipped, errors, compiled_in


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(repo, "README.md"), encoding="utf-8") as handle:
        blocks, skipped, errors, compiled_in = extract(handle.read(), repo)
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    if errors:
        return 1
    if not blocks and not compiled_in:
        print("error: README.md has no ```swift block to build", file=sys.stderr)
        return 1
    for line, reason in skipped:
        print(f"README.md:{line}: not compiled (marked test-readme: skip): {reason}")
    for line, path in compiled_in:
        print(f"README.md:{line}: compiled by make test's build as part of {path} (the same lines)")
    if not blocks:
        print(f"test-readme: all {len(compiled_in)} swift blocks of README.md are compiled by make test's build "
              f"as the same lines ({len(skipped)} marked skip); none is left to build here")
        return 0

    with open(os.path.join(repo, "Package.swift"), encoding="utf-8") as handle:
        manifest = handle.read()
    requirements = []
    for name in ("swift-log", "swift-metrics", "swift-crypto"):
        found = re.search(r"\.package\(url: \"[^\"]*/" + name + r"\.git\"[^)]*\)", manifest)
        if not found:
            print(f"error: Package.swift names no {name} dependency", file=sys.stderr)
            return 1
        requirements.append(found.group(0))

    # SwiftPM names a path dependency after its folder (a clone named `webimage` is package `webimage`).
    identity = os.path.basename(repo.rstrip("/"))
    work = tempfile.mkdtemp(prefix="webimage-readme.")
    try:
        targets = []
        for line, code in blocks:
            name = f"ReadmeLine{line}"
            folder = os.path.join(work, "Sources", name)
            os.makedirs(folder)
            has_import = any(re.match(r"^\s*(@\w+\s+)*import\s", text) for text in code.split("\n"))
            with open(os.path.join(folder, "main.swift"), "w", encoding="utf-8") as handle:
                handle.write(f"// README.md line {line}\n")
                handle.write(code if has_import else PRELUDE + "\n" + code)
            # A block that imports WebImageCodecs and not WebImage is built against that product alone, as
            # a program that links only the codecs would be.
            codecs_only = re.search(r"^\s*import WebImageCodecs\s*$", code, re.M) and not re.search(
                r"^\s*(@\w+\s+)*import WebImage\s*$", code, re.M)
            products = (
                [f'            .product(name: "WebImageCodecs", package: "{identity}"),\n']
                if codecs_only
                else [
                    f'            .product(name: "WebImage", package: "{identity}"),\n',
                    '            .product(name: "Logging", package: "swift-log"),\n',
                    '            .product(name: "Metrics", package: "swift-metrics"),\n',
                ])
            # A block that imports Crypto (swift-crypto: the signing example of `webimage serve`) links it.
            if re.search(r"^\s*import Crypto\s*$", code, re.M):
                products.append('            .product(name: "Crypto", package: "swift-crypto"),\n')
            # A block that imports WebImageDataset (the bulk engine, Parquet) links that product too.
            if re.search(r"^\s*import WebImageDataset\s*$", code, re.M):
                products.append(f'            .product(name: "WebImageDataset", package: "{identity}"),\n')
            targets.append(
                f'        .executableTarget(name: "{name}", dependencies: [\n'
                + "".join(products)
                + "        ], swiftSettings: [.swiftLanguageMode(.v6)]),\n")
        # WebImageDataset is behind the package's `Tools` trait; the library products need none.
        needs_tools = any(re.search(r"^\s*import WebImageDataset\s*$", code, re.M) for _, code in blocks)
        traits = ', traits: ["Tools"]' if needs_tools else ""
        with open(os.path.join(work, "Package.swift"), "w", encoding="utf-8") as handle:
            handle.write(
                "// swift-tools-version:6.1\n"
                "import PackageDescription\n\n"
                "let package = Package(\n"
                '    name: "ReadmeBlocks",\n'
                "    platforms: [.macOS(.v15)],\n"
                "    dependencies: [\n"
                f"        .package(path: {json.dumps(repo)}{traits}),\n"
                + "".join(f"        {requirement},\n" for requirement in requirements)
                + "    ],\n    targets: [\n" + "".join(targets) + "    ]\n)\n")
        resolved = os.path.join(repo, "Package.resolved")
        if os.path.exists(resolved):
            shutil.copy(resolved, os.path.join(work, "Package.resolved"))
        print(f"Building {len(blocks)} README blocks in {work} against {repo}")
        swift = os.environ.get("SWIFT", "swift")
        build = subprocess.run([swift, "build", "--package-path", work], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        output = build.stdout
        # Point the compiler's messages at README.md lines.
        for line, _ in blocks:
            folder = os.path.join(work, "Sources", f"ReadmeLine{line}", "main.swift")
            output = output.replace(folder, f"README.md(block at line {line})/main.swift")
        problems = [text for text in output.split("\n") if "error:" in text or "warning:" in text]
        readme_problems = [text for text in problems if "README.md(block" in text]
        if build.returncode != 0 or readme_problems:
            print(output)
            print("error: a README block does not build (or warns); see above", file=sys.stderr)
            return 1
        print("\n".join(output.strip().split("\n")[-2:]))
        print(f"test-readme: all {len(blocks)} swift blocks of README.md build ({len(skipped)} marked skip)")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
