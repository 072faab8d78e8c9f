"""Chaos: send N events while a consumer fails on purpose, then account for every one of them.

The consumer (any declared one; the first by default) gets a fault plan (``INFERBUS_FAULTS``, see
``inferbus_lambda.faults``): a share of records fail with a transient error, a share of
invocations time out after claiming their records, a share die after publishing half their
results, a share die between publishing a group of results and completing its claims, and
DynamoDB throttles a share of claim and completion requests; and its event source delivers a
share of records twice. After the queues drain, the ledger must hold: every input id has a
result event, or its event sits in the dead-letter queue unprocessed; none has neither; and
results published more than once stay within the bound the faults allow: the results of each
group published just before a crash (at most 25), plus the records whose completion DynamoDB
would not take (their claims expire, so a later redelivery may publish them again). (A message
of an event that WAS processed can also end in the DLQ: a crash after publishing returns the
whole batch to the queue, and if its redeliveries keep failing the message is dead-lettered.
At-least-once delivery allows that; the ledger counts it apart, and a redrive skips it as a
duplicate.) Then, with the faults off, the DLQ is redriven and the ledger taken again.

Example
-------
>>> report = run_chaos(events=300)  # doctest: +SKIP
>>> report.balanced, report.processed_twice  # doctest: +SKIP
(True, 0)
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from inferbus_lambda.contracts import to_put_events_entry
from inferbus_lambda.faults import ENVIRONMENT_VARIABLE as FAULTS_VARIABLE

from infra.declarations import Consumer, Pipeline

SOURCE = "inferbus.chaos"


class ChaosError(ValueError):
    """A chaos run that cannot start: an unknown consumer, one without samples; the message says which."""


@dataclass(frozen=True)
class FaultRates:
    # Set so that what is observed clears 20 % transient errors, 5 % timeouts and 10 % duplicate
    # deliveries: a record that is a duplicate, or in a batch that timed out, draws no error.
    record_error_rate: float = 0.25
    timeout_rate: float = 0.06
    crash_after_publish_rate: float = 0.02
    # The exactly-once windows: a crash between publishing and completing, and DynamoDB throttling
    # claims (TransactWriteItems) and completions (BatchWriteItem); each request is tried 3 times.
    crash_before_complete_rate: float = 0.02
    claim_throttle_rate: float = 0.2
    complete_throttle_rate: float = 0.2
    duplicate_rate: float = 0.12
    latency_ms: float = 0.0

    def plan(self, seed: int) -> str:
        """The handler's ``INFERBUS_FAULTS`` value (the duplicates are the event source's)."""
        values = {key: value for key, value in asdict(self).items() if key != "duplicate_rate"}
        return json.dumps(values | {"seed": seed})


@dataclass
class Ledger:
    """Where each input id ended up."""

    processed_once: int = 0
    processed_twice: int = 0  # input ids with more than one result event
    repeated_results: int = 0  # result events beyond the first for an input id
    in_dead_letter_queue: int = 0  # not processed, waiting in the DLQ
    dead_lettered_after_processing: int = 0  # processed, and a redelivery of it sits in the DLQ
    lost: int = 0

    @classmethod
    def take(cls, sent: list[str], results: Counter[str], dead: set[str]) -> Ledger:
        ledger = cls()
        for event_id in sent:
            count, dead_lettered = results.get(event_id, 0), event_id in dead
            ledger.processed_once += count == 1
            ledger.processed_twice += count > 1
            ledger.repeated_results += max(count - 1, 0)
            ledger.in_dead_letter_queue += dead_lettered and not count
            ledger.dead_lettered_after_processing += dead_lettered and bool(count)
            ledger.lost += not count and not dead_lettered
        return ledger

    def balanced(self, events: int, repeat_bound: int = 0) -> bool:
        """Processed + waiting in the DLQ = every event sent; nothing lost; results repeated at most
        ``repeat_bound`` times (what the injected faults allow: see :attr:`ChaosReport.repeat_bound`)."""
        return (self.processed_once + self.processed_twice + self.in_dead_letter_queue == events and self.lost == 0
                and self.repeated_results <= repeat_bound)


@dataclass
class ChaosReport:
    consumer: str
    events: int
    rates: FaultRates
    seed: int
    ledger: Ledger = field(default_factory=Ledger)
    after_redrive: Ledger | None = None
    redriven: int = 0
    result_events: int = 0
    invocations: int = 0
    failed_invocations: dict[str, int] = field(default_factory=dict)  # by Lambda error type
    records_failed_by_injection: int = 0
    crashes_before_complete: int = 0  # invocations that died between a group's PutEvents and its completion
    results_before_complete: int = 0  # results those groups had published: they may be published again
    records_failed_by_claim_throttling: int = 0  # their claims could not be written: redelivered later
    claims_not_completed: int = 0  # published, but DynamoDB would not take the completion
    duplicates_delivered: int = 0
    duplicates_skipped: int = 0
    claims_expired: int = 0
    deliveries: int = 0
    seconds: float = 0.0

    @property
    def repeat_bound(self) -> int:
        """How many results the faults allow to repeat: each group published right before a crash
        (at most 25 results), and each published record whose completion could not be written."""
        return self.results_before_complete + self.claims_not_completed

    @property
    def balanced(self) -> bool:
        final = self.after_redrive or self.ledger
        return self.ledger.balanced(self.events, self.repeat_bound) and final.balanced(self.events, self.repeat_bound)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["repeat_bound"] = self.repeat_bound
        data["balanced"] = self.balanced
        return data


CRASH_BEFORE_COMPLETE = re.compile(r"injected crash after publishing (\d+) results, before completing their claims")


def published_before_crash(stack_trace: list[str]) -> int | None:
    """The results an invocation had published when it died before completing their claims (its
    Lambda log's stack trace says so), or ``None`` for any other end."""
    for line in stack_trace:
        found = CRASH_BEFORE_COMPLETE.search(line)
        if found:
            return int(found.group(1))
    return None


def chaos_consumer(pipeline: Pipeline, name: str | None) -> Consumer:
    """The declared consumer ``name`` (default: the first declared one with demo samples to send)."""
    consumers = [c for c in pipeline.consumers if c.demo is not None]
    if name is None:
        if not consumers:
            raise ChaosError("no declared consumer has demo samples to send")
        return consumers[0]
    found = [c for c in consumers if c.name == name]
    if not found:
        raise ChaosError(f"no consumer {name!r} with demo samples; consumers: {', '.join(c.name for c in consumers)}")
    return found[0]


def _results_and_dead_letters(pipeline: Any, consumer: Consumer, results: Counter[str]) -> set[str]:
    for delivered in pipeline.tapped_events():
        if delivered["detail-type"] == consumer.produces and delivered["source"] == consumer.result_source:
            results[delivered["detail"]["subject"]] += 1
    dlq_url = pipeline.consumer(consumer.name).dead_letter_queue_url
    return {json.loads(m["Body"])["detail"]["id"] for m in pipeline.peek(dlq_url)}


def chaos_overrides(consumer: Consumer, batch_size: int) -> dict[str, int]:
    """The consumer's batches this small: more invocations, so more of them can fail."""
    window = 0 if batch_size <= 10 else 1  # SQS takes more than 10 per batch only with a window
    return {f"{consumer.name}.batch_size": batch_size, f"{consumer.name}.max_batching_window_s": window}


def run_chaos(events: int = 5000, rates: FaultRates | None = None, *, consumer: str | None = None, seed: int = 7,
              redrive: bool = True, batch_size: int = 10, progress: Callable[[str, int, int], None] | None = None,
              template: dict[str, Any] | None = None) -> ChaosReport:
    """Send ``events`` samples through the faulty consumer, drain, take the ledger, redrive, take it again.

    ``consumer`` is a declared consumer's name (default: the first with demo samples);
    ``batch_size`` (1-10,000) sets its SQS batch for this run (default 10: many invocations,
    so the per-invocation faults happen often); ``template`` overrides it.
    """
    from pipeline import load_pipeline

    from inferbus.demo.inputs import sample_events
    from inferbus.local import LocalPipeline
    from inferbus.redrive import redrive as move_back

    declarations = load_pipeline()
    declared = chaos_consumer(declarations, consumer)
    assert declared.demo is not None
    rates = rates or FaultRates()
    report = ChaosReport(declared.name, events, rates, seed)
    notify = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    samples = [event for event, _ in sample_events(declared, min(declared.demo.limit, events), source=SOURCE)]
    notify("synthesize + provision", 0, 1)
    overrides = None if template is not None else chaos_overrides(declared, batch_size)
    with LocalPipeline(template, overrides=overrides, pipeline=declarations) as pipeline:
        notify("synthesize + provision", 1, 1)
        local = pipeline.consumer(declared.name)
        function, source = local.function, local.source
        function.set_environment(**{FAULTS_VARIABLE: rates.plan(seed)})
        source.redeliver(rates.duplicate_rate, seed=seed)

        sent = [f"chaos-{i}" for i in range(events)]
        entries = [
            to_put_events_entry(samples[i % len(samples)].model_copy(update={"id": event_id, "correlationid": event_id}),
                                pipeline.bus_name)
            for i, event_id in enumerate(sent)
        ]
        for start in range(0, events, 10):
            rejected = pipeline.put_events(entries[start : start + 10])
            if rejected:
                raise RuntimeError(f"the bus refused {len(rejected)} events")
            while pipeline.pump():  # keep the queue shallow: moto's SQS slows down as a queue grows
                pass
            notify("send", min(start + 10, events), events)
        pipeline.drain()
        notify("drain", 1, 1)

        results: Counter[str] = Counter()
        dead = _results_and_dead_letters(pipeline, declared, results)
        report.ledger = Ledger.take(sent, results, dead)
        report.invocations = len(function.invocations)
        report.failed_invocations = dict(Counter(i.error_type for i in function.invocations if i.error_type))
        report.records_failed_by_injection = sum(
            1 for line in function.logs if line.get("status") == "failed" and "injected fault" in line.get("reason", ""))
        report.records_failed_by_claim_throttling = sum(
            1 for line in function.logs if line.get("status") == "failed" and line.get("reason", "").startswith("claim:"))
        report.claims_not_completed = int(sum(function.metrics.get("ClaimsNotCompleted", [])))
        crashes = [published_before_crash(i.stack_trace) for i in function.invocations]
        report.crashes_before_complete = sum(1 for n in crashes if n is not None)
        report.results_before_complete = sum(n for n in crashes if n is not None)
        report.duplicates_delivered = source.duplicates_delivered
        report.duplicates_skipped = int(sum(function.metrics.get("DuplicatesSkipped", [])))
        report.claims_expired = source.expired_after_failures
        report.deliveries = source.deliveries

        if redrive and dead:
            function.set_environment(**{FAULTS_VARIABLE: ""})  # the incident is over
            source.redeliver(0.0)
            report.redriven = move_back(pipeline.sqs, local.dead_letter_queue_url, local.queue_url)
            pipeline.drain()
            notify("redrive", 1, 1)
            dead = _results_and_dead_letters(pipeline, declared, results)
            report.after_redrive = Ledger.take(sent, results, dead)
        report.result_events = sum(results.values())
    report.seconds = time.perf_counter() - started
    return report
