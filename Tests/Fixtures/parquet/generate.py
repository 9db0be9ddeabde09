"""Writes the Parquet files the WebImageDataset tests read, and what pyarrow reads back from each.

Usage: generate.py OUTPUT_FOLDER
       generate.py --dump FILE.parquet   (writes FILE.jsonl with what pyarrow reads from a file)

pyarrow writes every codec x dictionary on/off x data page v1/v2 over all supported types with nulls,
lists and lists of lists, several row groups and pages; a 100,000-row file has LAION's columns;
fastparquet writes a few more. Each NAME.parquet gets NAME.jsonl: a header line, then one JSON array per
row with every cell tagged so nothing is lost in JSON: null, "b:0"/"b:1", "i:<int>", "d:<IEEE-754 bits of
the value as a double>" (or "d:nan"), "s:<text>", "x:<hex>", or an array for a list. Files the reader
must refuse are listed in manifest.json with the column and feature the error has to name.
"""

import json
import math
import os
import random
import struct
import sys

import fastparquet
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def tag(value):
    if value is None:
        return None
    if isinstance(value, bool):
        return "b:1" if value else "b:0"
    if isinstance(value, int):
        return "i:%d" % value
    if isinstance(value, float):
        if math.isnan(value):
            return "d:nan"
        return "d:%d" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if isinstance(value, str):
        return "s:" + value
    if isinstance(value, bytes):
        return "x:" + value.hex()
    if isinstance(value, list):
        return [tag(item) for item in value]
    raise TypeError("cannot tag %r" % (value,))


def dump(path):
    """NAME.jsonl with what pyarrow reads from NAME.parquet, row group by row group."""
    parquet = pq.ParquetFile(path)
    names = parquet.schema_arrow.names
    with open(path[: -len(".parquet")] + ".jsonl", "w") as out:
        header = {
            "columns": names,
            "types": [str(field.type) for field in parquet.schema_arrow],
            "row_groups": parquet.num_row_groups,
            "rows": parquet.metadata.num_rows,
        }
        out.write(json.dumps(header) + "\n")
        for group in range(parquet.num_row_groups):
            table = parquet.read_row_group(group)
            columns = [table.column(name).to_pylist() for name in names]
            for row in zip(*columns):
                out.write(json.dumps([tag(cell) for cell in row], ensure_ascii=True) + "\n")


WORDS = ["cat", "dog", "a photo of a cat", "", "猫の写真", "emoji 🐕‍🦺", 'quote " and \\', "new\nline", "nul\0byte"]


def all_types_table(rows, seed):
    rng = random.Random(seed)

    def maybe(value, p=0.15):
        return None if rng.random() < p else value

    def word(i):
        return rng.choice(WORDS) if rng.random() < 0.7 else "unique-%d-%d" % (i, rng.getrandbits(32))

    def double():
        return rng.choice([0.0, -0.0, 1.5, math.inf, -math.inf, math.nan, 5e-324, 1e308, rng.uniform(-1e6, 1e6)])

    columns = {
        "s": [maybe(word(i)) for i in range(rows)],
        "b": [maybe(bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 12)))) for _ in range(rows)],
        "fixed": [maybe(bytes(rng.getrandbits(8) for _ in range(4))) for _ in range(rows)],
        "i32": [maybe(rng.choice([0, 1, -1, 2**31 - 1, -(2**31), rng.randrange(-1000, 1000)])) for _ in range(rows)],
        "i64": [maybe(rng.choice([0, 2**63 - 1, -(2**63), rng.randrange(-(2**62), 2**62)])) for _ in range(rows)],
        "f32": [maybe(double()) for _ in range(rows)],
        "f64": [maybe(double()) for _ in range(rows)],
        "flag": [maybe(rng.random() < 0.5) for _ in range(rows)],
        "req": [i * 7 - 5000 for i in range(rows)],
        "tags": [maybe(rng.choice([[], [maybe(word(i), 0.2) for _ in range(rng.randrange(1, 5))]])) for i in range(rows)],
        "bbox": [
            maybe(
                rng.choice(
                    [
                        [],
                        [None],
                        [maybe([maybe(double(), 0.1) for _ in range(4)], 0.2) for _ in range(rng.randrange(1, 4))],
                        [[]],
                    ]
                )
            )
            for _ in range(rows)
        ],
        "ints": [[rng.randrange(-5, 5) for _ in range(rng.randrange(0, 4))] for _ in range(rows)],
        "nothing": [None] * rows,
    }
    schema = pa.schema(
        [
            ("s", pa.string()),
            ("b", pa.binary()),
            ("fixed", pa.binary(4)),
            ("i32", pa.int32()),
            ("i64", pa.int64()),
            ("f32", pa.float32()),
            ("f64", pa.float64()),
            ("flag", pa.bool_()),
            pa.field("req", pa.int64(), nullable=False),
            ("tags", pa.list_(pa.string())),
            ("bbox", pa.list_(pa.list_(pa.float64()))),
            pa.field("ints", pa.list_(pa.field("element", pa.int32(), nullable=False)), nullable=False),
            ("nothing", pa.float64()),
        ]
    )
    return pa.table(columns, schema=schema)


def laion_table(rows, seed):
    rng = random.Random(seed)

    def maybe(value, p):
        return None if rng.random() < p else value

    columns = {
        "url": ["https://images.example.com/%d/%08x.jpg" % (i % 97, rng.getrandbits(32)) for i in range(rows)],
        "caption": [maybe(rng.choice(WORDS) + " " + str(rng.getrandbits(20)), 0.05) for _ in range(rows)],
        "width": [maybe(rng.randrange(16, 4096), 0.1) for _ in range(rows)],
        "height": [maybe(rng.randrange(16, 4096), 0.1) for _ in range(rows)],
        "similarity": [rng.uniform(0.28, 0.5) for _ in range(rows)],
        "hash": [rng.randrange(-(2**63), 2**63) for _ in range(rows)],
        "punsafe": [maybe(rng.random(), 0.02) for _ in range(rows)],
        "pwatermark": [maybe(rng.random(), 0.02) for _ in range(rows)],
        "NSFW": [maybe(rng.choice(["UNLIKELY", "UNSURE", "NSFW"]), 0.01) for _ in range(rows)],
    }
    schema = pa.schema(
        [
            ("url", pa.string()),
            ("caption", pa.string()),
            ("width", pa.int64()),
            ("height", pa.int32()),
            ("similarity", pa.float64()),
            ("hash", pa.int64()),
            ("punsafe", pa.float32()),
            ("pwatermark", pa.float32()),
            ("NSFW", pa.string()),
        ]
    )
    return pa.table(columns, schema=schema)


def fastparquet_frame(rows, seed):
    rng = random.Random(seed)
    return pd.DataFrame(
        {
            "s": [None if rng.random() < 0.2 else rng.choice(WORDS[:6]) + str(i % 50) for i in range(rows)],
            "n": pd.array([None if rng.random() < 0.2 else rng.randrange(-(2**40), 2**40) for _ in range(rows)], "Int64"),
            "i32": pd.array([rng.randrange(-(2**31), 2**31) for _ in range(rows)], "int32"),
            "f": [math.nan if rng.random() < 0.2 else rng.uniform(-1, 1) for _ in range(rows)],
            "flag": [rng.random() < 0.5 for _ in range(rows)],
            "cat": pd.Categorical([rng.choice(["red", "green", "blue"]) for _ in range(rows)]),
            "raw": [None if rng.random() < 0.2 else bytes([i % 256, 7]) for i in range(rows)],
        }
    )


def main():
    if sys.argv[1] == "--dump":
        dump(sys.argv[2])
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    manifest = {"files": [], "errors": []}

    def written(name):
        path = os.path.join(out, name + ".parquet")
        dump(path)
        manifest["files"].append(name)

    table = all_types_table(2500, seed=1)
    for codec in ["NONE", "SNAPPY", "GZIP", "ZSTD"]:
        for dictionary in [True, False]:
            for version in ["1.0", "2.0"]:
                name = "types-%s-%s-v%s" % (codec.lower(), "dict" if dictionary else "plain", version[0])
                pq.write_table(
                    table,
                    os.path.join(out, name + ".parquet"),
                    compression=codec,
                    use_dictionary=dictionary,
                    data_page_version=version,
                    row_group_size=1000,
                    data_page_size=2048,
                )
                written(name)

    # Format version 1.0 marks dictionary pages and indices PLAIN_DICTIONARY (later versions: RLE_DICTIONARY).
    pq.write_table(table, os.path.join(out, "types-snappy-dict-format1.parquet"), version="1.0", row_group_size=1000)
    written("types-snappy-dict-format1")

    pq.write_table(laion_table(100_000, seed=2), os.path.join(out, "laion.parquet"), row_group_size=30_000)
    written("laion")

    frame = fastparquet_frame(3000, seed=3)
    for codec in [None, "SNAPPY", "GZIP", "ZSTD"]:
        name = "fastparquet-%s" % (codec or "none").lower()
        fastparquet.write(
            os.path.join(out, name + ".parquet"),
            frame,
            compression=codec,
            row_group_offsets=1000,
            object_encoding={"s": "utf8", "raw": "bytes"},
        )
        written(name)

    # What the reader must refuse, naming the column and the feature.
    small = laion_table(500, seed=4)
    refusals = [
        ("delta", dict(use_dictionary=False, column_encoding={"width": "DELTA_BINARY_PACKED"}), "width",
         "DELTA_BINARY_PACKED"),
        ("delta-length", dict(use_dictionary=False, column_encoding={"caption": "DELTA_LENGTH_BYTE_ARRAY"}),
         "caption", "DELTA_LENGTH_BYTE_ARRAY"),
        ("byte-stream-split", dict(use_dictionary=False, column_encoding={"similarity": "BYTE_STREAM_SPLIT"}),
         "similarity", "BYTE_STREAM_SPLIT"),
        ("brotli", dict(compression="BROTLI"), "url", "BROTLI"),
        ("lz4", dict(compression="LZ4"), "url", "LZ4"),
    ]
    for name, options, column, feature in refusals:
        pq.write_table(small, os.path.join(out, name + ".parquet"), **options)
        manifest["errors"].append({"name": name, "column": column, "feature": feature})

    nested = pa.table(
        {
            "id": pa.array([1, 2, None], pa.int64()),
            "point": pa.array([{"x": 1.0, "y": 2.0}, None, {"x": 3.0, "y": None}]),
            "attributes": pa.array([[("k", "v")], None, []], pa.map_(pa.string(), pa.string())),
            "taken": pa.array([0, 1_000_000_000, None], pa.timestamp("ns")),
        }
    )
    pq.write_table(nested, os.path.join(out, "nested.parquet"), use_deprecated_int96_timestamps=True)
    manifest["errors"].append({"name": "nested", "column": "point", "feature": "struct"})
    manifest["errors"].append({"name": "nested", "column": "attributes", "feature": "map"})
    manifest["errors"].append({"name": "nested", "column": "taken", "feature": "INT96"})

    with open(os.path.join(out, "manifest.json"), "w") as out_file:
        json.dump(manifest, out_file, indent=1)


if __name__ == "__main__":
    main()
