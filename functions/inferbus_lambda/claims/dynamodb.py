"""Claims in DynamoDB, a whole batch at a time: the one owner of the claims table's item layout.

A consumer claims every record of a batch in one ``TransactWriteItems`` request per 100 records
(conditional Puts), and completes them in ``BatchWriteItem`` requests of 25, each right after
the ``PutEvents`` requests that published those results. So a batch of 100 costs about 5
DynamoDB requests, not 200, and a crash between publishing and completing can repeat at most
the 25 results of one group.

Each item: ``id`` (``<scope>#<event id>``), ``status`` (``INPROGRESS`` or ``COMPLETED``),
``expiration`` (epoch s, the table's TTL), ``in_progress_expiration`` and ``claimed_at`` (epoch
ms), ``validation`` (a hash of the event's ``data``) and ``result`` (JSON: the result's id, or
the workflow execution that owns it).

Throttling and errors are answered per record, never by failing the batch: a record whose
claim could not be written is :attr:`ClaimStatus.UNAVAILABLE`, a completion that could not be
written leaves its claim to expire.

Example
-------
>>> store = DynamoDBClaimStore("idempotency-table", scope="image-classifier", expires_after_seconds=3600,
...                            client=boto3.client("dynamodb"))  # doctest: +SKIP
>>> store.claim(events, remaining_ms=context.get_remaining_time_in_millis())  # doctest: +SKIP
[<ClaimStatus.CLAIMED: 'claimed'>, <ClaimStatus.ALREADY_DONE: 'already_done'>]
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .base import ClaimRecord, ClaimState, ClaimStatus, ClaimStore, PutAnswer

__all__ = ["CLAIM_BATCH", "COMPLETE_BATCH", "DynamoDBClaimStore"]

CLAIM_BATCH = 100  # TransactWriteItems takes at most 100 actions
COMPLETE_BATCH = 25  # BatchWriteItem takes at most 25 requests
THROTTLED = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
                       "ThrottlingError", "ProvisionedThroughputExceeded", "InternalServerError",
                       "ServiceUnavailable"})
# claims.base.claimable and acceptable, as DynamoDB condition expressions.
CLAIMABLE = ("attribute_not_exists(id) OR expiration < :now_s OR "
             "(#status = :in_progress AND in_progress_expiration < :now_ms)")
ACCEPTABLE = "attribute_not_exists(id) OR expiration < :now_s"
HELD_BEFORE = "#status = :in_progress AND claimed_at < :before"


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class DynamoDBClaimStore(ClaimStore):
    """Claims in a DynamoDB table (partition key ``id``, TTL attribute ``expiration``).

    Parameters
    ----------
    table_name
        The table.
    scope, expires_after_seconds
        See :class:`~.base.ClaimStore`.
    client
        A boto3 DynamoDB client (reuse the function's one).
    max_attempts
        Tries per request when DynamoDB throttles (after the SDK's own retries), 1 or more. Default 3.
    base_delay_s
        First backoff ceiling; it doubles each attempt (full jitter). Default 0.025 s.
    sleep
        How to wait; tests pass a no-op.

    Attributes
    ----------
    requests
        Requests made, by API name: what a batch cost.
    """

    def __init__(self, table_name: str, *, scope: str, expires_after_seconds: int, client: Any,
                 max_attempts: int = 3, base_delay_s: float = 0.025, sleep: Callable[[float], None] = time.sleep) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be 1 or more, got {max_attempts}")
        super().__init__(scope=scope, expires_after_seconds=expires_after_seconds)
        self.table_name = table_name
        self.client = client
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.sleep = sleep
        self.requests: dict[str, int] = {}

    # -- the item layout -------------------------------------------------------------------------

    def key(self, event_id: str) -> dict[str, Any]:
        return {"id": {"S": f"{self.scope}#{event_id}"}}

    def item(self, record: ClaimRecord) -> dict[str, Any]:
        """The DynamoDB item that stores ``record``."""
        item = {**self.key(record.event_id), "status": {"S": record.state.value},
                "expiration": {"N": str(record.expires_at_s)}, "validation": {"S": record.validation}}
        if record.held_until_ms is not None:
            item["in_progress_expiration"] = {"N": str(record.held_until_ms)}
        if record.claimed_at_ms is not None:
            item["claimed_at"] = {"N": str(record.claimed_at_ms)}
        if record.result is not None:
            item["result"] = {"S": record.result_json()}
        return item

    def record(self, item: Mapping[str, Any]) -> ClaimRecord:
        """The claim a DynamoDB item stores (the inverse of :meth:`item`)."""

        def number(name: str) -> int | None:
            value = item.get(name, {}).get("N")
            return int(value) if value is not None else None

        result = item.get("result", {}).get("S")
        return ClaimRecord(
            event_id=item["id"]["S"].removeprefix(f"{self.scope}#"),
            state=ClaimState(item.get("status", {}).get("S", ClaimState.IN_PROGRESS.value)),
            validation=item.get("validation", {}).get("S", ""),
            expires_at_s=number("expiration") or 0,
            held_until_ms=number("in_progress_expiration"),
            claimed_at_ms=number("claimed_at"),
            result=json.loads(result) if result else None,
        )

    def _backoff(self, attempt: int) -> None:
        self.sleep(random.uniform(0, self.base_delay_s * 2 ** (attempt - 1)))  # noqa: S311 - jitter, not crypto

    def _call(self, api: str, **request: Any) -> Any:
        self.requests[api] = self.requests.get(api, 0) + 1
        return getattr(self.client, api)(**request)

    # -- claim: TransactWriteItems of conditional Puts, 100 at a time ----------------------------

    def put_in_progress(self, records: Sequence[ClaimRecord], *, now_ms: int) -> list[PutAnswer]:
        values = {":now_s": {"N": str(now_ms // 1000)}, ":now_ms": {"N": str(now_ms)},
                  ":in_progress": {"S": ClaimState.IN_PROGRESS.value}}
        puts = [{"Put": {"TableName": self.table_name, "Item": self.item(record), "ConditionExpression": CLAIMABLE,
                         "ExpressionAttributeNames": {"#status": "status"}, "ExpressionAttributeValues": values,
                         "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}} for record in records]
        answers: list[PutAnswer] = [ClaimStatus.UNAVAILABLE] * len(records)
        for chunk in _chunks(range(len(records)), CLAIM_BATCH):
            for index, answer in self._put_chunk(list(chunk), puts).items():
                answers[index] = answer
        return answers

    def _put_chunk(self, pending: list[int], puts: Sequence[dict[str, Any]]) -> dict[int, PutAnswer]:
        from botocore.exceptions import BotoCoreError, ClientError

        decided: dict[int, PutAnswer] = {}
        attempt = 0
        while pending:
            try:
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
                            item = reason.get("Item")
                            decided[index] = self.record(item) if item else ClaimStatus.IN_PROGRESS
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

    # -- complete and release: BatchWriteItem, 25 at a time --------------------------------------

    def put_completed(self, records: Sequence[ClaimRecord]) -> list[str]:
        return self._batch_write({record.event_id: {"PutRequest": {"Item": self.item(record)}} for record in records})

    def delete(self, event_ids: Sequence[str]) -> list[str]:
        return self._batch_write({event_id: {"DeleteRequest": {"Key": self.key(event_id)}} for event_id in event_ids})

    def _batch_write(self, writes: Mapping[str, dict[str, Any]]) -> list[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        failed: list[str] = []
        for chunk in _chunks(list(writes.values()), COMPLETE_BATCH):
            pending: list[dict[str, Any]] = list(chunk)
            for attempt in range(1, self.max_attempts + 1):
                try:
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
        return str(key["id"]["S"]).removeprefix(f"{self.scope}#")

    # -- workflows: one conditional Put ----------------------------------------------------------

    def put_accepted(self, record: ClaimRecord, *, now_ms: int) -> tuple[bool, ClaimRecord | None]:
        from botocore.exceptions import ClientError

        try:
            self._call("put_item", TableName=self.table_name, Item=self.item(record), ConditionExpression=ACCEPTABLE,
                       ExpressionAttributeValues={":now_s": {"N": str(now_ms // 1000)}},
                       ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            item = error.response.get("Item")
            return False, self.record(item) if item else None
        return True, None

    # -- the embedded runtime's compressed time --------------------------------------------------

    def end_hold(self, event_id: str, *, claimed_before_ms: int, now_ms: int) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._call("update_item", TableName=self.table_name, Key=self.key(event_id),
                       UpdateExpression="SET in_progress_expiration = :past", ConditionExpression=HELD_BEFORE,
                       ExpressionAttributeNames={"#status": "status"},
                       ExpressionAttributeValues={":past": {"N": str(now_ms - 1)},
                                                  ":in_progress": {"S": ClaimState.IN_PROGRESS.value},
                                                  ":before": {"N": str(claimed_before_ms)}})
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False  # not claimed, or already completed: nothing held
            raise
        return True
