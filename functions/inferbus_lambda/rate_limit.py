"""Backpressure as a rate: a token bucket per consumer, shared by all its concurrent invocations.

A consumer's ``max_concurrency`` bounds how many batches run at once; ``max_events_per_second``
(``MAX_EVENTS_PER_SECOND``) bounds how many events per second they take *together*, whatever the
concurrency: each invocation takes one token per record from one bucket kept in the consumer's claims
store (DynamoDB or Redis), which refills at the rate and holds at most one second's worth (the burst).
The records it gets no token for go back to their channel with a backoff (:func:`admit`,
``RecordSource.return_later``), never to a DLQ.

=========================  ====================================================================
store                      how one take is atomic
=========================  ====================================================================
:class:`RedisTokenBucket`  one Lua script (refill by the server's clock, take, write)
:class:`DynamoDBTokenBucket`  read, then a Put conditional on what was read (optimistic; retried)
:class:`InMemoryTokenBucket`  a lock (one process: tests)
=========================  ====================================================================

Example
-------
>>> bucket = InMemoryTokenBucket(scope="scorer", rate=5.0, clock_ms=lambda: 0)
>>> bucket.take(8), bucket.take(8), bucket.take(8, now_ms=1_000)
(5, 0, 5)
"""

from __future__ import annotations

import abc
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .sources.base import SourceRecord

__all__ = ["DynamoDBTokenBucket", "InMemoryTokenBucket", "RedisTokenBucket", "TokenBucket", "admit", "backoff_s",
           "refill", "token_bucket"]

BUCKET_KEY = "|token-bucket"  # holds '|', which no event id does: never a claim's key, old or new
MAX_BACKOFF_S = 900
IDLE_EXPIRY_S = 86_400  # a bucket no one took from for a day is deleted (it would be full again anyway)


def refill(tokens: float, updated_ms: int, *, now_ms: int, rate: float, capacity: float) -> float:
    """Tokens after refilling at ``rate`` per second since ``updated_ms``, at most ``capacity`` (a clock
    that went back refills nothing).

    >>> refill(0.0, 0, now_ms=500, rate=10.0, capacity=10.0), refill(9.0, 0, now_ms=10_000, rate=10.0, capacity=10.0)
    (5.0, 10.0)
    """
    return min(capacity, tokens + max(0, now_ms - updated_ms) * rate / 1000)


class TokenBucket(abc.ABC):
    """Events per second for one consumer, shared by every invocation that takes from it.

    Parameters
    ----------
    scope
        The consumer (its service name): one bucket each.
    rate
        Tokens (events) per second, more than 0.
    capacity
        The most tokens it holds (the burst). Default: one second's worth, at least 1.
    """

    def __init__(self, *, scope: str, rate: float, capacity: float | None = None) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be more than 0, got {rate}")
        self.scope, self.rate = scope, rate
        self.capacity = capacity if capacity is not None else max(rate, 1.0)

    @abc.abstractmethod
    def take(self, wanted: int, *, now_ms: int | None = None) -> int:
        """Take up to ``wanted`` whole tokens at once; how many were taken (0 when the store cannot be reached)."""


class InMemoryTokenBucket(TokenBucket):
    """A bucket in this process."""

    def __init__(self, *, scope: str, rate: float, capacity: float | None = None,
                 clock_ms: Callable[[], int] | None = None) -> None:
        super().__init__(scope=scope, rate=rate, capacity=capacity)
        self._clock_ms = clock_ms or _now_ms
        self._tokens, self._updated_ms = self.capacity, self._clock_ms()
        self._lock = threading.Lock()

    def take(self, wanted: int, *, now_ms: int | None = None) -> int:
        with self._lock:
            now = self._clock_ms() if now_ms is None else now_ms
            self._tokens = refill(self._tokens, self._updated_ms, now_ms=now, rate=self.rate, capacity=self.capacity)
            self._updated_ms = max(now, self._updated_ms)
            granted = min(wanted, math.floor(self._tokens))
            self._tokens -= granted
            return granted


# Refill by the server's clock (every invocation agrees on it), take, write; the key expires when idle.
TAKE_SCRIPT = """
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local rate, capacity, wanted = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'updated_ms')
local tokens = tonumber(state[1]) or capacity
local updated = tonumber(state[2]) or now
if now > updated then
  tokens = math.min(capacity, tokens + (now - updated) * rate / 1000)
  updated = now
end
local granted = math.min(wanted, math.floor(tokens))
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - granted), 'updated_ms', tostring(updated))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return granted
"""


class RedisTokenBucket(TokenBucket):
    """A bucket in Redis or Valkey: one hash (``inferbus:{<scope>}|token-bucket``), one script per take.

    Parameters
    ----------
    client
        A ``redis.Redis`` client (the claims store's).
    scope, rate, capacity
        See :class:`TokenBucket`.
    """

    def __init__(self, client: Any, *, scope: str, rate: float, capacity: float | None = None) -> None:
        super().__init__(scope=scope, rate=rate, capacity=capacity)
        self.client = client
        self.key = f"inferbus:{{{scope}}}{BUCKET_KEY}"
        self._take = client.register_script(TAKE_SCRIPT)

    def take(self, wanted: int, *, now_ms: int | None = None) -> int:  # the server's clock: now_ms is not used
        from redis.exceptions import ConnectionError as RedisConnectionError
        from redis.exceptions import TimeoutError as RedisTimeoutError

        try:
            return int(self._take(keys=[self.key], args=[self.rate, self.capacity, wanted, IDLE_EXPIRY_S],
                                  client=self.client))
        except (RedisConnectionError, RedisTimeoutError):
            return 0  # no token without the bucket: the records come back later


class DynamoDBTokenBucket(TokenBucket):
    """A bucket in the claims table: the item ``<scope>#|token-bucket`` (``tokens``, ``updated_ms``,
    ``expiration``), read consistently then written on condition it did not change; a lost race is retried.

    Parameters
    ----------
    table_name, client
        The claims table and a boto3 DynamoDB client.
    scope, rate, capacity
        See :class:`TokenBucket`.
    max_attempts
        Races lost before it grants nothing this time. Default 5.
    """

    def __init__(self, table_name: str, client: Any, *, scope: str, rate: float, capacity: float | None = None,
                 max_attempts: int = 5, clock_ms: Callable[[], int] | None = None) -> None:
        super().__init__(scope=scope, rate=rate, capacity=capacity)
        self.table_name, self.client, self.max_attempts = table_name, client, max_attempts
        self._clock_ms = clock_ms or _now_ms
        self.item_key = {"id": {"S": f"{scope}#{BUCKET_KEY}"}}

    def take(self, wanted: int, *, now_ms: int | None = None) -> int:
        from botocore.exceptions import BotoCoreError, ClientError

        for _ in range(self.max_attempts):
            now = self._clock_ms() if now_ms is None else now_ms
            try:
                item = self.client.get_item(TableName=self.table_name, Key=self.item_key, ConsistentRead=True).get("Item")
                tokens, updated = self.capacity, now
                condition, values = "attribute_not_exists(id)", {}
                if item:
                    tokens, updated = float(item["tokens"]["N"]), int(item["updated_ms"]["N"])
                    condition = "updated_ms = :updated AND tokens = :tokens"
                    values = {":updated": item["updated_ms"], ":tokens": item["tokens"]}
                tokens = refill(tokens, updated, now_ms=now, rate=self.rate, capacity=self.capacity)
                granted = min(wanted, math.floor(tokens))
                written = {**self.item_key, "tokens": {"N": repr(tokens - granted)},
                           "updated_ms": {"N": str(max(now, updated))}, "expiration": {"N": str(now // 1000 + IDLE_EXPIRY_S)}}
                self.client.put_item(TableName=self.table_name, Item=written, ConditionExpression=condition,
                                     **({"ExpressionAttributeValues": values} if values else {}))
                return granted
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    return 0  # throttled or refused: no token this time
            except BotoCoreError:
                return 0
        return 0


def token_bucket(claims: Any, *, rate: float | None, scope: str) -> TokenBucket | None:
    """The consumer's bucket in its claims store's backend (``None`` without a rate): Redis for a
    :class:`~.claims.RedisClaimStore`, the claims table for a :class:`~.claims.DynamoDBClaimStore`."""
    from .claims import DynamoDBClaimStore, RedisClaimStore

    if rate is None:
        return None
    if isinstance(claims, RedisClaimStore):
        return RedisTokenBucket(claims.client, scope=scope, rate=rate)
    if isinstance(claims, DynamoDBClaimStore):
        return DynamoDBTokenBucket(claims.table_name, claims.client, scope=scope, rate=rate)
    return InMemoryTokenBucket(scope=scope, rate=rate)  # a test's store: one process


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


def admit(records: Sequence[SourceRecord], granted: int, *,
          last_attempt: Callable[[SourceRecord], bool]) -> tuple[list[SourceRecord], list[SourceRecord]]:
    """Split a batch into the records to process now and those to send back.

    The first ``granted`` records (in delivery order) are processed. Of the rest, a record on its last
    attempt is processed anyway, so the rate never sends a record to the DLQ, unless an earlier record of
    its ordering group goes back (its group's order comes first; it is sent back with it).

    >>> batch = [SourceRecord(str(i), "{}", attempt=3 if i in (2, 3) else 1, group=g) for i, g in enumerate("aabaa")]
    >>> [[r.record_id for r in part] for part in admit(batch, 1, last_attempt=lambda r: r.attempt >= 3)]
    [['0', '2'], ['1', '3', '4']]
    """
    now, later = list(records[:granted]), []
    held_groups: set[str] = set()
    for record in records[granted:]:
        if last_attempt(record) and (record.group is None or record.group not in held_groups):
            now.append(record)
        else:
            later.append(record)
            if record.group is not None:
                held_groups.add(record.group)
    return now, later


def backoff_s(waiting: int, rate: float) -> int:
    """Seconds to hide records that found no token: about the time the bucket takes to hold that many (at
    least 1, at most 900: SQS's ``DelaySeconds`` bound, and long enough for any rate worth limiting).

    >>> backoff_s(10, 5.0), backoff_s(1, 100.0), backoff_s(10**6, 1.0)
    (2, 1, 900)
    """
    return max(1, min(MAX_BACKOFF_S, math.ceil(waiting / rate)))
