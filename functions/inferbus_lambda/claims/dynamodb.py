"""Claims in DynamoDB, a whole batch at a time: the one owner of the claims table's item layout.

A consumer claims every record of a batch in one ``TransactWriteItems`` request per 100 records
(conditional Puts), and completes them in ``BatchWriteItem`` requests of 25, each right after
the ``PutEvents`` requests that published those results. So a batch of 100 costs about 5
DynamoDB requests, not 200, and a crash between publishing and completing can repeat at most
the 25 results of one group.

Each item: ``id`` (``<scope>#<claim key>``, :func:`~.base.claim_key`: the event's id and a digest of its
source), ``status`` (``INPROGRESS`` or ``COMPLETED``),
``expiration`` (epoch s, the table's TTL), ``in_progress_expiration`` and ``claimed_at`` (epoch
ms), ``validation`` (a hash of the event's ``data``) and ``result`` (JSON: the result's id, or
the workflow execution that owns it).

Throttling and errors are answered per record, never by failing the batch: a record whose
claim could not be written is :attr:`ClaimStatus.UNAVAILABLE`, a completion that could not be
written leaves its claim to expire.

Claims written before the key held the source (``<scope>#<event id>``) are read too, until they
expire: in the same batch, one ``BatchGetItem`` per 100 records before the claim (a workflow's
accept, one ``GetItem``). One that holds an event with the same data (completed, or in progress
and not yet past its holder's deadline) answers as it did, so an event processed before the
upgrade and delivered again after it (a retry, a DLQ redrive, an archive replay) is still a
duplicate. Its source was not recorded, so another producer's event with that id and the same
data is still taken for it until the old claim expires (``IDEMPOTENCY_TTL_SECONDS`` after it was
written); one with other data is a new event. No key the store writes now is ever an old one.

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

from .base import KEY_SEPARATOR, ClaimRecord, ClaimState, ClaimStatus, ClaimStore, PutAnswer, acceptable, claimable

__all__ = ["CLAIM_BATCH", "COMPLETE_BATCH", "DynamoDBClaimStore"]

CLAIM_BATCH = 100  # TransactWriteItems takes at most 100 actions
LEGACY_READ_BATCH = 100  # BatchGetItem takes at most 100 keys
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
    legacy_keys
        Read the claims written under the old key (the event id alone) too, until they have expired
        (see the module). Default True.

    Attributes
    ----------
    requests
        Requests made, by API name: what a batch cost.
    """

    def __init__(self, table_name: str, *, scope: str, expires_after_seconds: int, client: Any,
                 max_attempts: int = 3, base_delay_s: float = 0.025, sleep: Callable[[float], None] = time.sleep,
                 legacy_keys: bool = True) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be 1 or more, got {max_attempts}")
        super().__init__(scope=scope, expires_after_seconds=expires_after_seconds)
        self.table_name = table_name
        self.client = client
        self.max_attempts = max_attempts
        self.base_delay_s = base_delay_s
        self.sleep = sleep
        self.legacy_keys = legacy_keys
        self.requests: dict[str, int] = {}

    # -- the item layout -------------------------------------------------------------------------

    def key(self, key: str) -> dict[str, Any]:
        """The item key of a claim key (:func:`~.base.claim_key`), or of an old claim's bare event id."""
        return {"id": {"S": f"{self.scope}#{key}"}}

    def legacy_key(self, key: str) -> dict[str, Any]:
        """Where the claim of the same event was written before keys held its source: under its id alone."""
        return self.key(key.partition(KEY_SEPARATOR)[0])

    def item(self, record: ClaimRecord) -> dict[str, Any]:
        """The DynamoDB item that stores ``record``."""
        item = {**self.key(record.key), "status": {"S": record.state.value},
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
            key=item["id"]["S"].removeprefix(f"{self.scope}#"),
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
        answers: list[PutAnswer] = [ClaimStatus.UNAVAILABLE] * len(records)
        pending = list(range(len(records)))
        if self.legacy_keys:  # an old claim on the same event answers for it; the rest are written
            old = self._legacy_claims([records[index].key for index in pending])
            for index in list(pending):
                held = old.get(records[index].key)
                if held is ClaimStatus.UNAVAILABLE:
                    pending.remove(index)  # not read: claim it later rather than maybe twice
                elif isinstance(held, ClaimRecord) and _holds(held, records[index], now_ms=now_ms, claim=True):
                    answers[index] = held
                    pending.remove(index)
        values = {":now_s": {"N": str(now_ms // 1000)}, ":now_ms": {"N": str(now_ms)},
                  ":in_progress": {"S": ClaimState.IN_PROGRESS.value}}
        puts = [{"Put": {"TableName": self.table_name, "Item": self.item(record), "ConditionExpression": CLAIMABLE,
                         "ExpressionAttributeNames": {"#status": "status"}, "ExpressionAttributeValues": values,
                         "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}} for record in records]
        for chunk in _chunks(pending, CLAIM_BATCH):
            for index, answer in self._put_chunk(list(chunk), puts).items():
                answers[index] = answer
        return answers

    def _legacy_claims(self, keys: Sequence[str]) -> dict[str, ClaimRecord | ClaimStatus]:
        """The old claim (keyed by the event id alone) of each claim key that has one, by claim key;
        ``UNAVAILABLE`` for a key DynamoDB would not read (throttled, after retries)."""
        from botocore.exceptions import BotoCoreError, ClientError

        by_item_id: dict[str, list[str]] = {}  # one old claim per id, whatever the sources of the batch's events
        for key in keys:
            by_item_id.setdefault(self.legacy_key(key)["id"]["S"], []).append(key)
        found: dict[str, ClaimRecord | ClaimStatus] = {}
        for chunk in _chunks(list(by_item_id), LEGACY_READ_BATCH):
            pending = [{"id": {"S": item_id}} for item_id in chunk]
            for attempt in range(1, self.max_attempts + 1):
                try:
                    response = self._call("batch_get_item", RequestItems={self.table_name: {"Keys": pending}})
                    for item in response.get("Responses", {}).get(self.table_name, []):
                        found.update(dict.fromkeys(by_item_id[item["id"]["S"]], self.record(item)))
                    pending = response.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", [])
                except ClientError as error:
                    if error.response.get("Error", {}).get("Code") not in THROTTLED:
                        raise
                except BotoCoreError:  # no answer (a connection error): as if throttled
                    pass
                if not pending:
                    break
                if attempt < self.max_attempts:
                    self._backoff(attempt)
            for unread in pending:
                found.update(dict.fromkeys(by_item_id[unread["id"]["S"]], ClaimStatus.UNAVAILABLE))
        return found

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
        return self._batch_write({record.key: {"PutRequest": {"Item": self.item(record)}} for record in records})

    def delete(self, keys: Sequence[str]) -> list[str]:
        return self._batch_write({key: {"DeleteRequest": {"Key": self.key(key)}} for key in keys})

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
            failed.extend(self._claim_key(request) for request in pending)
        return failed

    def _claim_key(self, request: Mapping[str, Any]) -> str:
        key = request["PutRequest"]["Item"] if "PutRequest" in request else request["DeleteRequest"]["Key"]
        return str(key["id"]["S"]).removeprefix(f"{self.scope}#")

    # -- workflows: one conditional Put ----------------------------------------------------------

    def put_accepted(self, record: ClaimRecord, *, now_ms: int) -> tuple[bool, ClaimRecord | None]:
        from botocore.exceptions import ClientError

        if self.legacy_keys:  # an old claim on the same event answers for it
            item = self._call("get_item", TableName=self.table_name, Key=self.legacy_key(record.key)).get("Item")
            if item and _holds(held := self.record(item), record, now_ms=now_ms, claim=False):
                return False, held
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

    def end_hold(self, key: str, *, claimed_before_ms: int, now_ms: int) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._call("update_item", TableName=self.table_name, Key=self.key(key),
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


def _holds(old: ClaimRecord, record: ClaimRecord, *, now_ms: int, claim: bool) -> bool:
    """Does an old claim (keyed by the event id alone) still hold ``record``'s event? When its data is the
    same and it still blocks a claim (``claim``) or an accept: its source was not recorded, so other data is
    taken for another producer's event, a new one."""
    blocks = not claimable(old, now_ms=now_ms) if claim else not acceptable(old, now_ms=now_ms)
    return blocks and old.validation == record.validation
