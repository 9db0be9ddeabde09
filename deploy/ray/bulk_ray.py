"""`webimage bulk` on Ray: one Ray task per group of shards, each running webimage on exactly its shards
(`--shards`); the driver prints every shard's stats and the total.

    python deploy/ray/bulk_ray.py urls.csv.gz /shared/dataset --tasks 64 -- \
        --url-col url --caption-col caption --resize-mode fill --size 256 --encode jpeg

Run it where `ray.init()` reaches your cluster (RAY_ADDRESS, or `ray job submit`); without one, Ray
starts a local cluster. Every node needs `webimage` (--webimage names another path) and the input and
output paths on a shared file system, or `s3://bucket/key` input and `s3://bucket/prefix` output with the
AWS_* variables set where the driver runs (it hands them to the workers through runtime_env;
deploy/README.md).
The driver first runs `webimage bulk --plan-only` to write plan.json and learn the number of shards.

webimage's exit status decides the retry: 1 (a transient failure of the whole process) raises
TransientFailure, which Ray retries (max_retries); a retry skips the shards already finished. 2 (bad
input or options) raises PermanentFailure, which Ray does not retry.
"""

import argparse
import json
import os
import subprocess
import sys

import ray


class TransientFailure(Exception):
    pass


class PermanentFailure(Exception):
    pass


@ray.remote(num_cpus=1, max_retries=3, retry_exceptions=[TransientFailure])
def run_shards(webimage, input_path, output, shards, options):
    result = subprocess.run(
        [webimage, "bulk", input_path, "--output", output, "--shards", ",".join(map(str, shards)), "--json",
         *options],
        capture_output=True, text=True)
    if result.returncode == 1:
        raise TransientFailure(result.stderr[-2000:])
    if result.returncode != 0:
        raise PermanentFailure(f"exit status {result.returncode}: {result.stderr[-2000:]}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--tasks", type=int, default=16, help="Ray tasks (groups of shards)")
    parser.add_argument("--webimage", default="webimage", help="the webimage executable on the nodes")
    parser.epilog = "Options after -- go to webimage bulk."
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, options = parser.parse_args(argv[:split]), argv[split + 1:]

    planned = subprocess.run(
        [args.webimage, "bulk", args.input, "--output", args.output, "--plan-only", *options],
        capture_output=True, text=True)
    if planned.returncode != 0:
        sys.stderr.write(planned.stderr)
        return planned.returncode
    shards = json.loads(planned.stdout)["shards"]

    # The driver's AWS_* variables (an s3:// input or output) go to every worker's environment.
    aws = {name: value for name, value in os.environ.items() if name.startswith("AWS_")}
    ray.init(runtime_env={"env_vars": aws} if aws else None)
    tasks = max(1, min(args.tasks, shards))
    groups = [list(range(first, shards, tasks)) for first in range(tasks)]
    results = ray.get([run_shards.remote(args.webimage, args.input, args.output, group, options) for group in groups])
    events = [event for result in results for event in result]
    done = [event for event in events if event.get("event") == "shard"]
    for event in sorted(done, key=lambda event: event["shard"]):
        print(json.dumps(event, sort_keys=True))
    skipped = sum(event.get("skipped", 0) for event in events if event.get("event") == "summary")
    print(json.dumps({"event": "job", "shards": shards, "written": len(done), "skipped": skipped}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
