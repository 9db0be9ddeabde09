#!/usr/bin/env python3
"""Writes Tests/Fixtures/conformance/pngsuite/refusals/x*.png: corrupt PNG files a decoder must refuse.

libpng's copy of PngSuite has none of PngSuite's own corrupt x*.png files, so these are made here the same
way, each from basn0g01.png with one defect. Run once; the files are committed.
"""

import struct
import zlib
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "Fixtures" / "conformance" / "pngsuite"


def chunks(data):
    offset = 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        yield data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        offset += 12 + length


def chunk(kind, payload):
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def build(parts, signature=b"\x89PNG\r\n\x1a\n"):
    return signature + b"".join(chunk(kind, payload) for kind, payload in parts)


def main():
    source = list(chunks((FIXTURES / "pngsuite" / "basn0g01.png").read_bytes()))
    ihdr = source[0][1]
    out = FIXTURES / "refusals"
    out.mkdir(exist_ok=True)
    files = {
        # The signature's first byte cleared (PngSuite's xs1n0g01).
        "xsig-basn0g01.png": build(source, signature=b"\x00PNG\r\n\x1a\n"),
        # Bit depth 3, which no colour type allows (PngSuite's xd3n2c08 has the same defect on RGB).
        "xdepth-basn0g01.png": build([(b"IHDR", ihdr[:8] + b"\x03" + ihdr[9:])] + source[1:]),
        # Colour type 1, which does not exist (PngSuite's xc1n0g08).
        "xcolor-basn0g01.png": build([(b"IHDR", ihdr[:9] + b"\x01" + ihdr[10:])] + source[1:]),
        # No IDAT chunk at all (PngSuite's xdtn0g01).
        "xnoidat-basn0g01.png": build([c for c in source if c[0] != b"IDAT"]),
        # Zero width (PngSuite's xhdn0g08 has a bad header the same way).
        "xzero-basn0g01.png": build([(b"IHDR", b"\x00\x00\x00\x00" + ihdr[4:])] + source[1:]),
    }
    for name, data in files.items():
        (out / name).write_bytes(data)
        print(f"wrote {out / name} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
