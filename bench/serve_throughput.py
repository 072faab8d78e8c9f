"""How fast ``inferbus serve`` takes a burst from one AWS client and delivers its results, beside a baseline.

For each side, ``inferbus serve`` in a subprocess on a loopback port (the same synthesized template
for both), then one boto3 client puts N events as fast as it can, sequentially, in PutEvents of 10
(the kit's own flows: each declared component's demo samples, as new events, so the consumers and
the workflows run; ``--invalid`` and ``--foreign`` mix in the soak's other kinds). Meanwhile the
client plays every service downstream of the bus, as ``bench/soak.py`` does (it drains the results,
the invalid-events queue and each route, and answers each manual review). Printed per side: the put
rate, the PutEvents p50 and p99, how long after the last put every ledger balanced (each valid event
has its result, each routed result its workflow's outcome, each invalid event was kept), the ledger
counts, the queues left, the server's CPU per event; then this checkout against the baseline.

The baseline is the same run on another checkout's code path (``--baseline-ref``, default ``main``,
checked out in a temporary git worktree; ``--baseline-root`` names a checkout instead;
``--no-baseline`` skips it). Ratios, not absolute figures, are the point on a shared machine.

Usage::

    .venv/bin/python bench/serve_throughput.py                          # 2,000 events, beside main
    .venv/bin/python bench/serve_throughput.py --events 500 --no-baseline
    .venv/bin/python bench/serve_throughput.py --events 400 --components vision-fanout   # one flow's cost
    .venv/bin/python bench/serve_throughput.py --template cdk.out/x.template.json --baseline-root /path/to/checkout

Loopback only; every wait is bounded (``--settle``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "functions", ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from soak import (  # noqa: E402
    BATCH,
    Ledger,
    Sinks,
    Traffic,
    balance,
    balanced,
    client,
    components_named,
    cpu_s,
    percentile,
    queues_left,
    served,
)

from inferbus.model.names import EVENT_BUS_NAME_OUTPUT  # noqa: E402
from pipeline import load_pipeline  # noqa: E402

SETTLE_CHECK_S = 0.1  # how often the ledgers are checked after the last put


@dataclass
class Side:
    """One server's figures for one burst."""

    name: str
    events: int = 0
    put_s: float = 0.0
    put_p50_ms: float = 0.0
    put_p99_ms: float = 0.0
    settled_after_s: float | None = None  # after the last put returned; None: not balanced within --settle
    cpu_ms_per_event: float = 0.0
    missing: dict[str, int] = field(default_factory=dict)
    queues_left: dict[str, int] = field(default_factory=dict)
    reviews: dict[str, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)

    @property
    def put_per_s(self) -> float:
        return self.events / self.put_s if self.put_s else 0.0


def burst(name: str, root: Path, args: argparse.Namespace, scratch: Path) -> Side:
    pipeline = load_pipeline()
    side = Side(name)
    with served(args.template, scratch / f"{name}.log", root=root) as (ready, process):
        endpoint, outputs = ready["endpoint"], ready["outputs"]
        events, sqs = client("events", endpoint), client("sqs", endpoint)
        ledger = Ledger()
        sinks = Sinks(endpoint, pipeline, outputs, ledger)
        sinks.start()
        traffic = Traffic(pipeline, outputs[EVENT_BUS_NAME_OUTPUT], ledger,
                          {"valid": args.valid, "invalid": args.invalid, "foreign": args.foreign},
                          components=args.components)
        batches = [[traffic.next() for _ in range(min(BATCH, args.events - start))]
                   for start in range(0, args.events, BATCH)]
        cpu_before = cpu_s(process.pid)
        latencies = []
        began = time.perf_counter()
        for entries in batches:
            sent = time.perf_counter()
            events.put_events(Entries=entries)
            latencies.append((time.perf_counter() - sent) * 1000)
        last_put = time.perf_counter()
        side.put_s = last_put - began
        while time.perf_counter() - last_put < args.settle:
            if balanced(balance(pipeline, sinks, ledger)) and not queues_left(sqs):  # the last kept events too
                side.settled_after_s = time.perf_counter() - last_put
                break
            time.sleep(SETTLE_CHECK_S)
        side.cpu_ms_per_event = (cpu_s(process.pid) - cpu_before) * 1000 / args.events
        sinks.stop()
        sinks.dead_letters()
        missing = balance(pipeline, sinks, ledger)
        side.missing = {key: len(value) if isinstance(value, list) else value for key, value in missing.items()}
        side.queues_left = queues_left(sqs)
        side.events, side.reviews = traffic.count, dict(ledger.reviews)
        side.kinds = {"valid": len(ledger.valid), "invalid": len(ledger.invalid), "foreign": len(ledger.foreign)}
        side.put_p50_ms, side.put_p99_ms = percentile(latencies, 0.5), percentile(latencies, 0.99)
    return side


@contextmanager
def baseline_checkout(args: argparse.Namespace) -> Iterator[Path | None]:
    if args.no_baseline:
        yield None
    elif args.baseline_root is not None:
        yield args.baseline_root
    else:
        with tempfile.TemporaryDirectory() as scratch:
            where = Path(scratch) / "baseline"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), args.baseline_ref],
                           check=True, capture_output=True)
            try:
                yield where
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], capture_output=True)


def synthesized(scratch: Path) -> Path:
    from inferbus.template import synthesize

    path = scratch / "template.json"
    path.write_text(json.dumps(synthesize()))
    return path


def print_sides(sides: list[Side]) -> None:
    print(f"inferbus serve: {sides[0].events:,} events from one boto3 client, sequential PutEvents of {BATCH} "
          f"({sides[0].kinds})")
    print(f"{'side':<24} {'put s':>6} {'events/s':>9} {'put p50 ms':>11} {'put p99 ms':>11} "
          f"{'balanced after last put s':>26} {'server CPU ms/event':>20}")
    for side in sides:
        settled = f"{side.settled_after_s:.2f}" if side.settled_after_s is not None else "not within --settle"
        print(f"{side.name:<24} {side.put_s:>6.2f} {side.put_per_s:>9.1f} {side.put_p50_ms:>11.1f} {side.put_p99_ms:>11.1f} "
              f"{settled:>26} {side.cpu_ms_per_event:>20.2f}")
    for side in sides:
        print(f"{side.name}: ledgers {'BALANCED' if balanced_side(side) else 'NOT BALANCED'} {side.missing}; "
              f"queues left {side.queues_left or 'none'}; reviews {side.reviews}")
    if len(sides) == 2:
        this, base = sides
        lag = (f"{this.settled_after_s / base.settled_after_s:.2f}×"
               if this.settled_after_s is not None and base.settled_after_s else "—")
        print(f"ratio {this.name} / {base.name}: events/s {this.put_per_s / max(base.put_per_s, 1e-9):.2f}×, "
              f"put p50 {this.put_p50_ms / max(base.put_p50_ms, 1e-9):.2f}×, balanced after {lag}, "
              f"CPU/event {this.cpu_ms_per_event / max(base.cpu_ms_per_event, 1e-9):.2f}×")


def balanced_side(side: Side) -> bool:
    return not any(value for key, value in side.missing.items() if key != "routed_on") and not side.queues_left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000, help="events in the burst (default 2000)")
    parser.add_argument("--valid", type=int, default=1, help="share of valid events (default 1)")
    parser.add_argument("--invalid", type=int, default=0, help="share of invalid events (default 0)")
    parser.add_argument("--foreign", type=int, default=0, help="share of foreign events (default 0)")
    parser.add_argument("--components", type=lambda text: [name.strip() for name in text.split(",") if name.strip()],
                        default=[], help="only these components' inputs, comma-separated (default: every component "
                                         "with demo inputs, in turn); the flows they start still run")
    parser.add_argument("--settle", type=float, default=180.0, help="most seconds to wait for the ledgers after the last put")
    parser.add_argument("--template", type=Path, help="a synthesized template for both sides (default: synthesize the app)")
    parser.add_argument("--baseline-ref", default="main", help="git ref whose code path is the baseline (default main)")
    parser.add_argument("--baseline-root", type=Path, help="a checkout to run as the baseline instead of --baseline-ref")
    parser.add_argument("--no-baseline", action="store_true", help="measure this checkout only")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        components_named(load_pipeline(), args.components)  # before a server starts
    except ValueError as unknown:
        parser.error(str(unknown))
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        if args.template is None:
            args.template = synthesized(scratch)
        sides = [burst("this checkout", ROOT, args, scratch)]
        with baseline_checkout(args) as baseline:
            if baseline is not None:
                sides.append(burst("baseline", baseline, args, scratch))
    if args.json:
        print(json.dumps([{**side.__dict__, "put_per_s": side.put_per_s, "balanced": balanced_side(side)} for side in sides]))
    else:
        print_sides(sides)
    return 0 if all(balanced_side(side) for side in sides) else 1


if __name__ == "__main__":
    sys.exit(main())
