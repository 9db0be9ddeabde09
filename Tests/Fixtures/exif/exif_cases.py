"""Writes generated images with EXIF into a folder, and what img2dataset 1.47 puts in its `exif` column for
each: `expected.json`, {file name: text or null}, computed as img2dataset computes it, with its reader
(exifread-nocycle 3.0.1, `details=False`). EXIFSummaryTests compares WebImage's text with it.

Usage: exif_cases.py FOLDER COUNT SEED

The images are TIFF structures in a TIFF file, a JPEG's APP1 segment (after JFIF, ICC or other segments) or
an extended WebP's EXIF chunk; their IFDs hold random entries of every field type, known tags (with and
without label tables), unknown ones, links to the EXIF, GPS and Interoperability IFDs, IFD chains and
loops, text that is and is not UTF-8, and offsets past the end; a share of the files are then cut short
or have bytes changed.
"""

import io
import json
import random
import struct
import sys

import exifread
from exifread.tags.exif import EXIF_TAGS, GPS_TAGS, INTEROP_TAGS

TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4]


def img2dataset_exif(data):
    """The `exif` value img2dataset's downloader computes for a successful image."""
    try:
        return json.dumps(
            {k: str(v).strip() for k, v in exifread.process_file(io.BytesIO(data), details=False).items() if v is not None}
        )
    except Exception:  # pylint: disable=broad-except  (img2dataset writes None for any error)
        return None


def text_bytes(rng):
    kind = rng.randrange(8)
    if kind == 0:
        return b""
    if kind == 1:
        return "Caf\u00e9 \u2014 \u6771\u4eac \U0001F600".encode()
    if kind == 2:
        return bytes([0xC3, 0x28, 0x41, 0xFF])  # not UTF-8
    if kind == 3:
        return b"  padded \t\n"
    if kind == 4:
        return b"quote ' and \" and \\ back\x01\x7f"
    if kind == 5:
        return b"with\x00after the NUL"
    if kind == 6:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
    return rng.choice([b"Canon", b"NIKON CORPORATION", b"2021:07:04 12:30:45", b"A", b"\xa0nbsp\x85"])


def value_bytes(rng, field_type, count, endian):
    size = TYPE_SIZES[field_type] if field_type < len(TYPE_SIZES) else 1
    if field_type == 2:
        return b""
    out = bytearray()
    for _ in range(count):
        if field_type in (5, 10):
            fmt = "i" if field_type == 10 else "I"
            low, high = (-(2**31), 2**31 - 1) if field_type == 10 else (0, 2**32 - 1)
            num = rng.choice([0, 1, 72, 300, rng.randint(low, high)])
            den = rng.choice([0, 1, 2, 100, -3 if field_type == 10 else 3, rng.randint(low, high)])
            out += struct.pack(endian + fmt + fmt, num, den)
        elif field_type == 11:
            out += struct.pack(endian + "f", rng.choice([0.1, -0.0, 1.5, 3.4e38, 1e-7, float("inf"), float("nan"), rng.uniform(-1e6, 1e6)]))
        elif field_type == 12:
            out += struct.pack(endian + "d", rng.choice([0.1, 1e16, 1234567890123456.0, 1e-5, 1e-4, 2.5, -1e300, 5e-324, rng.uniform(-1e20, 1e20)]))
        elif size == 2:
            out += struct.pack(endian + ("h" if field_type == 8 else "H"), rng.choice([0, 1, 3, 6, 8, 65535 if field_type != 8 else -1, rng.randrange(32768)]))
        elif size == 4:
            out += struct.pack(endian + ("i" if field_type == 9 else "I"), rng.choice([0, 1, 2, 5, 65537, rng.randrange(2**31)]))
        else:
            out += bytes([rng.randrange(256)])
    return bytes(out)


class TIFF:
    """A TIFF structure laid out from its IFDs: entries first, then every out-of-line value."""

    def __init__(self, rng, endian):
        self.rng = rng
        self.endian = endian
        self.ifds = []  # lists of (tag, type, count, payload or ("ifd", index))

    def random_entry(self, table, links):
        rng = self.rng
        if links and rng.random() < 0.15:
            tag, target = rng.choice(links)
            field_type = rng.choice([4, 4, 4, 3, 13, 2, 5, 7])
            return (tag, field_type, 1 if field_type != 2 else 2, ("ifd", target))
        if rng.random() < 0.7:
            tag = rng.choice(list(table))
        else:
            tag = rng.choice([0x0000, 0x1234, 0xABCD, 0xFFFF, 0x02BC, 0x927C, 0x9286, 0x0112, 0x9000])
        field_type = rng.choice(list(range(1, 14)) + [0, 14, 2, 2, 3, 5])
        if field_type == 2:
            text = text_bytes(rng)
            terminated = text + (b"\x00" if rng.random() < 0.8 else b"")
            count = len(terminated) if rng.random() < 0.9 else rng.choice([0, 1, len(terminated) + 5])
            return (tag, 2, count, terminated)
        count = rng.choice([0, 1, 1, 1, 2, 3, 4, 8, 21, 51, 60, 999, 1000, 1500])
        return (tag, field_type, count, value_bytes(rng, field_type, min(count, 100), self.endian))

    def build(self, next_links):
        """The TIFF bytes; next_links[i] is the IFD that IFD i's next pointer names (None for 0)."""
        e = self.endian
        header = (b"II" if e == "<" else b"MM") + struct.pack(e + "HI", 42, 8)
        ifd_offsets, position = [], 8
        for entries in self.ifds:
            ifd_offsets.append(position)
            position += 2 + 12 * len(entries) + 4
        data_start = position
        body, extra = bytearray(), bytearray()
        for index, entries in enumerate(self.ifds):
            body += struct.pack(e + "H", len(entries))
            for tag, field_type, count, payload in entries:
                if isinstance(payload, tuple):
                    value = struct.pack(e + "I", ifd_offsets[payload[1]])
                    if field_type == 3:
                        value = struct.pack(e + "H", ifd_offsets[payload[1]] & 0xFFFF) + b"\x00\x00"
                    elif field_type == 2:
                        value = b"1\x00\x00\x00"
                    elif field_type == 5:
                        value = struct.pack(e + "I", data_start + len(extra))
                        extra += struct.pack(e + "II", ifd_offsets[payload[1]], 1)
                elif count * TYPE_SIZES[field_type % 14] <= 4 and len(payload) <= 4:
                    value = payload.ljust(4, b"\x00")
                else:
                    pointer = data_start + len(extra)
                    if self.rng.random() < 0.05:
                        pointer = self.rng.choice([0xFFFFFF0, 2**32 - 1, 3])
                    value = struct.pack(e + "I", pointer)
                    extra += payload
                    if len(extra) % 2:
                        extra += b"\x00"
                body += struct.pack(e + "HHI", tag, field_type, count) + value
            target = next_links[index]
            body += struct.pack(e + "I", 0 if target is None else ifd_offsets[target])
        return header + bytes(body) + bytes(extra)


def tiff_bytes(rng):
    endian = rng.choice("<>")
    tiff = TIFF(rng, endian)
    # IFD 0 (Image), 1 (Thumbnail), maybe 2, then EXIF, GPS and Interoperability IFDs.
    chain = rng.choice([1, 2, 2, 3])
    names = ["chain"] * chain + ["exif", "gps", "interop"]
    links = []
    for index, name in enumerate(names):
        if name == "exif":
            links.append((0x8769, index))
        elif name == "gps":
            links.append((0x8825, index))
        elif name == "interop":
            links.append((0xA005, index))
    for name in names:
        table = {"gps": GPS_TAGS, "interop": INTEROP_TAGS}.get(name, EXIF_TAGS)
        entries = [tiff.random_entry(table, links if name in ("chain", "exif") else []) for _ in range(rng.randrange(0, 14))]
        if name == "chain" and not tiff.ifds and rng.random() < 0.8:
            entries.append((0x8769, 4, 1, ("ifd", chain)))
        tiff.ifds.append(entries)
    next_links = [index + 1 if index + 1 < chain else None for index in range(len(names))]
    if rng.random() < 0.1:
        next_links[chain - 1] = 0  # a loop back to the first IFD
    return tiff.build(next_links)


def jpeg(rng, tiff):
    out = bytearray(b"\xff\xd8")
    if rng.random() < 0.7:
        out += b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    if rng.random() < 0.3:
        icc = b"ICC_PROFILE\x00" + bytes(rng.randrange(256) for _ in range(rng.randrange(10, 300)))
        out += b"\xff\xe2" + struct.pack(">H", len(icc) + 2) + icc
    if rng.random() < 0.2:
        out += b"\xff\xfe" + struct.pack(">H", 9) + b"comment"
    if rng.random() < 0.1:
        xmp = b"XMP packet\x00<x:xmpmeta/>"  # an APP1 segment that is not EXIF
        out += b"\xff\xe1" + struct.pack(">H", len(xmp) + 2) + xmp
    if rng.random() < 0.95:
        payload = b"Exif\x00\x00" + tiff
        out += b"\xff\xe1" + struct.pack(">H", min(len(payload) + 2, 65535)) + payload
    out += b"\xff\xdb\x00\x43\x00" + bytes(range(64))
    out += b"\xff\xc0\x00\x0b\x08\x00\x10\x00\x10\x01\x01\x11\x00\xff\xd9"
    return bytes(out)


def webp(rng, tiff):
    chunks = bytearray(b"VP8X" + struct.pack("<I", 10) + bytes([0x08 if rng.random() < 0.9 else 0x00, 0, 0, 0]) + b"\x0f\x00\x00\x0f\x00\x00")
    if rng.random() < 0.4:
        icc = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        chunks += b"ICCP" + struct.pack("<I", len(icc)) + icc + (b"\x00" if len(icc) % 2 else b"")
    chunks += b"VP8L" + struct.pack("<I", 6) + b"\x2f\x00\x00\x00\x00\x00"
    chunks += b"EXIF" + struct.pack("<I", len(tiff)) + tiff + (b"\x00" if len(tiff) % 2 else b"")
    return b"RIFF" + struct.pack("<I", len(chunks) + 4) + b"WEBP" + bytes(chunks)


def case(rng):
    tiff = tiff_bytes(rng)
    kind = rng.choice(["tiff", "jpeg", "jpeg", "jpeg", "webp", "png"])
    data = {"tiff": lambda: tiff, "jpeg": lambda: jpeg(rng, tiff), "webp": lambda: webp(rng, tiff)}.get(
        kind, lambda: b"\x89PNG\r\n\x1a\n" + tiff
    )()
    damage = rng.random()
    if damage < 0.1:
        data = data[: rng.randrange(len(data))]
    elif damage < 0.2:
        changed = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            changed[rng.randrange(len(changed))] = rng.randrange(256)
        data = bytes(changed)
    return kind, data


def main():
    folder, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    expected = {}
    for index in range(count):
        kind, data = case(rng)
        name = "%04d.%s" % (index, kind)
        with open("%s/%s" % (folder, name), "wb") as file:
            file.write(data)
        expected[name] = img2dataset_exif(data)
    with open("%s/expected.json" % folder, "w", encoding="utf-8") as file:
        json.dump(expected, file)


main()
