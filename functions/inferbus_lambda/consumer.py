"""The SQS inference consumer: validate every record, claim, ONE batched inference, publish, report.

Every record of a batch ends with exactly one :class:`RecordOutcome`:

=================  ==========  ====================================================
status             reported    meaning
=================  ==========  ====================================================
``published``      success     scored; its result event is on the bus
``duplicate``      success     scored and published by an earlier delivery
``rejected``       success     breaks its contract (or reuses an id): sent to the
                               invalid-events destination with the reason
``dead_lettered``  success     failed on its last receive: sent to the DLQ by the
                               consumer itself, with the reason as attributes
``invalid``        failure     breaks its contract and could not be sent there;
                               retried, then in the DLQ
``conflict``       failure     same id as an earlier event, different data (ditto)
``in_progress``    failure     another invocation holds it; SQS redelivers it later
``failed``         failure     inference or publishing failed (or an injected fault),
                               the claim is released; or the claim could not be
                               written (throttled)
=================  ==========  ====================================================

A batch costs few requests: its claims are ONE ``TransactWriteItems`` per 100 records;
results are published in groups of whole ``PutEvents`` requests (at most 25 results), and
each group's claims are completed in ONE ``BatchWriteItem`` right after it is published.
So a crash between publishing and completing repeats at most one group's results (with the
same derived ids), and a throttled DynamoDB fails only the records it concerns.

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

from .contracts.core import CloudEvent, EventData, from_eventbridge_event, new_event, to_put_events_entry
from .errors import IdConflictError, InvalidEventError, TransientError
from .faults import FaultPlan, InjectedCrash, InjectedTimeout, inject_invocation_faults
from .idempotency import COMPLETE_BATCH, ClaimStatus, EventClaims
from .metric_names import (BATCH_SIZE, CLAIMS_NOT_COMPLETED, DUPLICATES_SKIPPED, EVENT_LATENCY_MS, PROCESSING_MS,
                           RECORDS_DEAD_LETTERED, RECORDS_FAILED, RECORDS_PUBLISHED, RECORDS_REJECTED)
from .publishing import PublishFailure, entry_size, plan_groups
from .rejections import DeadLetter, Rejection

__all__ = ["InferenceConsumer", "RecordOutcome", "BatchReport", "result_event_id"]

SUCCESS_STATUSES = frozenset({"published", "duplicate", "rejected", "dead_lettered"})
REJECTABLE = {"invalid": InvalidEventError.__name__, "conflict": IdConflictError.__name__}  # status -> error
# A claim that was not taken -> the record's outcome and reason.
CLAIM_OUTCOMES = {
    ClaimStatus.ALREADY_DONE: ("duplicate", "already processed"),
    ClaimStatus.IN_PROGRESS: ("in_progress", "claimed by another invocation"),
    ClaimStatus.CONFLICT: ("conflict", IdConflictError.REASON),
    ClaimStatus.UNAVAILABLE: ("failed", "claim: the idempotency table throttled the request; retried later"),
}


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
    claims_not_completed: int = 0  # published, but the completion could not be written (throttled)

    def add(self, outcome: RecordOutcome) -> None:
        self.outcomes[outcome.message_id] = outcome

    def partial_batch_response(self) -> dict[str, list[dict[str, str]]]:
        """The answer Lambda's SQS event source reads (``ReportBatchItemFailures``): the failed
        records' message ids, so only they come back; the rest are deleted from the queue."""
        return {"batchItemFailures": [{"itemIdentifier": outcome.message_id} for outcome in self.failed]}

    def count(self, status: str) -> int:
        return sum(1 for outcome in self.outcomes.values() if outcome.status == status)

    @property
    def failed(self) -> list[RecordOutcome]:
        return [outcome for outcome in self.outcomes.values() if not outcome.succeeded]


def _receive_count(record: Mapping[str, Any]) -> int:
    try:
        return int(record.get("attributes", {}).get("ApproximateReceiveCount", 1))
    except (TypeError, ValueError):
        return 1


def event_age_ms(event: CloudEvent[Any]) -> float:
    """Event latency: now minus the event's ``time``, in milliseconds (never negative: clocks differ)."""
    return age_ms(event.time)


def age_ms(moment: datetime) -> float:
    """Now minus ``moment`` (timezone-aware), in milliseconds, never negative (clocks differ)."""
    return max(0.0, (datetime.now(UTC) - moment).total_seconds() * 1000)


def result_event_id(input_id: str, producer: str) -> str:
    """A result's id is derived from its input's, so a republished result is recognisably the same event."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"inferbus:{producer}:{input_id}"))


Parse = Callable[[str], CloudEvent[Any]]
Infer = Callable[[Sequence[CloudEvent[Any]]], Sequence[EventData]]
Publish = Callable[[Sequence[dict[str, Any]], FaultPlan | None], list[PublishFailure]]
Reject = Callable[[Sequence[Rejection]], set[str]]
DeadLetterSend = Callable[[Sequence[DeadLetter]], set[str]]


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
        PutEvents entries and the invocation's fault plan (if any) -> the ones that failed (see
        ``publishing.publish_events``).
    result_source
        ``source`` of the result events (this producer).
    bus_name
        Where the result events go.
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
    dead_letter, max_receive_count
        Records failing on their last receive (``ApproximateReceiveCount >= max_receive_count``)
        -> the message ids that could not be sent to the DLQ with their reason (see
        ``rejections.send_to_dead_letter_queue``). ``None``: SQS moves them, reason unknown.
    """

    def __init__(
        self,
        *,
        parse: Parse,
        infer: Infer,
        claims: EventClaims,
        publish: Publish,
        result_source: str,
        bus_name: str,
        metrics: Any,
        logger: Logger,
        reject: Reject | None = None,
        dead_letter: DeadLetterSend | None = None,
        max_receive_count: int | None = None,
    ) -> None:
        self.logger = logger
        self.reject = reject
        self.dead_letter = dead_letter
        self.max_receive_count = max_receive_count
        self.parse = parse
        self.infer = infer
        self.claims = claims
        self.publish = publish
        self.result_source = result_source
        self.bus_name = bus_name
        self.metrics = metrics

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """The whole Lambda invocation: process the SQS batch, answer with its partial batch response."""
        plan = inject_invocation_faults(timeouts=False)
        report = self.process(event["Records"], remaining_ms=context.get_remaining_time_in_millis(), faults=plan)
        return report.partial_batch_response()

    def process(self, records: Sequence[Mapping[str, Any]], *, remaining_ms: int | None,
                faults: FaultPlan | None = None) -> BatchReport:
        """Every record's outcome; ``faults`` injects a chaos experiment's faults (see :mod:`.faults`)."""
        started = time.perf_counter()
        report = BatchReport()
        bodies = {record["messageId"]: record["body"] for record in records}
        parsed: list[tuple[str, CloudEvent[Any]]] = []
        for record in records:
            try:
                parsed.append((record["messageId"], self.parse(record["body"])))
            except InvalidEventError as error:
                report.add(RecordOutcome(record["messageId"], "invalid", error.reason, error.event_id))
            except Exception as error:  # noqa: BLE001 - whatever a body holds, it fails only its own record
                reason = f"body: could not be read ({type(error).__name__}: {str(error)[:200]})"
                report.add(RecordOutcome(record["messageId"], "invalid", reason))
        for _, event in parsed:
            self.metrics.add_metric(name=EVENT_LATENCY_MS, unit=MetricUnit.Milliseconds, value=event_age_ms(event))

        claimed: list[tuple[str, CloudEvent[Any]]] = []
        statuses = self.claims.claim([event for _, event in parsed], remaining_ms=remaining_ms, faults=faults)
        for (message_id, event), status in zip(parsed, statuses, strict=True):
            if status is ClaimStatus.CLAIMED:
                claimed.append((message_id, event))
            else:
                outcome, reason = CLAIM_OUTCOMES[status]
                report.add(RecordOutcome(message_id, outcome, reason, event.id, event.correlationid))

        if faults and faults.draw(faults.timeout_rate):
            raise InjectedTimeout(f"injected timeout after claiming {len(claimed)} records")
        if faults:
            claimed = self._inject_record_errors(claimed, faults, report)
        if claimed:
            self._score_and_publish(claimed, report, faults)
        if self.reject is not None:
            self._reject(report, bodies)
        if self.dead_letter is not None and self.max_receive_count is not None:
            self._dead_letter_last_receives(report, records)
        self._record(report, batch_size=len(records), processing_ms=(time.perf_counter() - started) * 1000)
        return report

    def _fail(self, claimed: Sequence[tuple[str, CloudEvent[Any]]], reasons: Mapping[str, str], report: BatchReport,
              faults: FaultPlan | None) -> None:
        """Release the claims of records that failed (by event id -> reason), so a redelivery can take them."""
        self.claims.release([event for _, event in claimed], faults)
        for message_id, event in claimed:
            report.add(RecordOutcome(message_id, "failed", reasons[event.id], event.id, event.correlationid))

    def _dead_letter_last_receives(self, report: BatchReport, records: Sequence[Mapping[str, Any]]) -> None:
        """Send each record that failed on its last receive to the DLQ with its reason, and report it handled."""
        assert self.dead_letter is not None and self.max_receive_count is not None
        letters = []
        for record in records:
            outcome = report.outcomes[record["messageId"]]
            receives = _receive_count(record)
            if not outcome.succeeded and receives >= self.max_receive_count:
                letters.append(DeadLetter(outcome.message_id, outcome.status, outcome.reason, receives, record["body"]))
        if not letters:
            return
        unsent = self.dead_letter(letters)
        for letter in letters:
            if letter.message_id not in unsent:
                outcome = report.outcomes[letter.message_id]
                report.add(RecordOutcome(outcome.message_id, "dead_lettered", f"{outcome.status}: {outcome.reason}",
                                         outcome.event_id, outcome.correlationid))
                self.logger.warning("record dead-lettered", extra={
                    "message_id": outcome.message_id, "status": outcome.status, "reason": outcome.reason,
                    "receives": letter.receives, "event_id": outcome.event_id, "correlation_id": outcome.correlationid})

    def _inject_record_errors(self, claimed: list[tuple[str, CloudEvent[Any]]], faults: FaultPlan,
                              report: BatchReport) -> list[tuple[str, CloudEvent[Any]]]:
        failing = [pair for pair in claimed if faults.draw(faults.record_error_rate)]
        if failing:
            reason = str(TransientError(f"injected fault (record_error_rate={faults.record_error_rate})"))
            self._fail(failing, {event.id: reason for _, event in failing}, report, faults)
        failed = {message_id for message_id, _ in failing}
        return [pair for pair in claimed if pair[0] not in failed]

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

    def _score_and_publish(self, claimed: list[tuple[str, CloudEvent[Any]]], report: BatchReport,
                           faults: FaultPlan | None) -> None:
        inputs = [event for _, event in claimed]
        try:
            results = self.infer(inputs)
        except Exception as error:  # noqa: BLE001 - any model failure fails these records, not the batch
            self.logger.exception("inference failed", extra={"records": len(inputs)})
            self._fail(claimed, {event.id: f"inference: {error}" for event in inputs}, report, faults)
            return

        result_events = [
            new_event(data, source=self.result_source, correlationid=event.correlationid, subject=event.id,
                      event_id=result_event_id(event.id, self.result_source))
            for event, data in zip(inputs, results, strict=True)
        ]
        if faults and faults.draw(faults.crash_after_publish_rate):  # publish the first half, then die
            half = len(result_events) // 2
            self._publish_and_complete(claimed[:half], result_events[:half], report, faults, crash_in_group=None)
            raise InjectedCrash(f"injected crash after publishing {half} of {len(result_events)} results")
        self._publish_and_complete(claimed, result_events, report, faults,
                                   crash_in_group=-1 if faults and faults.draw(faults.crash_before_complete_rate) else None)

    def _publish_and_complete(self, claimed: list[tuple[str, CloudEvent[Any]]], result_events: list[CloudEvent[Any]],
                              report: BatchReport, faults: FaultPlan | None, *, crash_in_group: int | None) -> None:
        """Publish in groups of whole PutEvents requests (at most 25 results) and complete each group's
        claims right after it is published: a crash between the two repeats at most that group."""
        entries = [to_put_events_entry(result, self.bus_name) for result in result_events]
        groups = plan_groups([entry_size(entry) for entry in entries], max_entries=COMPLETE_BATCH)
        if crash_in_group is not None and faults is not None:
            crash_in_group = faults.pick(len(groups))
        for number, group in enumerate(groups):
            failures = {failure.index: failure for failure in self.publish([entries[index] for index in group], faults)}
            if number == crash_in_group:
                raise InjectedCrash(f"injected crash after publishing {len(group) - len(failures)} results, "
                                    "before completing their claims")
            published = [index for position, index in enumerate(group) if position not in failures]
            not_completed = set(self.claims.complete(
                [(claimed[index][1], {"result_id": result_events[index].id}) for index in published], faults))
            for index in published:
                message_id, event = claimed[index]
                report.add(RecordOutcome(message_id, "published", "", event.id, event.correlationid, result_events[index].id))
            if not_completed:
                # Published, so reported done; the claims expire at the invocation's deadline and a
                # redelivery after that would publish again (the ClaimsNotCompleted metric counts them).
                report.claims_not_completed += len(not_completed)
            failed = {claimed[group[position]][1].id: f"publish: {failure.error_code} {failure.error_message}".strip()
                      for position, failure in failures.items()}
            if failed:
                self._fail([claimed[group[position]] for position in failures], failed, report, faults)

    def _record(self, report: BatchReport, *, batch_size: int, processing_ms: float) -> None:
        self.metrics.add_metric(name=PROCESSING_MS, unit=MetricUnit.Milliseconds, value=processing_ms)
        self.metrics.add_metric(name=BATCH_SIZE, unit=MetricUnit.Count, value=batch_size)
        self.metrics.add_metric(name=RECORDS_PUBLISHED, unit=MetricUnit.Count, value=report.count("published"))
        self.metrics.add_metric(name=DUPLICATES_SKIPPED, unit=MetricUnit.Count, value=report.count("duplicate"))
        self.metrics.add_metric(name=RECORDS_REJECTED, unit=MetricUnit.Count, value=report.count("rejected"))
        self.metrics.add_metric(name=RECORDS_DEAD_LETTERED, unit=MetricUnit.Count, value=report.count("dead_lettered"))
        self.metrics.add_metric(name=RECORDS_FAILED, unit=MetricUnit.Count, value=len(report.failed))
        if report.claims_not_completed:
            self.metrics.add_metric(name=CLAIMS_NOT_COMPLETED, unit=MetricUnit.Count, value=report.claims_not_completed)
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
