"""``inferbus serve`` under a steady load, then every ledger checked; or one burst, beside a plain moto server.

Soak (the default): ``inferbus serve`` in a subprocess on a loopback port; one boto3 client puts a
steady rate of mixed events in PutEvents of 10, for a bounded time and count:

- **valid**: each declared component's demo samples (``pipeline/``), as new events;
- **invalid**: a valid event broken by one of its declaration's corruptions, or by one that no rule
  takes (what the demo sends, :mod:`inferbus.demo.inputs`);
- **foreign**: another application's events, which only a rule the client made on the bus takes
  (to a queue of its own).

Meanwhile the client plays every service downstream of the bus: it drains its own results queue (a
rule on every result ``source``), its foreign queue, the invalid-events queue, each route's queue,
and answers each manual review with the demo's reviewer. It samples the server's resident memory
and times every PutEvents. At the end (after a bounded settle) it checks each ledger:

- each valid event has its result from its component (and each result a workflow takes, an outcome
  of that workflow);
- each invalid event was kept, with its reason, in the invalid-events queue or a dead-letter queue;
- each foreign event arrived in the client's queue and none was kept as invalid;
- every queue on the server is empty.

With ``--retention S`` the server keeps claims and archived events for S seconds (``inferbus serve
--retention``); after the ledgers the soak waits (at most S + 20 s more) for what it remembers to leave
that window: every claim the load wrote swept from the idempotency table (the archive is trimmed
to the window as events arrive). It reports the claims and archived events at the end of the load
and after the window.

Burst (``--burst N``): N valid events as fast as one client puts them (PutEvents of 10), the PutEvents
rate and how long after the last put the last result arrived; then the same client and puts against
a plain moto server (one rule to one queue, nothing consuming), the baseline measured in the same run.

Usage::

    .venv/bin/python bench/soak.py                                 # 100 events/s for 10 minutes
    .venv/bin/python bench/soak.py --retention 120                 # the same, claims kept 2 minutes
    .venv/bin/python bench/soak.py --rate 20 --duration 30 --retention 10 --json  # tests/e2e/test_soak.py
    .venv/bin/python bench/soak.py --burst 2000

Loopback only; every wait is bounded (``--settle``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "functions"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from inferbus_lambda.contracts import ReviewRequest, data_model, new_event, to_put_events_entry  # noqa: E402
from twin_vs_localstack import cpu_s, free_port, rss_mb, stop  # noqa: E402

from inferbus.demo.inputs import UNROUTED, demo_components, inputs_of, reviewer_of  # noqa: E402
from inferbus.model.declarations import Consumer, Pipeline, Workflow  # noqa: E402
from inferbus.model.names import (  # noqa: E402
    DEAD_LETTER_QUEUE_URL,
    EVENT_BUS_NAME_OUTPUT,
    IDEMPOTENCY_TABLE_OUTPUT,
    INVALID_EVENTS_OUTPUT,
    QUEUE_URL,
    pascal,
)
from inferbus.reviews import answer  # noqa: E402
from pipeline import load_pipeline  # noqa: E402

CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
ACCOUNT = "123456789012"  # moto's
BATCH = 10  # entries per PutEvents
SOAK_SOURCE = "inferbus.soak"
FOREIGN = {"source": ["soak.shipping"], "detail-type": ["ShipmentDelayed"]}  # another application's events
START_TIMEOUT_S = 300.0
SAMPLE_EVERY_S = 2.0
SAMPLES_PER_COMPONENT = 200  # distinct held-out samples cycled through
FORGET_MARGIN_S = 20.0  # with --retention: past the window, what serve's sweeps (every 5 s) may still take


@dataclass
class Ledger:
    """What was sent and what came back, by event id."""

    valid: dict[str, str] = field(default_factory=dict)  # id -> component
    truth: dict[str, Any] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)  # id -> why it is broken
    foreign: set[str] = field(default_factory=set)
    results: dict[tuple[str, str], int] = field(default_factory=Counter)  # (component, input id) -> results
    failures: dict[str, str] = field(default_factory=dict)  # input id -> the failure event's type
    chained: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # input id -> workflows it reached
    kept: dict[str, str] = field(default_factory=dict)  # invalid id -> where and why it was kept
    kept_foreign: set[str] = field(default_factory=set)  # foreign ids kept as invalid (must stay empty)
    arrived: set[str] = field(default_factory=set)  # foreign ids delivered to the client's queue
    routed: Counter = field(default_factory=Counter)  # route -> messages its queue carried
    reviews: Counter = field(default_factory=Counter)  # outcome -> count
    lock: threading.Lock = field(default_factory=threading.Lock)


def components_named(pipeline: Pipeline, names: Collection[str] = ()) -> list[Consumer | Workflow]:
    """The components with demo inputs named ``names`` (all of them if none is named).

    Raises
    ------
    ValueError
        A name that is not one of them, with the names it can be.
    """
    components = demo_components(pipeline)
    if unknown := [name for name in names if name not in {c.name for c in components}]:
        raise ValueError(f"no component with demo inputs is named {', '.join(unknown)}: "
                         f"choose from {', '.join(sorted(c.name for c in components))}")
    return [c for c in components if not names or c.name in names]


class Traffic:
    """The events put: valid, invalid and foreign, in a fixed cycle of the given shares."""

    def __init__(self, pipeline: Pipeline, bus: str, ledger: Ledger, shares: dict[str, int],
                 components: Collection[str] = ()) -> None:
        self.bus, self.ledger = bus, ledger
        self.components = components_named(pipeline, components)
        self.samples: dict[str, list[tuple[Any, Any]]] = {}
        for component in self.components:
            demo = inputs_of(component)
            assert demo is not None
            model = data_model(component.accepts.type)
            assert model is not None, component.accepts.type
            self.samples[component.name] = [(model.model_validate(s.data), s.truth)
                                            for s in demo.samples(min(demo.limit, SAMPLES_PER_COMPONENT))]
        self.corruptions = {c.name: [*inputs_of(c).malformed, *UNROUTED] for c in self.components}  # type: ignore[union-attr]
        self.kinds = itertools.cycle([kind for kind, share in shares.items() for _ in range(share)])
        self.count = 0
        self.of_kind: Counter[str] = Counter()  # each kind goes round the components on its own

    def _valid(self, kind: str) -> tuple[dict[str, Any], Consumer | Workflow]:
        nth = self.of_kind[kind]
        component = self.components[nth % len(self.components)]
        samples = self.samples[component.name]
        data, truth = samples[(nth // len(self.components)) % len(samples)]
        event = new_event(data, source=SOAK_SOURCE, correlationid=f"soak-{self.count}")
        self.ledger.truth[event.id] = truth
        return to_put_events_entry(event, self.bus), component

    def next(self) -> dict[str, Any]:
        kind = next(self.kinds)
        self.count += 1
        self.of_kind[kind] += 1
        if kind == "foreign":
            parcel = f"parcel-{self.count}"
            self.ledger.foreign.add(parcel)
            return {"EventBusName": self.bus, "Source": FOREIGN["source"][0], "DetailType": FOREIGN["detail-type"][0],
                    "Detail": json.dumps({"parcel": parcel})}
        entry, component = self._valid(kind)
        if kind == "valid":
            self.ledger.valid[json.loads(entry["Detail"])["id"]] = component.name
            return entry
        detail = json.loads(entry["Detail"])
        corruptions = self.corruptions[component.name]
        corruption = corruptions[(self.of_kind[kind] // len(self.components)) % len(corruptions)]
        detail["id"] = f"soak-invalid-{self.count}"
        corruption.change(detail)
        self.ledger.invalid[detail["id"]] = f"{component.name}: {corruption.why}"
        return {**entry, "Detail": json.dumps(detail), "DetailType": detail.get("type", entry["DetailType"])}


# -- the server -------------------------------------------------------------------------------------

@contextmanager
def served(template: Path | None, log: Path, retention_s: int | None = None, root: Path = ROOT,
           ) -> Iterator[tuple[dict[str, Any], subprocess.Popen]]:
    """``inferbus serve --json`` of the checkout at ``root`` (its own code only) on a free loopback port;
    yields its ready line and the process."""
    command = [sys.executable, "-m", "inferbus.cli", "serve", "--port", str(free_port()), "--json"]
    if template is not None:
        command += ["--template", str(template)]
    if retention_s is not None:
        command += ["--retention", str(retention_s)]
    environment = {**os.environ, "PYTHONUNBUFFERED": "1",
                   "PYTHONPATH": os.pathsep.join([str(root), str(root / "functions")])}
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT, text=True, env=environment)
    try:
        began = time.monotonic()
        while time.monotonic() - began < START_TIMEOUT_S and process.poll() is None:
            for line in log.read_text().splitlines():
                if line.startswith("{") and json.loads(line).get("kind") == "ready":
                    yield json.loads(line), process
                    return
            time.sleep(0.5)
        last = [line for line in log.read_text().splitlines() if line.strip()][-1:] or ["(no output)"]
        raise SystemExit(f"inferbus serve in {root} did not start: {last[0][:300]}")  # the log may go with its scratch dir
    finally:
        stop(process)


def client(service: str, endpoint: str) -> Any:
    return boto3.session.Session(**CREDENTIALS).client(service, endpoint_url=endpoint)


def own_queue(events: Any, sqs: Any, bus: str, name: str, pattern: dict[str, Any]) -> str:
    """A rule of the client's own on the bus, to a queue of its own."""
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    events.put_rule(Name=name, EventBusName=bus, EventPattern=json.dumps(pattern))
    events.put_targets(Rule=name, EventBusName=bus, Targets=[{"Id": name, "Arn": f"arn:aws:sqs:us-east-1:{ACCOUNT}:{name}"}])
    return url


# -- the services downstream: each drains one queue ------------------------------------------------

class Sinks:
    """One thread per queue the client drains, each reading what it takes into the ledger."""

    def __init__(self, endpoint: str, pipeline: Pipeline, outputs: dict[str, str], ledger: Ledger) -> None:
        self.endpoint, self.pipeline, self.ledger = endpoint, pipeline, ledger
        self.sqs, self.stepfunctions = client("sqs", endpoint), client("stepfunctions", endpoint)
        events = client("events", endpoint)
        bus = outputs[EVENT_BUS_NAME_OUTPUT]
        self.sources = {c.result_source: c for c in pipeline.producers}
        self.takers = self._chain_takers(pipeline)
        self.queues: dict[str, Any] = {
            own_queue(events, self.sqs, bus, "soak-results", {"source": sorted(self.sources)}): self._result,
            own_queue(events, self.sqs, bus, "soak-foreign", FOREIGN): self._foreign,
            outputs[INVALID_EVENTS_OUTPUT]: self._invalid,
        }
        for route in pipeline.routes:
            self.queues[outputs[f"{pascal(route.name)}{QUEUE_URL}"]] = lambda body, name=route.name: self._routed(name)
        self.reviews = {outputs[w.review_queue_output]: w for w in pipeline.workflows if w.review_queue_output}
        self.dead_letter_queues = [url for key, url in outputs.items() if key.endswith(DEAD_LETTER_QUEUE_URL)]
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    @staticmethod
    def _chain_takers(pipeline: Pipeline) -> dict[tuple[str, str], set[str]]:
        """(result type, its producer's source) -> the workflows that take it."""
        takers: dict[tuple[str, str], set[str]] = defaultdict(set)
        for component, event_filter in pipeline.filters():
            sources = pipeline.resolved_sources(event_filter)
            if isinstance(component, Workflow) and sources:
                for source in sources:
                    takers[(event_filter.type, source)].add(component.name)
        return takers

    def start(self) -> None:
        for url, read in self.queues.items():
            self._threads.append(threading.Thread(target=self._drain, args=(url, read), daemon=True))
        for url, workflow in self.reviews.items():
            self._threads.append(threading.Thread(target=self._review, args=(url, workflow), daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _drain(self, url: str, read: Any) -> None:
        sqs = client("sqs", self.endpoint)
        while not self._stopping.is_set():
            try:
                messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
            except Exception:  # noqa: BLE001 - the server stopped under a last long poll
                if self._stopping.is_set():
                    return
                raise
            for message in messages:
                with self.ledger.lock:
                    read(json.loads(message["Body"]))
            if messages:
                sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                                                                for n, m in enumerate(messages)])

    def _review(self, url: str, workflow: Workflow) -> None:
        sqs, stepfunctions = client("sqs", self.endpoint), client("stepfunctions", self.endpoint)
        reviewer = reviewer_of(workflow)
        while not self._stopping.is_set():
            for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []):
                case = ReviewRequest.model_validate_json(message["Body"]).case
                approve, note = reviewer(case, self.ledger.truth.get(case.transaction_id)) if reviewer else (True, None)
                decision = answer(sqs, stepfunctions, url, message, approve=approve, reviewer="soak", note=note)
                with self.ledger.lock:
                    self.ledger.reviews[decision.outcome] += 1

    def _result(self, event: dict[str, Any]) -> None:
        producer = self.sources.get(event["source"])
        detail = event["detail"]
        data = detail.get("data") or {}
        subject = detail.get("subject")
        if producer is None:
            return
        if isinstance(producer, Workflow) and event["detail-type"] == producer.failure:
            self.ledger.failures[data.get("input_id") or subject] = event["detail-type"]
            return
        if subject in self.ledger.valid:
            self.ledger.results[(producer.name, subject)] += 1
        input_id = data.get("input_id")
        if isinstance(producer, Workflow) and input_id in self.ledger.valid:
            self.ledger.chained[input_id].add(producer.name)  # an outcome of a workflow a result was routed to

    def _foreign(self, event: dict[str, Any]) -> None:
        self.ledger.arrived.add(event["detail"]["parcel"])

    def _invalid(self, kept: dict[str, Any]) -> None:
        if "consumer" in kept:  # a queue consumer's rejection, or the unrouted-events check's (the event in ``body``)
            event_id, where, reason = kept.get("event_id"), kept["consumer"], f"{kept.get('error')}: {kept.get('reason')}"
            if FOREIGN["source"][0] in kept.get("body", ""):
                body = json.loads(kept["body"])
                self.ledger.kept_foreign.add(str(body.get("detail", {}).get("parcel")))
        else:  # a workflow's ...Failed event, brought by its rule
            data = kept.get("detail", {}).get("data", {})
            event_id, where, reason = data.get("input_id"), kept.get("source", "?"), f"{data.get('error')}: {data.get('cause')}"
        self.ledger.kept.setdefault(str(event_id), f"invalid-events queue ({where}): {reason}")

    def _routed(self, route: str) -> None:
        self.ledger.routed[route] += 1

    def dead_letters(self) -> None:
        """Read (and delete) every dead-letter queue's messages into the ledger."""
        for url in self.dead_letter_queues:
            while True:
                messages = self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                                    WaitTimeSeconds=0).get("Messages", [])
                if not messages:
                    break
                for message in messages:
                    body = json.loads(message["Body"])
                    attributes = {k: v.get("StringValue") for k, v in message.get("MessageAttributes", {}).items()}
                    event_id = (body.get("detail") or {}).get("id") if isinstance(body, dict) else None
                    with self.ledger.lock:
                        why = attributes.get("inferbus-reason") or attributes.get("ERROR_MESSAGE") or "no reason given"
                        self.ledger.kept.setdefault(str(event_id), f"dead-letter queue {url.rsplit('/', 1)[-1]}: {why}")
                self.sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                                                                     for n, m in enumerate(messages)])


# -- checks -----------------------------------------------------------------------------------------

def chained_expected(pipeline: Pipeline, sinks: Sinks, ledger: Ledger) -> dict[str, set[str]]:
    """Valid input id -> the workflows its component's result is routed to (whichever takes it)."""
    expected: dict[str, set[str]] = {}
    for input_id, component in ledger.valid.items():
        producer = next(c for c in pipeline.producers if c.name == component)
        takers = set().union(*(sinks.takers.get((t, producer.result_source), set()) for t in producer.result_types))
        if takers:
            expected[input_id] = takers
    return expected


def balance(pipeline: Pipeline, sinks: Sinks, ledger: Ledger) -> dict[str, Any]:
    """Each ledger's missing entries (empty lists when it balances)."""
    with ledger.lock:
        no_result = [i for i, c in ledger.valid.items() if ledger.results.get((c, i), 0) == 0]
        chains = chained_expected(pipeline, sinks, ledger)
        no_outcome = [i for i, takers in chains.items() if not ledger.chained.get(i, set()) & takers]
        return {
            "valid_without_result": sorted(no_result),
            "valid_failed": sorted(i for i in ledger.failures if i in ledger.valid),
            "routed_without_outcome": sorted(no_outcome),
            "routed_on": len(chains),
            "invalid_not_kept": sorted(set(ledger.invalid) - set(ledger.kept)),
            "foreign_not_arrived": sorted(ledger.foreign - ledger.arrived),
            "foreign_kept_as_invalid": sorted(ledger.kept_foreign),
            "duplicate_results": sum(n - 1 for n in ledger.results.values() if n > 1),
        }


def balanced(missing: dict[str, Any]) -> bool:
    return not any(value for key, value in missing.items() if isinstance(value, list))


def remembered(endpoint: str, outputs: dict[str, str]) -> dict[str, int]:
    """What serve still remembers of the events it took: claims in the idempotency table, events in the bus's archives."""
    dynamodb, events = client("dynamodb", endpoint), client("events", endpoint)
    claims = sum(page["Count"] for page in dynamodb.get_paginator("scan").paginate(
        TableName=outputs[IDEMPOTENCY_TABLE_OUTPUT], Select="COUNT"))
    archived = sum(events.describe_archive(ArchiveName=archive["ArchiveName"])["EventCount"]
                   for archive in events.list_archives()["Archives"])
    return {"claims": claims, "archived": archived}


def queues_left(sqs: Any) -> dict[str, int]:
    """Every queue on the server with messages (visible or in flight), and how many."""
    left = {}
    for url in sqs.list_queues().get("QueueUrls", []):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"])["Attributes"]
        count = sum(int(value) for value in attributes.values())
        if count:
            left[url.rsplit("/", 1)[-1]] = count
    return left


# -- the soak ---------------------------------------------------------------------------------------

@dataclass
class Sample:
    at_s: float
    rss_mb: float
    put_ms: list[float] = field(default_factory=list)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def rss_slope_mb_per_min(samples: list[Sample]) -> float:
    """Least-squares slope of resident memory over the samples given, in MB per minute."""
    if len(samples) < 2:
        return 0.0
    xs, ys = [s.at_s / 60 for s in samples], [s.rss_mb for s in samples]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread if spread else 0.0


def soak(args: argparse.Namespace) -> dict[str, Any]:
    pipeline = load_pipeline()
    shares = dict(valid=args.valid, invalid=args.invalid, foreign=args.foreign)
    with tempfile.TemporaryDirectory() as scratch, \
            served(args.template, Path(scratch) / "serve.log", args.retention) as (ready, process):
        endpoint, outputs = ready["endpoint"], ready["outputs"]
        events, sqs = client("events", endpoint), client("sqs", endpoint)
        ledger = Ledger()
        sinks = Sinks(endpoint, pipeline, outputs, ledger)
        sinks.start()
        traffic = Traffic(pipeline, outputs[EVENT_BUS_NAME_OUTPUT], ledger, shares)
        samples = [Sample(0.0, rss_mb(process.pid))]
        cpu_before = cpu_s(process.pid)
        failed_entries = 0
        began = time.monotonic()
        total = min(args.count, int(args.rate * args.duration))
        for put in range(0, total, BATCH):
            due = began + put / args.rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            if time.monotonic() - began > args.duration + 1:
                break  # bounded in time too, if the server cannot take the rate
            entries = [traffic.next() for _ in range(min(BATCH, total - put))]
            started = time.perf_counter()
            failed_entries += events.put_events(Entries=entries)["FailedEntryCount"]
            elapsed_s = time.monotonic() - began
            if elapsed_s - samples[-1].at_s >= SAMPLE_EVERY_S:
                samples.append(Sample(elapsed_s, rss_mb(process.pid)))
            samples[-1].put_ms.append((time.perf_counter() - started) * 1000)
        driven_s = time.monotonic() - began
        settle_began = time.monotonic()
        while time.monotonic() - settle_began < args.settle:
            missing = balance(pipeline, sinks, ledger)
            if balanced(missing) and not queues_left(sqs):  # the last kept event may still be on its way out
                break
            time.sleep(1.0)
        settle_s = time.monotonic() - settle_began
        sinks.stop()
        sinks.dead_letters()
        missing = balance(pipeline, sinks, ledger)
        left = queues_left(sqs)
        samples.append(Sample(time.monotonic() - began, rss_mb(process.pid)))
        used_s = cpu_s(process.pid) - cpu_before
        kept = {"after_load": remembered(endpoint, outputs)}
        if args.retention is not None:
            deadline = time.monotonic() + args.retention + FORGET_MARGIN_S  # the last claims were written by now
            while True:
                kept["after_window"] = remembered(endpoint, outputs)
                if not kept["after_window"]["claims"] or time.monotonic() >= deadline:
                    break
                time.sleep(1.0)
            kept["after_window_rss_mb"] = round(rss_mb(process.pid), 1)
    figures = report(args, samples, ledger, missing, left, failed_entries, traffic.count, driven_s, settle_s)
    figures["server_cpu_ms_per_event"] = round(used_s * 1000 / max(traffic.count, 1), 2)
    figures["retention_s"], figures["remembered"] = args.retention, kept
    return figures


def report(args: argparse.Namespace, samples: list[Sample], ledger: Ledger, missing: dict[str, Any], left: dict[str, int],
           failed_entries: int, sent: int, driven_s: float, settle_s: float) -> dict[str, Any]:
    window = min(60.0, driven_s / 3)  # "first" and "last" minute, or third of a shorter run
    first = [ms for s in samples if s.at_s <= window for ms in s.put_ms]
    last = [ms for s in samples if driven_s - window <= s.at_s <= driven_s for ms in s.put_ms]
    warm = [s for s in samples if s.at_s >= window]  # after the first minute: models loaded, pools made
    middle = min(samples, key=lambda s: abs(s.at_s - driven_s / 2))
    return {
        "rate": args.rate, "duration_s": args.duration, "sent": sent, "achieved_per_s": round(sent / driven_s, 1),
        "kinds": {"valid": len(ledger.valid), "invalid": len(ledger.invalid), "foreign": len(ledger.foreign)},
        "failed_entries": failed_entries, "settle_s": round(settle_s, 1),
        "missing": {k: (len(v) if isinstance(v, list) else v) for k, v in missing.items()},
        "missing_examples": {k: v[:5] for k, v in missing.items() if isinstance(v, list) and v},
        "balanced": balanced(missing) and not left, "queues_left": left,
        "routed": dict(ledger.routed), "reviews": dict(ledger.reviews),
        "kept_reasons": dict(Counter(reason.split(": ", 1)[0] for reason in ledger.kept.values()).most_common()),
        "rss_mb": {"start": round(samples[0].rss_mb, 1), "after_first_window": round(warm[0].rss_mb if warm else 0, 1),
                   "middle": round(middle.rss_mb, 1), "end": round(samples[-1].rss_mb, 1),
                   "slope_after_first_window_mb_per_min": round(rss_slope_mb_per_min(warm), 2),
                   # a slope that falls from the first half to the second is memory levelling off, not a leak
                   "slope_second_half_mb_per_min": round(rss_slope_mb_per_min([s for s in samples if s.at_s >= driven_s / 2]), 2)},
        "put_ms": {"window_s": round(window), "first_p50": round(percentile(first, 0.5), 1),
                   "first_p99": round(percentile(first, 0.99), 1), "last_p50": round(percentile(last, 0.5), 1),
                   "last_p99": round(percentile(last, 0.99), 1),
                   "last_over_first_p50": round(percentile(last, 0.5) / max(percentile(first, 0.5), 1e-9), 2)},
    }


def print_soak(figures: dict[str, Any]) -> None:
    rss, put, missing = figures["rss_mb"], figures["put_ms"], figures["missing"]
    print(f"inferbus soak: {figures['sent']:,} events put in PutEvents of {BATCH} at {figures['achieved_per_s']}/s "
          f"(asked {figures['rate']}/s for {figures['duration_s']} s): {figures['kinds']}; "
          f"{figures['failed_entries']} entries refused; settled {figures['settle_s']} s after the last put")
    print(f"ledgers: {'BALANCED' if figures['balanced'] else 'NOT BALANCED'}")
    for key, value in missing.items():
        print(f"  {key:<26} {value}")
    for key, value in figures["missing_examples"].items():
        print(f"  e.g. {key}: {value}")
    print(f"  queues left with messages: {figures['queues_left'] or 'none'}")
    print(f"  routed on: {figures['routed']}; reviews answered: {figures['reviews']}")
    print(f"  where invalid events were kept: {figures['kept_reasons']}")
    print(f"resident memory (MB): start {rss['start']}, after the first {put['window_s']} s {rss['after_first_window']}, "
          f"middle {rss['middle']}, end {rss['end']}; slope after the first {put['window_s']} s "
          f"{rss['slope_after_first_window_mb_per_min']} MB/min, over the second half {rss['slope_second_half_mb_per_min']} MB/min")
    print(f"PutEvents (ms): first {put['window_s']} s p50 {put['first_p50']} p99 {put['first_p99']}; "
          f"last {put['window_s']} s p50 {put['last_p50']} p99 {put['last_p99']}; last/first p50 {put['last_over_first_p50']}×")
    print(f"server CPU (user + system) per event put, its whole processing included: {figures['server_cpu_ms_per_event']} ms")
    kept = figures["remembered"]
    print(f"remembered at the end of the load: {kept['after_load']}" + (
        f"; {figures['retention_s']} s after it (--retention): {kept.get('after_window')}, "
        f"resident memory {kept.get('after_window_rss_mb')} MB" if figures["retention_s"] is not None else
        " (serve's default retention)"))


# -- the burst --------------------------------------------------------------------------------------

@dataclass
class BurstFigures:
    server: str
    events: int
    put_s: float
    put_per_s: float
    put_p50_ms: float
    last_result_after_s: float | None  # after the last put returned; None: nothing consumes (plain moto)
    delivered: int
    server_cpu_ms_per_event: float = 0.0  # from the first put to the last result


def burst_on(endpoint: str, bus: str, entries: list[dict[str, Any]], watch: str, expected: set[str] | None,
             timeout_s: float, server: str) -> BurstFigures:
    """Put ``entries`` as fast as one client can, then wait for ``expected`` subjects (or every message) on ``watch``."""
    events, sqs = client("events", endpoint), client("sqs", endpoint)
    seen: set[str] = set()
    count = [0]
    done = threading.Event()

    def drain() -> None:
        reader = client("sqs", endpoint)
        while not done.is_set():
            try:
                messages = reader.receive_message(QueueUrl=watch, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
            except Exception:  # noqa: BLE001 - the server stopped under a last long poll
                if done.is_set():
                    return
                raise
            for message in messages:
                detail = json.loads(message["Body"]).get("detail", {})
                seen.add(str(detail.get("subject")))
                count[0] += 1
            if messages:
                reader.delete_message_batch(QueueUrl=watch, Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                                                                     for n, m in enumerate(messages)])

    threading.Thread(target=drain, daemon=True).start()
    latencies = []
    began = time.perf_counter()
    for start in range(0, len(entries), BATCH):
        sent = time.perf_counter()
        events.put_events(Entries=[e | {"EventBusName": bus} for e in entries[start:start + BATCH]])
        latencies.append((time.perf_counter() - sent) * 1000)
    put_s = time.perf_counter() - began
    last_put = time.perf_counter()
    target = len(entries) if expected is None else len(expected)
    while time.perf_counter() - last_put < timeout_s:
        if (count[0] if expected is None else len(seen & expected)) >= target:
            break
        time.sleep(0.05)
    arrived = count[0] if expected is None else len(seen & expected)
    lag = time.perf_counter() - last_put
    done.set()
    return BurstFigures(server, len(entries), round(put_s, 2), round(len(entries) / put_s, 1),
                        round(statistics.median(latencies), 1), round(lag, 2) if arrived >= target else None, arrived)


@contextmanager
def plain_moto(log: Path) -> Iterator[tuple[str, int]]:
    """moto's own server, nothing of inferbus: the baseline for what one client can put."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port)], stdout=out,
                                   stderr=subprocess.STDOUT)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        began = time.monotonic()
        while time.monotonic() - began < 60:
            try:
                client("sqs", endpoint).list_queues()
                break
            except Exception:  # noqa: BLE001 - not listening yet
                time.sleep(0.2)
        yield endpoint, process.pid
    finally:
        stop(process)


def burst(args: argparse.Namespace) -> list[BurstFigures]:
    pipeline = load_pipeline()
    figures = []
    with tempfile.TemporaryDirectory() as scratch:
        with served(args.template, Path(scratch) / "serve.log") as (ready, process):
            endpoint, bus = ready["endpoint"], ready["outputs"][EVENT_BUS_NAME_OUTPUT]
            events, sqs = client("events", endpoint), client("sqs", endpoint)
            sources = sorted(c.result_source for c in pipeline.producers)
            watch = own_queue(events, sqs, bus, "burst-results", {"source": sources})
            for run in range(args.runs):
                ledger = Ledger()
                traffic = Traffic(pipeline, bus, ledger, {"valid": 1})
                entries = [traffic.next() for _ in range(args.burst)]
                before = cpu_s(process.pid)
                result = burst_on(endpoint, bus, entries, watch, set(ledger.valid), args.settle, f"inferbus serve, run {run + 1}")
                result.server_cpu_ms_per_event = round((cpu_s(process.pid) - before) * 1000 / len(entries), 2)
                figures.append(result)
        with plain_moto(Path(scratch) / "moto.log") as (endpoint, pid):
            events, sqs = client("events", endpoint), client("sqs", endpoint)
            events.create_event_bus(Name="plain")
            watch = own_queue(events, sqs, "plain", "burst-results", {"source": [SOAK_SOURCE]})
            traffic = Traffic(pipeline, "plain", Ledger(), {"valid": 1})
            entries = [traffic.next() for _ in range(args.burst)]
            before = cpu_s(pid)
            baseline = burst_on(endpoint, "plain", entries, watch, None, args.settle, "plain moto server (baseline)")
            baseline.server_cpu_ms_per_event = round((cpu_s(pid) - before) * 1000 / len(entries), 2)
            figures.append(baseline)
    return figures


def print_burst(figures: list[BurstFigures]) -> None:
    baseline = figures[-1]
    print(f"inferbus burst: {baseline.events:,} events from one boto3 client in PutEvents of {BATCH}")
    print(f"{'server':<30} {'put s':>7} {'events/s':>9} {'put p50 ms':>11} {'last result after last put s':>29} "
          f"{'events/s vs baseline':>21} {'server CPU ms/event':>20}")
    for figure in figures:
        lag = "—" if figure.last_result_after_s is None and figure is baseline else (
            f"{figure.last_result_after_s}" if figure.last_result_after_s is not None else f"not all ({figure.delivered})")
        print(f"{figure.server:<30} {figure.put_s:>7} {figure.put_per_s:>9} {figure.put_p50_ms:>11} {lag:>29} "
              f"{figure.put_per_s / baseline.put_per_s:>20.2f}× {figure.server_cpu_ms_per_event:>20}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=100.0, help="events per second (default 100)")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    parser.add_argument("--count", type=int, default=10**9, help="at most this many events (default: rate × duration)")
    parser.add_argument("--valid", type=int, default=8, help="share of valid events (default 8 in 10)")
    parser.add_argument("--invalid", type=int, default=1, help="share of invalid events (default 1 in 10)")
    parser.add_argument("--foreign", type=int, default=1, help="share of foreign events (default 1 in 10)")
    parser.add_argument("--settle", type=float, default=180.0, help="most seconds to wait for the ledgers after the last put")
    parser.add_argument("--burst", type=int, help="instead of a soak: put this many events at once (e.g. 2000)")
    parser.add_argument("--runs", type=int, default=1, help="bursts in a row on the same server (default 1)")
    parser.add_argument("--template", type=Path, help="a synthesized template (default: synthesize the app)")
    parser.add_argument("--retention", type=int, help="serve's --retention in seconds (default serve's: 1 hour), then "
                        "wait for the claims and archived events to leave it")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.burst:
        figures = burst(args)
        print(json.dumps([asdict(f) for f in figures])) if args.json else print_burst(figures)
        return 0
    soaked = soak(args)
    print(json.dumps(soaked)) if args.json else print_soak(soaked)
    return 0 if soaked["balanced"] else 1


if __name__ == "__main__":
    sys.exit(main())
