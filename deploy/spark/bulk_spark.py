"""`webimage bulk` on Spark: the shards are spread over Spark tasks, each task runs webimage through
`rdd.pipe` on exactly its shards (`--shards`), and the driver prints every shard's stats and the total.

    spark-submit deploy/spark/bulk_spark.py urls.csv.gz /shared/dataset --tasks 64 -- \
        --url-col url --caption-col caption --resize-mode fill --size 256 --encode jpeg

Every executor needs `webimage` (the image from deploy/Dockerfile, or the binary on its PATH; --webimage
names another path) and the input and output paths: a shared file system, or `s3://bucket/key` input and
`s3://bucket/prefix` output with the AWS_* variables set where the driver runs: it hands them to every
task's webimage (rdd.pipe passes no other variables; see deploy/README.md). The driver first runs
`webimage bulk --plan-only` to write plan.json and learn the number of shards.

A task whose webimage exits non-zero fails, and Spark retries it (spark.task.maxFailures): the retry
skips the shards that task already finished. Spark cannot tell exit status 2 (bad input or options,
which no retry fixes) from 1, so the driver's --plan-only run checks the input and options first.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys

from pyspark.sql import SparkSession


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--tasks", type=int, default=16, help="Spark tasks (partitions of the shard list)")
    parser.add_argument("--webimage", default="webimage", help="the webimage executable on the executors")
    parser.epilog = "Options after -- go to webimage bulk."
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, options = parser.parse_args(argv[:split]), argv[split + 1:]

    # The plan, on the driver: a bad input or option ends the job here, before any task starts.
    planned = subprocess.run(
        [args.webimage, "bulk", args.input, "--output", args.output, "--plan-only", *options],
        capture_output=True, text=True)
    if planned.returncode != 0:
        sys.stderr.write(planned.stderr)
        return planned.returncode
    shards = json.loads(planned.stdout)["shards"]

    spark = SparkSession.builder.appName("webimage-bulk").getOrCreate()
    # rdd.pipe writes a partition's elements (shard numbers) to the command's stdin, one per line; the
    # command joins them into --shards and prints one JSON line per event.
    command = " ".join(
        [shlex.quote(args.webimage), "bulk", shlex.quote(args.input), "--output", shlex.quote(args.output)]
        + [shlex.quote(option) for option in options]
        + ['--shards "$(paste -sd, -)"', "--json"])
    # rdd.pipe starts the command with only the variables it is handed: the driver's AWS_* (an s3://
    # input or output) and TMPDIR go with it.
    env = {name: value for name, value in os.environ.items() if name.startswith("AWS_") or name == "TMPDIR"}
    # checkCode: a task whose webimage exits non-zero fails (and Spark retries it).
    lines = (
        spark.sparkContext.parallelize(range(shards), min(args.tasks, shards))
        .pipe(shlex.join(["/bin/sh", "-c", command]), env=env, checkCode=True)
        .collect())
    events = [json.loads(line) for line in lines if line.startswith("{")]
    done = [event for event in events if event.get("event") == "shard"]
    for event in sorted(done, key=lambda event: event["shard"]):
        print(json.dumps(event, sort_keys=True))
    skipped = sum(event.get("skipped", 0) for event in events if event.get("event") == "summary")
    print(json.dumps({"event": "job", "shards": shards, "written": len(done), "skipped": skipped}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
