"""Sent-to-result latency of the embedded pipeline, one event at a time, per declared component.

Starts the pipeline embedded on moto (``LocalPipeline``, started: pollers and bridges run by
themselves), then for each component with demo samples sends one sample at a time and waits
for its result on the bus; the latency is the result event's ``time`` minus the moment
before ``PutEvents``. With nothing else running this is the pipeline's own latency: a
consumer's includes its batching window when its batch does not fill (as Lambda waits for it),
a workflow's every state. ``inferbus demo`` measures the same under its burst of events.

Usage::

    .venv/bin/python bench/local_latency.py [--events 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime

from inferbus_lambda.contracts import to_put_events_entry

from inferbus.demo.inputs import demo_components, sample_event
from inferbus.local import LocalPipeline

TIMEOUT_S = 30.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=5, help="events per component (default 5)")
    args = parser.parse_args()
    with LocalPipeline() as pipeline:
        pipeline.start()
        print(f"{'component':24} {'p50 ms':>8}  each (ms)")
        for component in demo_components(pipeline.declarations):
            produced = component.emits[0]
            latencies = []
            for index in range(args.events):
                event, _ = sample_event(component, index, source="bench.latency")
                sent = datetime.now(UTC)
                pipeline.put_events([to_put_events_entry(event, pipeline.bus_name)])
                result, deadline = None, time.monotonic() + TIMEOUT_S
                while result is None and time.monotonic() < deadline:
                    result = next((e for e in pipeline.tapped_events() if e["detail-type"] == produced
                                   and e["detail"].get("subject") == event.id), None)
                    time.sleep(0.002)
                if result is None:
                    raise SystemExit(f"{component.name}: no {produced} for {event.id} within {TIMEOUT_S:g} s")
                latencies.append((datetime.fromisoformat(result["detail"]["time"]) - sent).total_seconds() * 1000)
                pipeline.drain()
            each = ", ".join(f"{value:.0f}" for value in latencies)
            print(f"{component.name:24} {statistics.median(latencies):8.0f}  {each}")


if __name__ == "__main__":
    main()
