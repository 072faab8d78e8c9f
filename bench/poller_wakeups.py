"""What a message costs the embedded runtime as the SQS mappings grow, beside a baseline in the same run.

Each side (this checkout, and a baseline checkout's code path) runs, per mapping count, a fresh
embedded pipeline with that many SQS queues, each with a mapping to one consumer function, in a
subprocess of its own. The pollers started and idle, 1,000 messages go to the first queue (in
batches of 10) and the pipeline drains. Printed: the process's CPU for that, the wall time (each the
median of ``--repeats`` runs, the sides taking turns), the invocations (100 each: batches of 10), and
the ratios this checkout / baseline.

Before each poller had its own wake-up, every change anywhere (a message on any queue, an execution's
end) woke every poller, which then looked at its queue: the CPU per message grew with the mappings
declared. A run with one mapping is the control: there the two should cost the same.

Usage::

    .venv/bin/python bench/poller_wakeups.py [--mappings 1 20 60] [--repeats 3]
        [--baseline-ref REF | --baseline-root DIR | --no-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = 1000
BATCH = 10


def one(mappings: int) -> dict[str, float]:
    """Run in a subprocess whose working directory is the checkout measured."""
    from tests.runtime_fixtures import runtime
    from tests.runtime_fixtures import templates as t

    resources = {"Consumer": t.function("consumer")}
    for index in range(mappings):
        resources[f"Work{index}"] = t.queue()
        resources[f"Mapping{index}"] = t.event_source("Consumer", f"Work{index}", batch_size=BATCH)
    with runtime(t.template(**resources), tap=False) as pipeline:
        pipeline.start()
        pipeline.drain(timeout_s=60)
        url = pipeline.deployment.queues["Work0"].url
        cpu, wall = time.process_time(), time.monotonic()
        for start in range(0, MESSAGES, BATCH):
            pipeline.sqs.send_message_batch(QueueUrl=url, Entries=[
                {"Id": str(n), "MessageBody": json.dumps({"n": start + n})} for n in range(BATCH)])
        pipeline.drain(timeout_s=120)
        return {"cpu_s": time.process_time() - cpu, "wall_s": time.monotonic() - wall,
                "invocations": len(pipeline.functions["Consumer"].invocations)}


def measured(root: Path, mappings: int) -> dict[str, float]:
    environment = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'functions'}", "AWS_EC2_METADATA_DISABLED": "true"}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", str(mappings)], cwd=root,
                          env=environment, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{root}: {mappings} mappings failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mappings", type=int, nargs="+", default=[1, 20, 60], help="mapping counts (default 1 20 60)")
    parser.add_argument("--baseline-ref", default="main", help="git ref whose code path is the baseline (default main)")
    parser.add_argument("--baseline-root", type=Path, help="a checkout to run as the baseline instead of --baseline-ref")
    parser.add_argument("--no-baseline", action="store_true", help="measure this checkout only")
    parser.add_argument("--repeats", type=int, default=3, help="runs per side and count, medians shown (default 3)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one)))
        return
    from serve_throughput import baseline_checkout  # not in a run of one side: it puts this checkout on sys.path

    print(f"{MESSAGES} messages to one queue of N, each queue mapped to one consumer (batches of {BATCH}); "
          f"{os.cpu_count()} CPUs")
    print("mappings  side            CPU s   wall s  invocations")
    with baseline_checkout(args) as baseline:
        for mappings in args.mappings:
            order = [("this checkout", ROOT)] + ([("baseline", baseline)] if baseline is not None else [])
            runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in order}
            for repeat in range(args.repeats):
                for name, root in order if repeat % 2 == 0 else reversed(order):
                    runs[name].append(measured(root, mappings))
            sides = {name: {key: statistics.median(run[key] for run in each) for key in each[0]}
                     for name, each in runs.items()}
            for name, figures in sides.items():
                print(f"{mappings:8}  {name:13}  {figures['cpu_s']:6.2f}  {figures['wall_s']:7.2f}  "
                      f"{figures['invocations']:11.0f}", flush=True)
            if baseline is None:
                continue
            now, was = sides["this checkout"], sides["baseline"]
            print(f"          ratio this checkout / baseline: CPU {now['cpu_s'] / was['cpu_s']:.2f}×, "
                  f"wall {now['wall_s'] / was['wall_s']:.2f}×", flush=True)


if __name__ == "__main__":
    main()
