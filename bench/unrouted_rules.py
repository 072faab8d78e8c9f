"""What deciding on the rules as they are costs the unrouted-events check, in EventBridge requests.

The check decides each batch on rules read after the batch arrived (``inferbus_lambda.unrouted``).
This counts the control-plane requests it makes per batch on a moto bus (every request the
EventBridge client sends, by API), against two baselines measured in the same run:

- ``read per batch``: the simplest way to decide on the rules as they are, every rule read for
  every batch (``ListRules`` pages and one ``ListTargetsByRule`` per delivering rule);
- ``TTL 300 s``: the check as it was, one such read per 300 s, whatever changed meanwhile (its
  per-batch cost depends on the batch rate: shown at ``--batches-per-second``).

The numbers are request counts, not timings: they are what AWS bills and throttles (EventBridge's
control-plane APIs have per-account rate quotas, ``DescribeRule`` and ``ListTargetsByRule`` among them).

Usage::

    .venv/bin/python bench/unrouted_rules.py [--rules 12] [--batch 100] [--types 1 3 9] [--batches 20]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

import boto3
from inferbus_lambda.unrouted import BusRules, UnroutedCheck, read_rules
from moto import mock_aws

BUS = "bench"


def make_bus(rules: int) -> Any:
    """A bus with ``rules`` delivering rules, one per detail type ``T0`` ... (each to one queue)."""
    events, sqs = boto3.client("events", region_name="us-east-1"), boto3.client("sqs", region_name="us-east-1")
    events.create_event_bus(Name=BUS)
    arn = sqs.get_queue_attributes(QueueUrl=sqs.create_queue(QueueName="q")["QueueUrl"],
                                   AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for index in range(rules):
        events.put_rule(Name=f"r{index}", EventBusName=BUS, EventPattern=json.dumps({"detail-type": [f"T{index}"]}))
        events.put_targets(Rule=f"r{index}", EventBusName=BUS, Targets=[{"Id": "q", "Arn": arn}])
    return events


def counting(events: Any) -> Counter[str]:
    """Every request ``events`` sends from now on, by API name."""
    counts: Counter[str] = Counter()
    events.meta.events.register("before-call.events.*", lambda model, **_: counts.update([model.name]))
    return counts


def batch(size: int, types: int, *, unrouted: int = 0) -> list[str]:
    bodies = [json.dumps({"source": "bench", "detail-type": f"T{i % types}", "detail": {}}) for i in range(size - unrouted)]
    return bodies + [json.dumps({"source": "bench", "detail-type": "Nobody", "detail": {}})] * unrouted


def per_batch(counts: Counter[str], batches: int) -> str:
    total = sum(counts.values())
    return f"{total / batches:6.1f}  ({', '.join(f'{api} {n / batches:.1f}' for api, n in sorted(counts.items()))})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=12)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--types", type=int, nargs="+", default=[1, 3, 9])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batches-per-second", type=float, default=1.0)
    args = parser.parse_args()
    with mock_aws():
        events = make_bus(args.rules)
        counts = counting(events)
        read_rules(events, bus=BUS)
        full_read = sum(counts.values())
        print(f"bus of {args.rules} delivering rules, batches of {args.batch}; EventBridge requests per batch:")
        print(f"  baseline TTL 300 s (as it was), at {args.batches_per_second:g} batch/s: "
              f"{full_read / (300 * args.batches_per_second):6.2f}  (one read of {full_read} requests per 300 s)")
        print(f"  baseline read per batch:                      {full_read:6.1f}")
        for types in args.types:
            for unrouted in (0, 1):
                rules = BusRules(events, bus=BUS, exclude=(), result_sources=())
                rules.verdicts(batch(args.batch, types))  # the cold start's read, not counted
                counts.clear()
                for _ in range(args.batches):
                    verdicts = rules.verdicts(batch(args.batch, types, unrouted=unrouted))
                    assert sum(v.status == "unrouted" for v in verdicts) == unrouted
                label = f"{types} type(s){' + 1 unrouted event' if unrouted else ''}"
                ratio = sum(counts.values()) / args.batches / full_read
                print(f"  now, {label:<30}          {per_batch(counts, args.batches)}  = {ratio:.2f} x read per batch")
        # the same decisions as a fresh read would give: the check's answers are not bought with accuracy
        fresh = UnroutedCheck(read_rules(events, bus=BUS), result_sources=())
        assert [v.status for v in BusRules(events, bus=BUS, exclude=(), result_sources=()).verdicts(batch(10, 3, unrouted=1))] \
            == [fresh.verdict(body).status for body in batch(10, 3, unrouted=1)]


if __name__ == "__main__":
    main()
