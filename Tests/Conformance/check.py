#!/usr/bin/env python3
"""Decoder conformance: decodes the files of public conformance suites with the built `webimage` and
compares each with the suite's reference (see suites.py for the suites, references and tolerances).

    check.py --webimage .build/debug/webimage                      # the in-repository subset
    check.py --webimage ... --suite pngsuite=/path/to/libpng ...   # fetched copies

Each file is decoded with `webimage convert FILE OUT.webp --lossless`: lossless WebP keeps every frame of
an animation and every 8-bit RGBA sample exactly (`webimage` decodes to 8-bit RGBA, so 8 bits is the most
any output could show). Colours are in sRGB, as `convert` writes them by default.

Prints each suite's pass count and every failure with its reason. Exits 1 when a file fails that is not in
the known-failures list, or when a file in that list now passes (so the list stays true); 0 otherwise.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

import readers
import suites

HERE = Path(__file__).resolve().parent
SUBSET = HERE.parent / "Fixtures" / "conformance"
KNOWN_FAILURES = HERE / "known-failures.txt"


@dataclass
class Result:
    case: suites.Case
    passed: bool
    detail: str  # the reason of a failure, or what a pass measured
    note: Optional[str] = None  # how the decode differs from an unjudged second image (suites.Case.also)


def load_known_failures(path):
    """key -> reason, from lines `KEY  REASON` (two or more spaces, or a tab, between); # starts a comment."""
    known = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        parts = line.replace("\t", "  ").split("  ", 1)
        if len(parts) != 2 or not parts[1].strip():
            sys.exit(f"{path}:{number}: expected 'KEY  REASON'")
        known[parts[0].strip()] = parts[1].strip()
    return known


def decode(webimage, case, workdir):
    """Runs `webimage convert`; returns ("decoded", frames), ("refused", message) or ("crashed", message)."""
    output = Path(workdir) / (case.key.replace("/", "_") + ".webp")
    command = [webimage, "convert", str(case.input), str(output), "--lossless", "--force"]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "crashed", "no answer within 600 s"
    message = (run.stderr.strip().splitlines() or ["(no message)"])[-1].replace(str(case.input), "FILE")
    # A signal (negative code), or a code past 125 as shells report signals, is a crash; ArgumentParser
    # and the command's own errors exit with small codes and say why.
    if run.returncode < 0 or run.returncode > 125:
        return "crashed", f"exit status {run.returncode}: {message}"
    if run.returncode != 0:
        return "refused", message
    try:
        frames, _ = readers.pillow_frames(output.read_bytes())
    finally:
        output.unlink(missing_ok=True)
    # The decoders turn the pixels upright as a viewer does (EXIF and XMP orientation, AVIF's irot and imir,
    # JPEG XL's header), so they compare with upright references as they come.
    return "decoded", frames


def compare(decoded, reference, tolerance):
    """None when `decoded` matches `reference` within `tolerance`, else why not; also the worst errors."""
    if decoded.shape != reference.shape:
        return f"size {decoded.shape[1]}x{decoded.shape[0]}, reference {reference.shape[1]}x{reference.shape[0]}", 0, 0
    alpha = reference[..., 3:4]
    error = np.abs(decoded - reference)
    error[..., :3] *= alpha  # colour counts as much as it is visible
    error *= 255
    peak = float(error.max())
    rms = float(max(np.sqrt(np.mean(error[..., c] ** 2)) for c in range(4)))
    if peak > tolerance.peak + 1e-6 or rms > tolerance.rms + 1e-6:
        worst = np.unravel_index(int(np.argmax(error)), error.shape)
        where = f"at ({worst[1]}, {worst[0]}) channel {'RGBA'[worst[2]]}"
        return (
            f"peak error {peak:.1f} (limit {tolerance.peak:g}) {where}, rms {rms:.2f} (limit {tolerance.rms:g})",
            peak,
            rms,
        )
    return None, peak, rms


def check(webimage, case, workdir):
    """Runs one case."""
    outcome, value = decode(webimage, case, workdir)
    if outcome == "crashed":
        return Result(case, False, "crashed: " + value)
    if case.expect == "refuse":
        return Result(case, outcome == "refused", "refused: " + value if outcome == "refused" else "decoded a corrupt file")
    if case.expect == "no-crash":
        return Result(case, True, "refused: " + value if outcome == "refused" else "decoded")
    if outcome == "refused":
        return Result(case, False, "refused: " + value)
    if case.expect == "decode":
        return Result(case, True, f"decoded, {len(value)} frame(s) (no reference decoder)")
    try:
        reference = case.reference()
    except Exception as error:  # a reference that cannot be read is the checker's problem, not the decoder's
        return Result(case, False, f"reference unreadable: {type(error).__name__}: {error}")
    if len(value) != len(reference):
        return Result(case, False, f"{len(value)} frame(s), reference has {len(reference)}")
    worst_peak = worst_rms = 0.0
    for index, (frame, expected) in enumerate(zip(value, reference)):
        tolerance = case.frame_tolerances[index] if index < len(case.frame_tolerances) else case.tolerance
        failure, peak, rms = compare(frame, expected, tolerance)
        if failure:
            return Result(case, False, (f"frame {index}: " if len(reference) > 1 else "") + failure)
        worst_peak, worst_rms = max(worst_peak, peak), max(worst_rms, rms)
    return Result(case, True, f"peak {worst_peak:.1f}, rms {worst_rms:.2f}", difference(case, value))


def difference(case, decoded):
    """How the decode differs from the case's unjudged second image (suites.Case.also), or None."""
    if case.also is None:
        return None
    name, load = case.also
    try:
        frames = load()
    except Exception as error:
        return f"{name} unreadable: {type(error).__name__}: {error}"
    if len(frames) != len(decoded):
        return f"{name} has {len(frames)} frame(s)"
    measured = [compare(frame, other, case.tolerance) for frame, other in zip(decoded, frames)]
    worst = max(range(len(measured)), key=lambda i: (measured[i][1], measured[i][2]))
    beyond = [i for i, (failure, _, _) in enumerate(measured) if failure]
    return (
        f"{name} (not judged) differs by peak {measured[worst][1]:.1f}, rms {measured[worst][2]:.2f} (frame {worst}); "
        + (f"{len(beyond)} frame(s) beyond the limits, from frame {beyond[0]}" if beyond else "within the limits")
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webimage", required=True, help="the built webimage executable")
    parser.add_argument(
        "--suite",
        action="append",
        metavar="NAME=PATH",
        help=f"a fetched suite ({', '.join(suites.SUITES)}); repeat for several. Default: the in-repository "
        "subset (Tests/Fixtures/conformance) of all four",
    )
    parser.add_argument("--known-failures", type=Path, default=KNOWN_FAILURES, help="the known-failures list")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="decodes at once")
    parser.add_argument("--verbose", action="store_true", help="print every case, not only failures")
    args = parser.parse_args()

    if args.suite:
        chosen = []
        for item in args.suite:
            name, _, path = item.partition("=")
            if name not in suites.SUITES or not Path(path).is_dir():
                parser.error(f"--suite {item}: expected one of {', '.join(suites.SUITES)} = an existing folder")
            chosen.append((name, Path(path)))
    else:
        chosen = [(name, SUBSET / name) for name in suites.SUITES]
    known = load_known_failures(args.known_failures)
    cases = [case for name, path in chosen for case in suites.SUITES[name](path)]
    runnable = [case for case in cases if case.skip is None]

    with tempfile.TemporaryDirectory(prefix="webimage-conformance-") as workdir:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda case: check(args.webimage, case, workdir), runnable))

    unexpected, stale = [], []
    for name, _ in chosen:
        mine = [r for r in results if r.case.suite == name]
        skipped = [c for c in cases if c.suite == name and c.skip is not None]
        passes = sum(r.passed for r in mine)
        listed = sum(1 for r in mine if not r.passed and r.case.key in known)
        print(f"{name}: {passes}/{len(mine)} pass ({listed} known failures, {len(skipped)} not run)")
        for result in mine:
            key = result.case.key
            if not result.passed and key in known:
                print(f"  known failure  {key}: {result.detail}\n                 ({known[key]})")
            elif not result.passed:
                unexpected.append(result)
                print(f"  FAIL           {key}: {result.detail}")
            elif key in known:
                stale.append(result)
                print(f"  NOW PASSES     {key}: {result.detail} (remove it from {args.known_failures.name})")
            elif args.verbose:
                print(f"  pass           {key}: {result.detail}")
            if result.note:
                print(f"  note           {key}: {result.note}")
        for case in skipped:
            if args.verbose:
                print(f"  not run        {case.key}: {case.skip}")
    total = sum(r.passed for r in results)
    print(
        f"conformance: {total} of {len(results)} files as the references, "
        f"{len(unexpected)} unexpected failure(s), {len(stale)} known failure(s) now passing"
    )
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main())
