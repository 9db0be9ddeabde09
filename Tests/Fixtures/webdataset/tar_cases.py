"""Writes the tar archives WebDatasetInputTests reads, and what Python's tarfile and webdataset read in them.

Usage: tar_cases.py FOLDER. Writes FOLDER/{ustar,gnu,pax}.tar (the same members in each of tarfile's
formats: long names, a long directory, non-ASCII, a directory, a symlink, an empty file, a 1.5 MB file),
FOLDER/grouping.tar (members webdataset groups into samples), and FOLDER/expected.json: for each format
the regular files as tarfile lists them (name, size, sha256), and the samples webdataset's own iterator
makes of grouping.tar (key, suffixes in order).
"""
import hashlib, io, json, os, random, sys, tarfile

import webdataset as wds

folder = sys.argv[1]
rng = random.Random(2026)


def blob(n):
    return bytes(rng.getrandbits(8) for _ in range(n))


members = [
    ("a.jpg", blob(10)),
    ("dir/" + "d" * 150 + "/b.png", blob(700)),          # ustar prefix + name
    ("n" * 120 + ".txt", b"long name"),                    # no '/' to split at: GNU longname / pax path
    ("caf\u00e9/\u00fcml\u00e4ut.json", b"{}"),          # non-ASCII
    ("empty.txt", b""),
    ("big.bin", blob(1_500_000)),
    ("last.jpg", blob(513)),
]
expected = {}
for name, fmt in [("ustar", tarfile.USTAR_FORMAT), ("gnu", tarfile.GNU_FORMAT), ("pax", tarfile.PAX_FORMAT)]:
    path = os.path.join(folder, name + ".tar")
    with tarfile.open(path, "w", format=fmt) as tar:
        for member, data in members:
            if fmt == tarfile.USTAR_FORMAT and (len(member.rsplit("/", 1)[-1].encode()) > 100):
                continue  # ustar cannot hold it
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            if member == "a.jpg":
                d = tarfile.TarInfo("somedir")
                d.type = tarfile.DIRTYPE
                tar.addfile(d)
                s = tarfile.TarInfo("link.jpg")
                s.type = tarfile.SYMTYPE
                s.linkname = "a.jpg"
                tar.addfile(s)
    with tarfile.open(path) as tar:
        expected[name] = [
            [m.name, m.size, hashlib.sha256(tar.extractfile(m).read()).hexdigest()] for m in tar.getmembers() if m.isfile()
        ]

# Grouping: consecutive members with one key are a sample; directories are part of the key; the
# extension is everything after the first dot of the last component; names without one are skipped.
grouping = [
    "s1.jpg", "s1.txt", "s1.json",
    "sub/s2.seg.png", "sub/s2.png",
    "s3.JPG", "s3.txt",
    "noextension",
    "s4.webp",
    "s1.txt",  # the same key again, not consecutive: a new sample
    "a.b/s5.jpg", "a.b/s5.cls",
]
path = os.path.join(folder, "grouping.tar")
with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
    for member in grouping:
        data = member.encode()
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
samples = []
for sample in wds.WebDataset(path, shardshuffle=False, empty_check=False):
    samples.append([sample["__key__"], [k for k in sample if not k.startswith("__")]])
expected["grouping"] = samples
with open(os.path.join(folder, "expected.json"), "w") as f:
    json.dump(expected, f)
