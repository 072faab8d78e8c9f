"""The embedded end-to-end demo: every declared component's samples in, every event accounted for.

For each component whose declaration has ``demo`` inputs (``pipeline/``), it sends held-out
samples that ship in ``models/``, broken copies of one of them and a few duplicate deliveries;
it drains; it plays the person for every workflow with a review queue (its declared
``reviewer``, through the same code as ``inferbus reviews``); it drains again; then it reads
back what the bus carried, the executions, the queues and the metrics
(:mod:`.accounting`) into a :class:`~.report.DemoReport`. With ``replay``, it then replays the whole
run from the embedded archive (the code ``inferbus replay`` runs against AWS) and shows that the
exactly-once claims make that safe: nothing is processed twice (:class:`~.report.ReplayReport`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from inferbus_lambda.metric_names import DUPLICATES_SKIPPED

from inferbus.model.declarations import Pipeline

from .accounting import account, emf_values
from .inputs import DEMO_SOURCE, DemoInputError, build_inputs, check_sizes, declared, demo_components, reviewer_of, sample_event
from .report import DemoReport, ReplayReport

__all__ = ["DEMO_SOURCE", "DemoInputError", "DemoReport", "demo_components", "run_demo", "sample_event"]

Progress = Callable[[str, int, int], None]


def run_demo(counts: Mapping[str, int] | None = None, duplicates: Mapping[str, int] | None = None,
             progress: Progress | None = None, template: dict[str, Any] | None = None,
             replay: bool = False, context: Mapping[str, Any] | None = None,
             pipeline: Pipeline | None = None) -> DemoReport:
    """Send every component's samples, drain, play the reviewers, drain, and account for every event.

    Parameters
    ----------
    counts, duplicates
        Samples and duplicate deliveries per component name (default: each declaration's).
    progress
        Called as ``progress(stage, done, total)``.
    template
        Used instead of synthesizing the app.
    replay
        Then replay every archived event and account for what the replay did.
    context
        CDK context, as ``-c`` gives it: ``{"stage": "channels"}`` runs that stage's declarations and samples.
    pipeline
        The declarations (default ``pipeline/``'s); their samples are ``pipeline/``'s ``DEMO``, by component name.
    """
    from ..local import LocalPipeline
    from ..template_cache import TemplateCache

    started = time.perf_counter()
    window_start = datetime.now(UTC) - timedelta(seconds=1)
    report = DemoReport()
    notify = progress or (lambda stage, done, total: None)

    with declared(context, pipeline) as (settings, declarations):
        check_sizes(declarations, counts, duplicates)  # before minutes of work, not after
        notify("synthesize + provision", 0, 1)
        with LocalPipeline(template, settings=settings, pipeline=declarations,
                           template_cache=TemplateCache()) as running:
            report.template_kept = running.template_kept
            report = _run(running, report, notify, counts, duplicates, replay, window_start)
    report.seconds = time.perf_counter() - started
    return report


def _run(pipeline: Any, report: DemoReport, notify: Progress, counts: Mapping[str, int] | None,
         duplicates: Mapping[str, int] | None, replay: bool, window_start: datetime) -> DemoReport:
    from ..channel_feeds import ChannelFeeds
    from ..reviews import decide_each, list_reviews
    from .inputs import UNROUTED

    notify("synthesize + provision", 1, 1)
    running = time.perf_counter()
    sent = build_inputs(pipeline.declarations, pipeline.bus_name, counts=counts, duplicates=duplicates)
    feeds = ChannelFeeds(pipeline, pipeline.declarations)
    unrouted = {corruption.why for corruption in UNROUTED}  # copies no rule takes stay on the bus: they test it
    on_bus = {event_id for event_id, why in sent.reasons.items() if why in unrouted}
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
        report.rejected_by_bus += len(pipeline.put_events(feeds.send(chunk, sent.component_of, on_bus)))
        notify("send", min(start + 10, len(stream)), len(stream))
    pipeline.drain()
    notify("drain", 1, 1)

    outcomes: Counter[str] = Counter()
    queues = [(w, pipeline.review_queue_url(w.name)) for w in pipeline.declarations.workflows if w.review_queue]
    for workflow, queue_url in queues:
        reviewer = reviewer_of(workflow)
        if reviewer is None:
            outcomes["requested"] += len(list_reviews(pipeline.sqs, queue_url))
            continue

        def judge(case: Any, reviewer: Any = reviewer) -> tuple[bool, str | None]:
            outcomes["requested"] += 1
            return reviewer(case, sent.truth.get(case.transaction_id))

        for decision in decide_each(pipeline.sqs, pipeline.stepfunctions, queue_url, judge, reviewer="demo-reviewer",
                                    progress=lambda done, total: notify("review", done, total)):
            outcomes[decision.outcome] += 1
    pipeline.drain()
    outcomes["still_pending"] = sum(len(list_reviews(pipeline.sqs, url)) for _, url in queues)
    report.reviews = dict(outcomes)
    notify("drain", 1, 1)

    feeds.close()
    delivered = pipeline.tapped_events()
    account(pipeline, sent, report, delivered, feeds)
    report.running_seconds = time.perf_counter() - running
    for flow in report.flows.values():
        flow.per_minute = flow.consumed / report.running_seconds * 60 if report.running_seconds else None
    if replay:
        notify("replay the archive", 0, 1)
        report.replay = replay_run(pipeline, since=window_start, delivered=delivered)
        notify("replay the archive", 1, 1)
    return report


def replay_run(pipeline: Any, *, since: datetime, delivered: list[dict[str, Any]]) -> ReplayReport:
    """Replay every archived event since ``since`` onto the bus, drain, and report what it redid.

    ``delivered`` is what the bus carried before: an event the replay makes that is not among them
    (by source, type and id) is new work.
    """
    from inferbus_lambda.contracts import InvalidEventError, from_eventbridge_event

    from ..replay import start_replay

    def skipped() -> float:
        return sum(sum(emf_values(f, DUPLICATES_SKIPPED)) for f in pipeline.functions.values())

    def workflow_duplicates() -> int:
        return sum(len(emf_values(f, "EventsDuplicate")) for f in pipeline.functions.values())

    before = (skipped(), workflow_duplicates(), len(pipeline.invalid_events()))
    seen = {(e["source"], e["detail-type"], e["detail"].get("id")) for e in delivered + pipeline.tapped_events()}
    started = start_replay(pipeline.events, bus_name=pipeline.bus_name, since=since, until=datetime.now(UTC))
    pipeline.drain()
    report = ReplayReport(started["name"])
    producers = {p.result_source for p in pipeline.declarations.producers}
    for delivered in pipeline.tapped_events():
        if delivered.get("replay-name"):
            report.replayed += 1
            continue
        key = (delivered["source"], delivered["detail-type"], delivered["detail"].get("id"))
        if delivered["source"] in producers and key not in seen:
            try:
                event = from_eventbridge_event(delivered)
                report.new_results.append(f"{event.type} {event.id} (from {event.source}, subject {event.subject})")
            except InvalidEventError as error:
                report.new_results.append(f"{delivered['detail-type']}: {error}")
    report.duplicates_skipped = int(skipped() - before[0])
    report.workflow_duplicates = workflow_duplicates() - before[1]
    report.rerejected = len(pipeline.invalid_events()) - before[2]
    return report
