"""Compares img2dataset's output folder with webimage bulk's, made from the same URL list with the same
options, the way img2dataset's readers see them: each shard's Parquet file (pyarrow), the tar's members and
their json sidecars (webdataset's key grouping), and the _stats.json counts.

Usage: compare_outputs.py IMG2DATASET_DIR WEBIMAGE_DIR. Prints one JSON object:
  rows: {url: {field: [img2dataset's value, webimage's value]}} for every field of img2dataset's Parquet
        row whose value differs (absent in webimage's counts as a difference);
  missing_columns: img2dataset's Parquet columns webimage's file lacks;
  column_types: {column: [img2dataset's type, webimage's]} where they differ;
  members: the tar members of one output and not the other;
  sidecar_keys: json sidecar keys img2dataset writes and webimage does not;
  stats: {key: [img2dataset's, webimage's]} for the counts that differ, and keys webimage lacks.
"""
import glob, json, os, sys, tarfile

import pyarrow.parquet as pq

left, right = sys.argv[1], sys.argv[2]


def table(folder):
    tables = [pq.read_table(path) for path in sorted(glob.glob(os.path.join(folder, "*.parquet")))]
    return tables


def rows(folder):
    out = {}
    for t in table(folder):
        for row in t.to_pylist():
            out[row["url"]] = row
    return out


def schema(folder):
    t = table(folder)[0]
    return {field.name: str(field.type) for field in t.schema}


def members(folder):
    names = set()
    sidecar_keys = set()
    for path in sorted(glob.glob(os.path.join(folder, "*.tar"))):
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                names.add(member.name)
                if member.name.endswith(".json"):
                    sidecar_keys |= set(json.load(tar.extractfile(member)).keys())
    return names, sidecar_keys


def stats(folder):
    total = {}
    for path in glob.glob(os.path.join(folder, "*_stats.json")):
        for key, value in json.load(open(path)).items():
            if isinstance(value, int):
                total[key] = total.get(key, 0) + value
            else:
                total.setdefault(key, value)
    return total


a, b = rows(left), rows(right)
result = {"rows": {}, "missing_columns": [], "column_types": {}, "members": [], "sidecar_keys": [], "stats": {}}
for url, row in a.items():
    other = b.get(url, {})
    diffs = {k: [v, other.get(k)] for k, v in row.items() if k not in other or other[k] != v}
    if diffs:
        result["rows"][url] = diffs
sa, sb = schema(left), schema(right)
result["missing_columns"] = sorted(set(sa) - set(sb))
result["column_types"] = {k: [sa[k], sb[k]] for k in sa if k in sb and sa[k] != sb[k]}
ma, ka = members(left)
mb, kb = members(right)
result["members"] = sorted(ma ^ mb)
result["sidecar_keys"] = sorted(ka - kb)
ta, tb = stats(left), stats(right)
for key in ("count", "successes", "failed_to_download", "failed_to_resize"):
    if ta.get(key) != tb.get(key):
        result["stats"][key] = [ta.get(key), tb.get(key)]
for key in ta:
    if key not in tb:
        result["stats"][key] = [ta[key], None]
print(json.dumps(result, sort_keys=True, default=str))
