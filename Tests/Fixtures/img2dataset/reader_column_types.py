"""The kept columns of an input as img2dataset 1.47's own Reader gives them to its downloader.

usage: reader_column_types.py INPUT FORMAT COLUMN...

Runs img2dataset.reader.Reader over INPUT (FORMAT is its --input_format) with the columns as
--save_additional_columns, reads the shard files it writes, and prints one JSON object:
  types: {column: the Arrow type's name}
  rows:  [[[kind, text] per column] per row], kind one of null, bool, int, double, string
"""

import json
import os
import sys
import tempfile

import pyarrow as pa

# albumentations (imported by img2dataset) asks PyPI for a newer version unless told not to.
os.environ["NO_ALBUMENTATIONS_UPDATE"] = "1"
from img2dataset.reader import Reader  # noqa: E402


def cell(value):
    if value is None:
        return ["null", ""]
    if isinstance(value, bool):
        return ["bool", "true" if value else "false"]
    if isinstance(value, int):
        return ["int", str(value)]
    if isinstance(value, float):
        return ["double", repr(value)]
    return ["string", str(value)]


def main():
    path, input_format, columns = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        reader = Reader(
            path, input_format, "url", None, None, None, columns, 1_000_000, set(), tmp
        )
        types, rows = {}, []
        for _, shard_file in reader:
            with open(shard_file, "rb") as f:
                table = pa.ipc.open_file(f).read_all()
            for column in columns:
                types[column] = str(table.schema.field(column).type)
            values = table.select(columns).to_pydict()
            rows += [[cell(values[c][i]) for c in columns] for i in range(table.num_rows)]
    print(json.dumps({"types": types, "rows": rows}))


main()
