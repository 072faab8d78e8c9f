"""The embedded end-to-end demo: every declared component's samples in, every event accounted for.

For each component whose declaration has ``demo`` inputs (``pipeline/``), it sends held-out
samples that ship in ``models/``, broken copies of one of them and a few duplicate deliveries;
it drains; it plays the person for every workflow with a review queue (its declared
``reviewer``, through the same code as ``inferbus reviews``); it drains again; then it reads
back what the bus carried, the executions, the queues and the metrics
(:mod:`.accounting`) into a :class:`~.report.DemoReport`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime
from collections.abc import Callable, Mapping
from typing import Any

from .accounting import account
from .inputs import DEMO_SOURCE, DemoInputError, build_inputs, demo_components, sample_event
from .report import DemoReport

__all__ = ["DEMO_SOURCE", "DemoInputError", "DemoReport", "demo_components", "run_demo", "sample_event"]

Progress = Callable[[str, int, int], None]


def run_demo(counts: Mapping[str, int] | None = None, duplicates: Mapping[str, int] | None = None,
             progress: Progress | None = None, template: dict[str, Any] | None = None) -> DemoReport:
    """Send every component's samples, drain, play the reviewers, drain, and account for every event.

    Parameters
    ----------
    counts, duplicates
        Samples and duplicate deliveries per component name (default: each declaration's).
    progress
        Called as ``progress(stage, done, total)``.
    template
        Used instead of synthesizing the app.
    """
    from ..local import LocalPipeline
    from ..reviews import decide, list_reviews

    started = time.perf_counter()
    report = DemoReport()
    notify = progress or (lambda stage, done, total: None)

    notify("synthesize + provision", 0, 1)
    with LocalPipeline(template) as pipeline:
        notify("synthesize + provision", 1, 1)
        running = time.perf_counter()
        sent = build_inputs(pipeline.declarations, pipeline.bus_name, counts=counts, duplicates=duplicates)
        pipeline.start()  # the pollers and workflows run while the producer sends
        stream, timed = sent.entries, set()
        for start in range(0, len(stream), 10):
            chunk = stream[start : start + 10]
            now = datetime.now(UTC)
            for entry in chunk:  # latency runs from an event's first PutEvents, not from when it was built
                event_id = json.loads(entry["Detail"]).get("id")
                if event_id in sent.sent_at and event_id not in timed:
                    sent.sent_at[event_id] = now
                    timed.add(event_id)
            report.rejected_by_bus += len(pipeline.put_events(chunk))
            notify("send", min(start + 10, len(stream)), len(stream))
        pipeline.drain()
        notify("drain", 1, 1)

        outcomes: Counter[str] = Counter()
        queues = [(w, pipeline.review_queue_url(w.name)) for w in pipeline.declarations.workflows if w.review_queue]
        for workflow, queue_url in queues:
            pending = list_reviews(pipeline.sqs, queue_url)
            outcomes["requested"] += len(pending)
            for done, review in enumerate(pending, start=1):
                if review.request is None or workflow.reviewer is None:
                    continue
                case = review.request.case
                approve, note = workflow.reviewer(case, sent.truth.get(case.transaction_id))
                outcomes[decide(pipeline.sqs, pipeline.stepfunctions, queue_url, case.transaction_id, approve=approve,
                                reviewer="demo-reviewer", note=note).outcome] += 1
                notify("review", done, len(pending))
        pipeline.drain()
        outcomes["still_pending"] = sum(len(list_reviews(pipeline.sqs, url)) for _, url in queues)
        report.reviews = dict(outcomes)
        notify("drain", 1, 1)

        account(pipeline, sent, report)
        report.running_seconds = time.perf_counter() - running
    report.seconds = time.perf_counter() - started
    return report
