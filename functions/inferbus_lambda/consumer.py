"""The inference consumer: read the batch from its source, validate, claim, ONE batched inference,
publish, report.

It works on a :class:`~.sources.RecordSource` (how the channel's records are read, answered and
dead-lettered: SQS first) and a :class:`~.claims.ClaimStore` (the exactly-once claims: DynamoDB
first), never on one channel's or store's own formats. Every record of a batch ends with
exactly one :class:`RecordOutcome`:

=================  ==========  ====================================================
status             reported    meaning
=================  ==========  ====================================================
``published``      success     scored; its result event is on the bus
``duplicate``      success     scored and published by an earlier delivery
``rejected``       success     breaks its contract (or reuses an id): sent to the
                               invalid-events destination with the reason
``dead_lettered``  success     failed on its last attempt: set aside by the
                               consumer itself, with the reason (SQS: its DLQ)
``invalid``        failure     breaks its contract and could not be sent there;
                               retried, then dead-lettered
``conflict``       failure     same id as an earlier event, different data (ditto)
``in_progress``    failure     another invocation holds it; redelivered later
``failed``         failure     inference or publishing failed (the claim is
                               released); or the claim could not be written
``waiting``        failure     ordered channel: an earlier record of its group
                               failed, so it is not processed; redelivered after it
=================  ==========  ====================================================

Ordered channels (records with a ``group``, an SQS FIFO queue's message group) follow
Lambda's FIFO rules: the records of one group are processed in delivery order and, once one
fails, the group's later records of the batch are not processed but returned with it
(``waiting``), so no result overtakes an earlier one. The batch runs in rounds (round *k*:
the *k*-th record of every group still going), each round one inference and its publishing,
so an ordered batch costs one model call per record of its longest group.

A batch costs few requests: its claims are one store request per 100 records (DynamoDB:
``TransactWriteItems``); results are published in groups of whole ``PutEvents`` requests (at
most 25 results), and each group's claims are completed in one request right after it is
published. So a crash between publishing and completing repeats at most one group's results
(with the same derived ids), and a throttled store fails only the records it concerns.

A handler does not build one itself: :func:`inferbus_lambda.handlers.consumer_handler` does,
around the handler's ``infer``.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit

from .claims import COMPLETE_BATCH, ClaimStatus, ClaimStore
from .contracts.core import (
    CloudEvent,
    EventData,
    from_eventbridge_event,
    new_event,
    result_event_id,
    to_put_events_entry,
)
from .errors import IdConflictError, InvalidEventError
from .metric_names import (
    BATCH_SIZE,
    CLAIMS_NOT_COMPLETED,
    DUPLICATES_SKIPPED,
    EVENT_LATENCY_MS,
    PROCESSING_MS,
    RECORDS_DEAD_LETTERED,
    RECORDS_FAILED,
    RECORDS_LET_THROUGH,
    RECORDS_OVER_RATE,
    RECORDS_PUBLISHED,
    RECORDS_REJECTED,
    age_ms,
)
from .publishing import PublishFailure, entry_size, plan_groups
from .rate_limit import TokenBucket, admit, backoff_s
from .rejections import DeadLetter, Rejection
from .sources import RecordSource, SourceRecord

__all__ = ["BatchReport", "InferenceConsumer", "RecordOutcome", "RecordStatus", "ordered_rounds", "result_event_id"]


class RecordStatus(str, enum.Enum):
    """How one record of a batch ended (see the module's table); the value is what the logs say."""

    PUBLISHED = "published"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"
    DEAD_LETTERED = "dead_lettered"
    INVALID = "invalid"
    CONFLICT = "conflict"
    IN_PROGRESS = "in_progress"
    FAILED = "failed"
    WAITING = "waiting"

    def __str__(self) -> str:
        return self.value


SUCCESS_STATUSES = frozenset({RecordStatus.PUBLISHED, RecordStatus.DUPLICATE, RecordStatus.REJECTED,
                              RecordStatus.DEAD_LETTERED})
REJECTABLE = {RecordStatus.INVALID: InvalidEventError.__name__, RecordStatus.CONFLICT: IdConflictError.__name__}
CLAIM_UNAVAILABLE = "claim: the idempotency table throttled the request; retried later"
# A claim that was not taken -> the record's outcome and reason.
CLAIM_OUTCOMES = {
    ClaimStatus.ALREADY_DONE: (RecordStatus.DUPLICATE, "already processed"),
    ClaimStatus.IN_PROGRESS: (RecordStatus.IN_PROGRESS, "claimed by another invocation"),
    ClaimStatus.CONFLICT: (RecordStatus.CONFLICT, IdConflictError.REASON),
    ClaimStatus.UNAVAILABLE: (RecordStatus.FAILED, CLAIM_UNAVAILABLE),
}


@dataclass(frozen=True)
class RecordOutcome:
    """One record's end: its id in the channel, its status and why, the event and its result."""

    record_id: str
    status: RecordStatus
    reason: str = ""
    event_id: str | None = None
    correlationid: str | None = None
    result_id: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.status in SUCCESS_STATUSES


@dataclass
class BatchReport:
    """What happened to each record of one batch, by record id.

    Attributes
    ----------
    outcomes
        One per record.
    claims_unavailable
        Records failed because their claim could not be written (the store throttled).
    claims_not_completed
        Records published whose completion could not be written (the store throttled): their
        claims expire, so a redelivery after that would publish them again.
    """

    outcomes: dict[str, RecordOutcome] = field(default_factory=dict)
    claims_unavailable: int = 0
    claims_not_completed: int = 0

    def add(self, outcome: RecordOutcome) -> None:
        self.outcomes[outcome.record_id] = outcome

    def count(self, status: RecordStatus) -> int:
        return sum(1 for outcome in self.outcomes.values() if outcome.status is status)

    @property
    def failed(self) -> list[RecordOutcome]:
        return [outcome for outcome in self.outcomes.values() if not outcome.succeeded]

    @property
    def failed_ids(self) -> list[str]:
        """The records that must come back (what the source's batch response names)."""
        return [outcome.record_id for outcome in self.failed]


def event_age_ms(event: CloudEvent[Any]) -> float:
    """Event latency: now minus the event's ``time``, in milliseconds (never negative: clocks differ)."""
    return age_ms(event.time)


# Quoted: a generic pydantic model subscripted at import builds its validator then (cold init).
Parse = Callable[[str], "CloudEvent[Any]"]
# One result per event, in order; an exception in a result's place fails that record alone.
Infer = Callable[[Sequence["CloudEvent[Any]"]], Sequence["EventData | Exception"]]
Publish = Callable[[Sequence[dict[str, Any]]], list[PublishFailure]]
Reject = Callable[[Sequence[Rejection]], set[str]]


def ordered_rounds(records: Sequence[SourceRecord]) -> list[list[SourceRecord]]:
    """The batch in rounds: round *k* holds the *k*-th record of each group, in delivery order;
    records without a group all go in the first round (nothing orders them).

    >>> batch = [SourceRecord(i, "{}", group=g) for i, g in [("a1", "a"), ("b1", "b"), ("a2", "a"), ("u", None)]]
    >>> [[record.record_id for record in round_] for round_ in ordered_rounds(batch)]
    [['a1', 'b1', 'u'], ['a2']]
    """
    rounds: list[list[SourceRecord]] = []
    seen: dict[str, int] = {}
    for record in records:
        position = 0
        if record.group is not None:
            position = seen.get(record.group, 0)
            seen[record.group] = position + 1
        if position == len(rounds):
            rounds.append([])
        rounds[position].append(record)
    return rounds


def expect_type(*event_types: str) -> Parse:
    """A parser that reads the CloudEvent from a record's body and accepts only ``event_types``."""

    def parse(body: str) -> CloudEvent[Any]:
        event = from_eventbridge_event(body)
        if event.type not in event_types:
            raise InvalidEventError(f"type: this consumer takes {', '.join(event_types)}, not {event.type!r}", event.id)
        return event

    return parse


class InferenceConsumer:
    """One consumer's batch pipeline, with its channel, store and AWS calls passed in.

    Parameters
    ----------
    source
        The channel's records, answer and dead-lettering (:class:`~.sources.RecordSource`).
    parse
        Record body -> validated CloudEvent; raises :class:`InvalidEventError`.
    infer
        Claimed events -> one result ``data`` per event, in order, from ONE model call; an
        exception in a result's place fails that record alone (its claim is released).
    claims
        The exactly-once claims (:class:`~.claims.ClaimStore`).
    publish
        PutEvents entries -> the ones that failed (see ``publishing.publish_events``).
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
        Invalid records -> the ids that could not be sent to the invalid-events destination
        (see ``rejections.send_rejections``). ``None``: invalid records fail and are retried
        until they are dead-lettered.
    rate_limit
        The consumer's token bucket (``MAX_EVENTS_PER_SECOND``), shared by its invocations: records it
        grants no token go back to the channel with a backoff, unless on their last attempt. ``None``: no rate.
    """

    def __init__(
        self,
        *,
        source: RecordSource,
        parse: Parse,
        infer: Infer,
        claims: ClaimStore,
        publish: Publish,
        result_source: str,
        bus_name: str,
        metrics: Any,
        logger: Logger,
        reject: Reject | None = None,
        rate_limit: TokenBucket | None = None,
    ) -> None:
        self.source = source
        self.rate_limit = rate_limit
        self.logger = logger
        self.reject = reject
        self.parse = parse
        self.infer = infer
        self.claims = claims
        self.publish = publish
        self.result_source = result_source
        self.bus_name = bus_name
        self.metrics = metrics

    def handle(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        """The whole Lambda invocation: process the source's batch (the part the rate admits), answer which records
        must come back."""
        records, later = self.admit(self.source.records(event))
        report = self.process(records, remaining_ms=context.get_remaining_time_in_millis())
        return self.source.batch_response(report.failed_ids + [record.record_id for record in later])

    def admit(self, records: Sequence[SourceRecord]) -> tuple[list[SourceRecord], list[SourceRecord]]:
        """The records the consumer's rate lets through now, and those sent back to the channel with a backoff
        (see :mod:`.rate_limit`); without a rate, all now."""
        if self.rate_limit is None or not records:
            return list(records), []
        granted = self.rate_limit.take(len(records))
        now, later = admit(records, granted, last_attempt=self.source.is_last_attempt)
        if later:
            self.source.return_later(later, delay_s=backoff_s(len(later), self.rate_limit.rate))
            self.metrics.add_metric(name=RECORDS_OVER_RATE, unit=MetricUnit.Count, value=len(later))
        if len(now) > granted:
            self.metrics.add_metric(name=RECORDS_LET_THROUGH, unit=MetricUnit.Count, value=len(now) - granted)
        return now, later

    def process(self, records: Sequence[SourceRecord], *, remaining_ms: int | None) -> BatchReport:
        """Every record's outcome; the records of one group in order (see the module's docstring)."""
        started = time.perf_counter()
        report = BatchReport()
        stopped: dict[str, str] = {}  # group -> the record that failed in it
        for round_records in ordered_rounds(records):
            going = []
            for record in round_records:
                if record.group is not None and record.group in stopped:
                    report.add(RecordOutcome(record.record_id, RecordStatus.WAITING,
                                             f"ordered: behind {stopped[record.group]}, which failed in its group"))
                else:
                    going.append(record)
            elapsed_ms = int((time.perf_counter() - started) * 1000)
            self._process_round(going, report, remaining_ms=None if remaining_ms is None else remaining_ms - elapsed_ms)
            for record in going:
                if record.group is not None and not report.outcomes[record.record_id].succeeded:
                    stopped.setdefault(record.group, record.record_id)
        self._record(report, batch_size=len(records), processing_ms=(time.perf_counter() - started) * 1000)
        return report

    def _process_round(self, records: Sequence[SourceRecord], report: BatchReport, *, remaining_ms: int | None) -> None:
        """Parse, claim, score, publish, reject and dead-letter ``records`` (at most one per group), into ``report``."""
        if not records:
            return
        parsed: list[tuple[str, CloudEvent[Any]]] = []
        for record in records:
            if record.problem is not None:  # the channel could read no event out of it
                report.add(RecordOutcome(record.record_id, RecordStatus.INVALID, f"body: {record.problem}"))
                continue
            try:
                parsed.append((record.record_id, self.parse(record.body)))
            except InvalidEventError as error:
                report.add(RecordOutcome(record.record_id, RecordStatus.INVALID, error.reason, error.event_id))
            except Exception as error:  # noqa: BLE001 - whatever a body holds, it fails only its own record
                reason = f"body: could not be read ({type(error).__name__}: {str(error)[:200]})"
                report.add(RecordOutcome(record.record_id, RecordStatus.INVALID, reason))
        for _, event in parsed:
            self.metrics.add_metric(name=EVENT_LATENCY_MS, unit=MetricUnit.Milliseconds, value=event_age_ms(event))

        claimed: list[tuple[str, CloudEvent[Any]]] = []
        statuses = self.claims.claim([event for _, event in parsed], remaining_ms=remaining_ms)
        for (record_id, event), status in zip(parsed, statuses, strict=True):
            if status is ClaimStatus.CLAIMED:
                claimed.append((record_id, event))
            else:
                outcome, reason = CLAIM_OUTCOMES[status]
                report.add(RecordOutcome(record_id, outcome, reason, event.id, event.correlationid))
                report.claims_unavailable += status is ClaimStatus.UNAVAILABLE
        if claimed:
            self._score_and_publish(claimed, report)
        if self.reject is not None:
            self._reject(report, {record.record_id: record.body for record in records})
        if self.source.dead_letters:
            self._dead_letter_last_attempts(report, records)

    def _fail(self, claimed: Sequence[tuple[str, CloudEvent[Any]]], reasons: Mapping[str, str], report: BatchReport) -> None:
        """Release the claims of records that failed (by record id -> reason), so a redelivery can take them."""
        self.claims.release([event for _, event in claimed])
        for record_id, event in claimed:
            report.add(RecordOutcome(record_id, RecordStatus.FAILED, reasons[record_id], event.id, event.correlationid))

    def _dead_letter_last_attempts(self, report: BatchReport, records: Sequence[SourceRecord]) -> None:
        """Set aside each record that failed on its last attempt, with its reason, and report it handled."""
        letters = []
        for record in records:
            outcome = report.outcomes[record.record_id]
            if not outcome.succeeded and self.source.is_last_attempt(record):
                letters.append(DeadLetter(outcome.record_id, outcome.status.value, outcome.reason, record.attempt,
                                          record.body, record.group))
        if not letters:
            return
        unsent = self.source.dead_letter(letters)
        for letter in letters:
            if letter.message_id not in unsent:
                outcome = report.outcomes[letter.message_id]
                report.add(RecordOutcome(outcome.record_id, RecordStatus.DEAD_LETTERED, f"{outcome.status}: {outcome.reason}",
                                         outcome.event_id, outcome.correlationid))
                self.logger.warning("record dead-lettered", extra={
                    "record_id": outcome.record_id, "status": str(outcome.status), "reason": outcome.reason,
                    "receives": letter.receives, "event_id": outcome.event_id, "correlation_id": outcome.correlationid})

    def _reject(self, report: BatchReport, bodies: Mapping[str, str]) -> None:
        assert self.reject is not None
        rejections = [
            Rejection(outcome.record_id, REJECTABLE[outcome.status], outcome.reason, outcome.event_id, bodies[outcome.record_id])
            for outcome in report.outcomes.values() if outcome.status in REJECTABLE and outcome.record_id in bodies
        ]
        if not rejections:
            return
        unsent = self.reject(rejections)
        for rejection in rejections:
            if rejection.message_id not in unsent:
                outcome = report.outcomes[rejection.message_id]
                report.add(RecordOutcome(outcome.record_id, RecordStatus.REJECTED, outcome.reason, outcome.event_id,
                                         outcome.correlationid))
                self.logger.warning("record rejected", extra={
                    "record_id": outcome.record_id, "error": rejection.error, "reason": outcome.reason,
                    "event_id": outcome.event_id, "correlation_id": outcome.correlationid})

    def _score_and_publish(self, claimed: list[tuple[str, CloudEvent[Any]]], report: BatchReport) -> None:
        inputs = [event for _, event in claimed]
        try:
            results = self.infer(inputs)
        except Exception as error:  # noqa: BLE001 - any model failure fails these records, not the batch
            self.logger.exception("inference failed", extra={"records": len(inputs)})
            self._fail(claimed, {record_id: f"inference: {error}" for record_id, _ in claimed}, report)
            return
        refused = {index for index, result in enumerate(results) if isinstance(result, Exception)}
        if refused:  # the model could not score these records: they fail alone
            self._fail([claimed[index] for index in refused],
                       {claimed[index][0]: f"inference: {results[index]}" for index in refused}, report)
            claimed = [pair for index, pair in enumerate(claimed) if index not in refused]
            results = [result for index, result in enumerate(results) if index not in refused]
            inputs = [event for _, event in claimed]

        result_events = [
            new_event(data, source=self.result_source, correlationid=event.correlationid, subject=event.id,
                      event_id=result_event_id(event.id, self.result_source, input_source=event.source))
            for event, data in zip(inputs, results, strict=True)
        ]
        self._publish_and_complete(claimed, result_events, report)

    def _publish_and_complete(self, claimed: list[tuple[str, CloudEvent[Any]]], result_events: list[CloudEvent[Any]],
                              report: BatchReport) -> None:
        """Publish in groups of whole PutEvents requests (at most 25 results) and complete each group's
        claims right after it is published: a crash between the two repeats at most that group."""
        entries = [to_put_events_entry(result, self.bus_name) for result in result_events]
        groups = plan_groups([entry_size(entry) for entry in entries], max_entries=COMPLETE_BATCH)
        for group in groups:
            failures = {failure.index: failure for failure in self.publish([entries[index] for index in group])}
            published = [index for position, index in enumerate(group) if position not in failures]
            not_completed = set(self.claims.complete(
                [(claimed[index][1], {"result_id": result_events[index].id}) for index in published]))
            for index in published:
                record_id, event = claimed[index]
                report.add(RecordOutcome(record_id, RecordStatus.PUBLISHED, "", event.id, event.correlationid,
                                         result_events[index].id))
            if not_completed:
                # Published, so reported done; the claims expire at the invocation's deadline and a
                # redelivery after that would publish again (the ClaimsNotCompleted metric counts them).
                report.claims_not_completed += len(not_completed)
            failed = {claimed[group[position]][0]: f"publish: {failure.error_code} {failure.error_message}".strip()
                      for position, failure in failures.items()}
            if failed:
                self._fail([claimed[group[position]] for position in failures], failed, report)

    def _record(self, report: BatchReport, *, batch_size: int, processing_ms: float) -> None:
        self.metrics.add_metric(name=PROCESSING_MS, unit=MetricUnit.Milliseconds, value=processing_ms)
        self.metrics.add_metric(name=BATCH_SIZE, unit=MetricUnit.Count, value=batch_size)
        self.metrics.add_metric(name=RECORDS_PUBLISHED, unit=MetricUnit.Count, value=report.count(RecordStatus.PUBLISHED))
        self.metrics.add_metric(name=DUPLICATES_SKIPPED, unit=MetricUnit.Count, value=report.count(RecordStatus.DUPLICATE))
        self.metrics.add_metric(name=RECORDS_REJECTED, unit=MetricUnit.Count, value=report.count(RecordStatus.REJECTED))
        self.metrics.add_metric(name=RECORDS_DEAD_LETTERED, unit=MetricUnit.Count,
                                value=report.count(RecordStatus.DEAD_LETTERED))
        self.metrics.add_metric(name=RECORDS_FAILED, unit=MetricUnit.Count, value=len(report.failed))
        if report.claims_not_completed:
            self.metrics.add_metric(name=CLAIMS_NOT_COMPLETED, unit=MetricUnit.Count, value=report.claims_not_completed)
        for outcome in report.failed:
            self.logger.warning(
                "record failed",
                extra={
                    "record_id": outcome.record_id,
                    "status": str(outcome.status),
                    "reason": outcome.reason,
                    "event_id": outcome.event_id,
                    "correlation_id": outcome.correlationid,
                },
            )
