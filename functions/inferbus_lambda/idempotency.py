"""Exactly-once claims on events, keyed by the CloudEvent ``id``, in DynamoDB, a whole batch at a time.

A consumer claims every record of an SQS batch in one ``TransactWriteItems`` request per 100
records (conditional Puts), and completes them in ``BatchWriteItem`` requests of 25, each
right after the ``PutEvents`` requests that published those results. So a batch of 100 costs
about 5 DynamoDB requests, not 200, and a crash between publishing and completing can repeat
at most the 25 results of one group.

A claim is ``INPROGRESS`` until :meth:`EventClaims.complete` (result published) or
:meth:`EventClaims.release` (processing failed, so a redelivery may claim it again). An
``INPROGRESS`` claim left by a crashed invocation expires with that invocation's remaining
time, so a redelivery after the timeout can claim it. A completed claim lives as long as the
longest way the same event can come back (DLQ retention, archive replay: the stack derives
``IDEMPOTENCY_TTL_SECONDS`` from the settings).

Each item: ``id`` (``<scope>#<event id>``), ``status``, ``expiration`` (epoch s, the table's
TTL), ``in_progress_expiration`` and ``claimed_at`` (epoch ms), ``validation`` (a hash of the event's ``data``,
so the same id with other data is a conflict) and ``result`` (JSON: the result's id, or the
workflow execution that owns it).

Throttling and errors are answered per record, never by failing the batch: a record whose
claim could not be written is :attr:`ClaimStatus.UNAVAILABLE` (report it failed; SQS brings
it back), a completion that could not be written leaves its claim to expire.

Example
-------
>>> claims = EventClaims("idempotency-table", scope="image-classifier", client=boto3.client("dynamodb"))  # doctest: +SKIP
>>> claims.claim(events, remaining_ms=context.get_remaining_time_in_millis())  # doctest: +SKIP
[<ClaimStatus.CLAIMED: 'claimed'>, <ClaimStatus.ALREADY_DONE: 'already_done'>]
"""

from __future__ import annotations

import enum
import hashlib
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .contracts.core import CloudEvent

if TYPE_CHECKING:
    from .faults import FaultPlan

__all__ = ["COMPLETE_BATCH", "CLAIM_BATCH", "ClaimStatus", "EventClaims", "data_hash"]

CLAIM_BATCH = 100  # TransactWriteItems takes at most 100 actions
COMPLETE_BATCH = 25  # BatchWriteItem takes at most 25 requests
IN_PROGRESS, COMPLETED = "INPROGRESS", "COMPLETED"
THROTTLED = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
                       "ThrottlingError", "ProvisionedThroughputExceeded", "InternalServerError",
                       "ServiceUnavailable"})
# A claim may be taken when there is none, when it has expired (TTL deletion can lag by days),
# or when it is in progress past its holder's deadline (a crashed invocation).
CLAIMABLE = ("attribute_not_exists(id) OR expiration < :now_s OR "
             "(#status = :in_progress AND in_progress_expiration < :now_ms)")
ACCEPTABLE = "attribute_not_exists(id) OR expiration < :now_s"


class ClaimStatus(enum.Enum):
    CLAIMED = "claimed"
    """This invocation owns the event: process it, then complete or release."""
    ALREADY_DONE = "already_done"
    """A result was published before (a duplicate delivery): skip it, report success."""
    IN_PROGRESS = "in_progress"
    """Another invocation (or an earlier copy in this batch) holds it: report failure so SQS redelivers it later."""
    CONFLICT = "conflict"
    """Same id as a processed event but different data: a bad event, never processed."""
    UNAVAILABLE = "unavailable"
    """The claim could not be written (throttled, after retries): report failure so SQS redelivers it later."""


def data_hash(event: CloudEvent[Any]) -> str:
    """What tells two events with one id apart: a hash of the canonical JSON of their ``data``, less
    its measurements (``EventData.MEASUREMENTS``: a result scored again differs only in those)."""
    data = event.data
    measured = data.MEASUREMENTS.intersection(type(data).model_fields)
    return hashlib.md5(data.model_dump_json(exclude=measured or None).encode(), usedforsecurity=False).hexdigest()


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class EventClaims:
    """Claims on events in the idempotency table.

    Parameters
    ----------
    table_name
        The DynamoDB table (partition key ``id``, TTL attribute ``expiration``).
    scope
        Prefix of the keys, so consumers and workflows sharing a table do not collide.
    expires_after_seconds
        How long a completed claim suppresses duplicates (the stack derives it from the
        longest redelivery path: archive replay plus DLQ retention).
    client
        A boto3 DynamoDB client (reuse the function's one).
    max_attempts
        Tries per request when DynamoDB throttles (after the SDK's own retries), 1 or more. Default 3.
    base_delay_s
        First backoff ceiling; it doubles each attempt (full jitter). Default 0.025 s.
    sleep
        How to wait; tests pass a no-op.
    """

    def __init__(self, table_name: str, *, scope: str, expires_after_seconds: int, client: Any,
                 max_attempts: int = 3, base_delay_s: float = 0.025, sleep: Callable[[float], None] = time.sleep) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be 1 or more, got {max_attempts}")
        self.table_name = table_name
        self.scope = scope
        self.expires_after_seconds = expires_after_seconds
        self.client = client
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.sleep = sleep
        self.requests: dict[str, int] = {}  # requests made, by API

    def key(self, event_id: str) -> dict[str, Any]:
        return {"id": {"S": f"{self.scope}#{event_id}"}}

    def _backoff(self, attempt: int) -> None:
        self.sleep(random.uniform(0, self.base_delay_s * 2 ** (attempt - 1)))  # noqa: S311 - jitter, not crypto

    def _call(self, api: str, **request: Any) -> Any:
        self.requests[api] = self.requests.get(api, 0) + 1
        return getattr(self.client, api)(**request)

    # -- claim -----------------------------------------------------------------------------------

    def claim(self, events: Sequence[CloudEvent[Any]], *, remaining_ms: int | None,
              faults: FaultPlan | None = None) -> list[ClaimStatus]:
        """Try to own every event; one status per event, in order.

        ``remaining_ms`` bounds how long the ``INPROGRESS`` claims hold (default: the
        completed lifetime). ``faults`` may throttle requests (a chaos experiment).
        """
        now = time.time()
        hold_ms = remaining_ms if remaining_ms is not None else self.expires_after_seconds * 1000
        hashes = [data_hash(event) for event in events]
        statuses: list[ClaimStatus | None] = [None] * len(events)
        first: dict[str, int] = {}
        for index, event in enumerate(events):  # a transaction may not touch one item twice
            if event.id in first:
                same = hashes[first[event.id]] == hashes[index]
                statuses[index] = ClaimStatus.IN_PROGRESS if same else ClaimStatus.CONFLICT
            else:
                first[event.id] = index
        values = {":now_s": {"N": str(int(now))}, ":now_ms": {"N": str(int(now * 1000))}, ":in_progress": {"S": IN_PROGRESS}}
        puts = {
            index: {"Put": {
                "TableName": self.table_name,
                "Item": {**self.key(events[index].id), "status": {"S": IN_PROGRESS},
                         "expiration": {"N": str(int(now) + self.expires_after_seconds)},
                         "in_progress_expiration": {"N": str(int(now * 1000) + hold_ms)},
                         "claimed_at": {"N": str(int(now * 1000))},
                         "validation": {"S": hashes[index]}},
                "ConditionExpression": CLAIMABLE,
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": values,
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }}
            for index in first.values()
        }
        for chunk in _chunks(list(puts), CLAIM_BATCH):
            for index, status in self._claim_chunk(chunk, puts, hashes, faults).items():
                statuses[index] = status
        return [status or ClaimStatus.UNAVAILABLE for status in statuses]

    def _claim_chunk(self, pending: Sequence[int], puts: Mapping[int, dict[str, Any]], hashes: Sequence[str],
                     faults: FaultPlan | None) -> dict[int, ClaimStatus]:
        from botocore.exceptions import BotoCoreError, ClientError

        decided: dict[int, ClaimStatus] = {}
        attempt = 0
        while pending:
            try:
                if faults is not None and faults.draw(faults.claim_throttle_rate):
                    raise _throttled("TransactWriteItems")
                self._call("transact_write_items", TransactItems=[puts[index] for index in pending])
            except ClientError as error:
                reasons = error.response.get("CancellationReasons")
                code = error.response.get("Error", {}).get("Code", "")
                if code == "TransactionCanceledException" and reasons and len(reasons) == len(pending):
                    # The whole transaction was cancelled: decide the items whose condition failed, retry the rest.
                    retry, throttled = [], False
                    for index, reason in zip(pending, reasons, strict=True):
                        reason_code = reason.get("Code", "None")
                        if reason_code == "ConditionalCheckFailed":
                            decided[index] = self._existing(reason.get("Item"), hashes[index])
                        elif reason_code == "TransactionConflict":
                            decided[index] = ClaimStatus.IN_PROGRESS  # another writer is on it right now
                        else:
                            retry.append(index)
                            throttled |= reason_code != "None"
                    progressed = len(retry) < len(pending)
                    pending = retry
                    if progressed and not throttled:
                        continue  # at least one item was decided: try the rest at once
                elif code not in THROTTLED:
                    raise
            except BotoCoreError:  # no answer (a connection error): as if throttled
                pass
            else:
                decided.update({index: ClaimStatus.CLAIMED for index in pending})
                break
            attempt += 1
            if attempt >= self.max_attempts:
                break
            self._backoff(attempt)
        return decided

    @staticmethod
    def _existing(item: Mapping[str, Any] | None, validation: str) -> ClaimStatus:
        if item is None:
            return ClaimStatus.IN_PROGRESS  # gone again already: let SQS bring it back
        if item.get("validation", {}).get("S") != validation:
            return ClaimStatus.CONFLICT
        if item.get("status", {}).get("S") == COMPLETED:
            return ClaimStatus.ALREADY_DONE
        return ClaimStatus.IN_PROGRESS

    # -- complete and release ----------------------------------------------------------------------

    def complete(self, completions: Sequence[tuple[CloudEvent[Any], Mapping[str, Any]]],
                 faults: FaultPlan | None = None) -> list[str]:
        """Mark each ``(event, result)`` done, storing the small ``result`` (the id of the event published).

        Returns the ids of the events whose completion could not be written: their claims stay
        in progress until they expire, so a redelivery after that would repeat their result.
        """
        now = int(time.time())
        writes = {
            event.id: {"PutRequest": {"Item": {
                **self.key(event.id), "status": {"S": COMPLETED}, "expiration": {"N": str(now + self.expires_after_seconds)},
                "validation": {"S": data_hash(event)}, "result": {"S": json.dumps(result, separators=(",", ":"))},
            }}}
            for event, result in completions
        }
        return self._batch_write(writes, faults)

    def release(self, events: Sequence[CloudEvent[Any]], faults: FaultPlan | None = None) -> list[str]:
        """Give the claims back after a failure, so a redelivery can process the events.

        Returns the ids whose claims could not be deleted (they expire with the invocation's deadline).
        """
        writes = {event.id: {"DeleteRequest": {"Key": self.key(event.id)}} for event in events}
        return self._batch_write(writes, faults)

    def _batch_write(self, writes: Mapping[str, dict[str, Any]], faults: FaultPlan | None) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        failed: list[str] = []
        for chunk in _chunks(list(writes.values()), COMPLETE_BATCH):
            pending: list[dict[str, Any]] = list(chunk)
            for attempt in range(1, self.max_attempts + 1):
                try:
                    if faults is not None and faults.draw(faults.complete_throttle_rate):
                        unprocessed = pending  # how DynamoDB answers a batch whose items it throttles
                    else:
                        response = self._call("batch_write_item", RequestItems={self.table_name: pending})
                        unprocessed = response.get("UnprocessedItems", {}).get(self.table_name, [])
                except ClientError as error:
                    if error.response.get("Error", {}).get("Code") not in THROTTLED:
                        raise
                    unprocessed = pending
                except BotoCoreError:  # no answer (a connection error): as if throttled
                    unprocessed = pending
                pending = list(unprocessed)
                if not pending:
                    break
                if attempt < self.max_attempts:
                    self._backoff(attempt)
            failed.extend(self._event_id(request) for request in pending)
        return failed

    def _event_id(self, request: Mapping[str, Any]) -> str:
        key = request["PutRequest"]["Item"] if "PutRequest" in request else request["DeleteRequest"]["Key"]
        return key["id"]["S"].removeprefix(f"{self.scope}#")

    # -- workflows ------------------------------------------------------------------------------------

    def accept_once(self, event: CloudEvent[Any], *, owner: str) -> ClaimStatus:
        """Own ``event`` for ``owner`` (a workflow execution) in ONE conditional write, completed at once.

        A workflow owns an event from the moment it accepts it (its failure path reports what
        happens next), so there is no in-progress state for a crash to leave behind. ``owner``
        asking again, as a retried step does, gets ``CLAIMED`` again; anyone else gets
        ``ALREADY_DONE``; the same id with other data, ``CONFLICT``.
        """
        from botocore.exceptions import ClientError

        now = int(time.time())
        validation = data_hash(event)
        try:
            self._call(
                "put_item",
                TableName=self.table_name,
                Item={**self.key(event.id), "status": {"S": COMPLETED}, "expiration": {"N": str(now + self.expires_after_seconds)},
                      "validation": {"S": validation}, "result": {"S": json.dumps({"owner": owner})}},
                ConditionExpression=ACCEPTABLE,
                ExpressionAttributeValues={":now_s": {"N": str(now)}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            item = error.response.get("Item")
            status = self._existing(item, validation)
            if status is ClaimStatus.ALREADY_DONE and item is not None:
                result = json.loads(item.get("result", {}).get("S", "{}") or "{}")
                return ClaimStatus.CLAIMED if result.get("owner") == owner else ClaimStatus.ALREADY_DONE
            return status
        return ClaimStatus.CLAIMED


def _throttled(operation: str) -> Exception:
    """What DynamoDB answers, once the SDK's own retries are spent, to a request it throttles."""
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": "ThrottlingException", "Message": "injected: rate of requests exceeds the "
                                  "allowed throughput (claim_throttle_rate)"}}, operation)
