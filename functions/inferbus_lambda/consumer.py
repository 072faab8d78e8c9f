"""The SQS inference consumer: validate every record, claim, ONE batched inference, publish, report.

Every record of a batch ends with exactly one :class:`RecordOutcome`:

=================  ==========  ====================================================
status             reported    meaning
=================  ==========  ====================================================
``published``      success     scored; its result event is on the bus
``duplicate``      success     scored and published by an earlier delivery
``rejected``       success     breaks its contract (or reuses an id): sent to the
                               invalid-events destination with the reason
``invalid``        failure     breaks its contract and could not be sent there;
                               retried, then in the DLQ
``conflict``       failure     same id as an earlier event, different data (ditto)
``in_progress``    failure     another invocation holds it; SQS redelivers it later
``failed``         failure     inference or publishing failed (or an injected fault);
                               the claim is released
=================  ==========  ====================================================

A handler does not build one itself: :func:`inferbus_lambda.handlers.consumer_handler` does,
around the handler's ``infer``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

from .contracts.core import CloudEvent, EventData, from_eventbridge_event, new_event
from .errors import IdConflictError, InvalidEventError, TransientError
from .faults import FaultPlan, InjectedCrash, InjectedTimeout, inject_invocation_faults
from .idempotency import ClaimStatus, EventClaims
from .metric_names import (BATCH_SIZE, DUPLICATES_SKIPPED, EVENT_LATENCY_MS, PROCESSING_MS, RECORDS_FAILED,
                           RECORDS_PUBLISHED, RECORDS_REJECTED)
from .publishing import PublishFailure
from .rejections import Rejection

__all__ = ["InferenceConsumer", "RecordFailedError", "RecordOutcome", "BatchReport", "result_event_id"]

SUCCESS_STATUSES = frozenset({"published", "duplicate", "rejected"})
REJECTABLE = {"invalid": InvalidEventError.__name__, "conflict": IdConflictError.__name__}  # status -> error


class RecordFailedError(Exception):
    """Raised for a failed record so the batch processor reports it; carries the reason."""


@dataclass(frozen=True)
class RecordOutcome:
    message_id: str
    status: str
    reason: str = ""
    event_id: str | None = None
    correlationid: str | None = None
    result_id: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status in SUCCESS_STATUSES


@dataclass
class BatchReport:
    """What happened to each record of one batch, by SQS message id."""

    outcomes: dict[str, RecordOutcome] = field(default_factory=dict)

    def add(self, outcome: RecordOutcome) -> None:
        self.outcomes[outcome.message_id] = outcome

    def check(self, record: Any) -> str:
        """Record handler for Powertools' batch processor: raise for a failed record."""
        outcome = self.outcomes[record.message_id]
        if not outcome.succeeded:
            raise RecordFailedError(f"{outcome.status}: {outcome.reason}")
        return outcome.status

    def count(self, status: str) -> int:
        return sum(1 for outcome in self.outcomes.values() if outcome.status == status)

    @property
    def failed(self) -> list[RecordOutcome]:
        return [outcome for outcome in self.outcomes.values() if not outcome.succeeded]


def event_age_ms(event: CloudEvent[Any]) -> float:
    """Event latency: now minus the event's ``time``, in milliseconds (never negative: clocks differ)."""
    return max(0.0, (datetime.now(UTC) - event.time).total_seconds() * 1000)


def result_event_id(input_id: str, producer: str) -> str:
    """A result's id is derived from its input's, so a republished result is recognisably the same event."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"inferbus:{producer}:{input_id}"))


Parse = Callable[[str], CloudEvent[Any]]
Infer = Callable[[Sequence[CloudEvent[Any]]], Sequence[EventData]]
Publish = Callable[[Sequence[CloudEvent[Any]]], list[PublishFailure]]
Reject = Callable[[Sequence[Rejection]], set[str]]


def expect_type(*event_types: str) -> Parse:
    """A parser that reads the CloudEvent from an SQS body and accepts only ``event_types``."""

    def parse(body: str) -> CloudEvent[Any]:
        event = from_eventbridge_event(body)
        if event.type not in event_types:
            raise InvalidEventError(f"type: this consumer takes {', '.join(event_types)}, not {event.type!r}", event.id)
        return event

    return parse


class InferenceConsumer:
    """One consumer's batch pipeline, with its AWS calls passed in.

    Parameters
    ----------
    parse
        SQS body -> validated CloudEvent; raises :class:`InvalidEventError`.
    infer
        Claimed events -> one result ``data`` per event, in order, from ONE model call.
    claims
        The idempotency claims.
    publish
        Result events -> the ones that failed (see ``publishing.publish_events``).
    result_source
        ``source`` of the result events (this producer).
    metrics
        A Powertools ``Metrics``; counts per status and the batch size are added.
    logger
        The handler's Powertools ``Logger``: failed records are logged through it, with the
        handler's service name (a module-level child logger would take the name of whichever
        service imported this module first).
    reject
        Invalid records -> the message ids that could not be sent to the invalid-events
        destination (see ``rejections.send_rejections``). ``None``: invalid records fail and
        are retried until the DLQ takes them.
    """

    def __init__(
        self,
        *,
        parse: Parse,
        infer: Infer,
        claims: EventClaims,
        publish: Publish,
        result_source: str,
        metrics: Any,
        logger: Logger,
        reject: Reject | None = None,
    ) -> None:
        self.logger = logger
        self.reject = reject
        self.processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
        self.parse = parse
        self.infer = infer
        self.claims = claims
        self.publish = publish
        self.result_source = result_source
        self.metrics = metrics

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """The whole Lambda invocation: process the SQS batch, answer with its partial batch response."""
        plan = inject_invocation_faults(timeouts=False)
        report = self.process(event["Records"], remaining_ms=context.get_remaining_time_in_millis(), faults=plan)
        return process_partial_response(event=event, record_handler=report.check, processor=self.processor, context=context)

    def process(self, records: Sequence[Mapping[str, Any]], *, remaining_ms: int | None,
                faults: FaultPlan | None = None) -> BatchReport:
        """Every record's outcome; ``faults`` injects a chaos experiment's faults (see :mod:`.faults`)."""
        started = time.perf_counter()
        report = BatchReport()
        bodies = {record["messageId"]: record["body"] for record in records}
        claimed: list[tuple[str, CloudEvent[Any]]] = []
        for record in records:
            message_id = record["messageId"]
            try:
                event = self.parse(record["body"])
            except InvalidEventError as error:
                report.add(RecordOutcome(message_id, "invalid", error.reason, error.event_id))
                continue
            self.metrics.add_metric(name=EVENT_LATENCY_MS, unit=MetricUnit.Milliseconds, value=event_age_ms(event))
            status = self.claims.claim(event, remaining_ms=remaining_ms)
            if status is ClaimStatus.CLAIMED:
                claimed.append((message_id, event))
            elif status is ClaimStatus.ALREADY_DONE:
                report.add(RecordOutcome(message_id, "duplicate", "already processed", event.id, event.correlationid))
            elif status is ClaimStatus.IN_PROGRESS:
                report.add(RecordOutcome(message_id, "in_progress", "claimed by another invocation", event.id, event.correlationid))
            else:
                report.add(RecordOutcome(message_id, "conflict", IdConflictError.REASON, event.id, event.correlationid))

        if faults and faults.draw(faults.timeout_rate):
            raise InjectedTimeout(f"injected timeout after claiming {len(claimed)} records")
        if faults:
            claimed = self._inject_record_errors(claimed, faults, report)
        if claimed:
            self._score_and_publish(claimed, report, crash=bool(faults and faults.draw(faults.crash_after_publish_rate)))
        if self.reject is not None:
            self._reject(report, bodies)
        self._record(report, batch_size=len(records), processing_ms=(time.perf_counter() - started) * 1000)
        return report

    def _inject_record_errors(self, claimed: list[tuple[str, CloudEvent[Any]]], faults: FaultPlan,
                              report: BatchReport) -> list[tuple[str, CloudEvent[Any]]]:
        kept = []
        for message_id, event in claimed:
            if faults.draw(faults.record_error_rate):
                error = TransientError(f"injected fault (record_error_rate={faults.record_error_rate})")
                self.claims.release(event, error)
                report.add(RecordOutcome(message_id, "failed", str(error), event.id, event.correlationid))
            else:
                kept.append((message_id, event))
        return kept

    def _reject(self, report: BatchReport, bodies: Mapping[str, str]) -> None:
        rejections = [
            Rejection(outcome.message_id, REJECTABLE[outcome.status], outcome.reason, outcome.event_id, bodies[outcome.message_id])
            for outcome in report.outcomes.values() if outcome.status in REJECTABLE
        ]
        if not rejections:
            return
        unsent = self.reject(rejections)
        for rejection in rejections:
            if rejection.message_id not in unsent:
                outcome = report.outcomes[rejection.message_id]
                report.add(RecordOutcome(outcome.message_id, "rejected", outcome.reason, outcome.event_id, outcome.correlationid))
                self.logger.warning("record rejected", extra={
                    "message_id": outcome.message_id, "error": rejection.error, "reason": outcome.reason,
                    "event_id": outcome.event_id, "correlation_id": outcome.correlationid})

    def _score_and_publish(self, claimed: list[tuple[str, CloudEvent[Any]]], report: BatchReport, *, crash: bool) -> None:
        inputs = [event for _, event in claimed]
        try:
            results = self.infer(inputs)
        except Exception as error:  # noqa: BLE001 - any model failure fails these records, not the batch
            self.logger.exception("inference failed", extra={"records": len(inputs)})
            for message_id, event in claimed:
                self.claims.release(event, error)
                report.add(RecordOutcome(message_id, "failed", f"inference: {error}", event.id, event.correlationid))
            return

        result_events = []
        for event, data in zip(inputs, results, strict=True):
            result = new_event(data, source=self.result_source, correlationid=event.correlationid, subject=event.id)
            result_events.append(result.model_copy(update={"id": result_event_id(event.id, self.result_source)}))
        # Claims are completed right after their results are published, so a crash later in
        # the batch leaves only unpublished records to redo.
        if crash:  # an injected crash: publish the first half, then die
            half = len(result_events) // 2
            self._complete(claimed[:half], result_events[:half], report)
            raise InjectedCrash(f"injected crash after publishing {half} of {len(result_events)} results")
        self._complete(claimed, result_events, report)

    def _complete(self, claimed: list[tuple[str, CloudEvent[Any]]], result_events: list[CloudEvent[Any]],
                  report: BatchReport) -> None:
        failures = {failure.index: failure for failure in self.publish(result_events)} if result_events else {}
        for index, ((message_id, event), result) in enumerate(zip(claimed, result_events, strict=True)):
            failure = failures.get(index)
            if failure is None:
                self.claims.complete(event, {"result_id": result.id})
                report.add(RecordOutcome(message_id, "published", "", event.id, event.correlationid, result.id))
            else:
                reason = f"publish: {failure.error_code} {failure.error_message}".strip()
                self.claims.release(event, RuntimeError(reason))
                report.add(RecordOutcome(message_id, "failed", reason, event.id, event.correlationid))

    def _record(self, report: BatchReport, *, batch_size: int, processing_ms: float) -> None:
        self.metrics.add_metric(name=PROCESSING_MS, unit=MetricUnit.Milliseconds, value=processing_ms)
        self.metrics.add_metric(name=BATCH_SIZE, unit=MetricUnit.Count, value=batch_size)
        self.metrics.add_metric(name=RECORDS_PUBLISHED, unit=MetricUnit.Count, value=report.count("published"))
        self.metrics.add_metric(name=DUPLICATES_SKIPPED, unit=MetricUnit.Count, value=report.count("duplicate"))
        self.metrics.add_metric(name=RECORDS_REJECTED, unit=MetricUnit.Count, value=report.count("rejected"))
        self.metrics.add_metric(name=RECORDS_FAILED, unit=MetricUnit.Count, value=len(report.failed))
        for outcome in report.failed:
            self.logger.warning(
                "record failed",
                extra={
                    "message_id": outcome.message_id,
                    "status": outcome.status,
                    "reason": outcome.reason,
                    "event_id": outcome.event_id,
                    "correlation_id": outcome.correlationid,
                },
            )
