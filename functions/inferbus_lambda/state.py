"""External state a consumer reads: items of a DynamoDB table, by ``id``, cached per container.

A consumer declares the stores it reads (``Consumer(reads=(StateTable("customer-profiles"),))``);
the stack makes each table, grants the function ``GetItem``/``BatchGetItem`` on it and names it
in ``INFERBUS_STATE_TABLES``. In ``infer``, ``runtime.state("customer-profiles")`` is its
:class:`StateTableReader`: one ``BatchGetItem`` per batch for the ids not already cached.

Example
-------
>>> reader = StateTableReader(client=None, table="t", cache_s=0)  # doctest: +SKIP
>>> reader.get_many(["customer-1", "customer-2"])  # doctest: +SKIP
{'customer-1': {'id': 'customer-1', 'age': 31, ...}, 'customer-2': None}
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from .errors import ConfigurationError, TransientError

__all__ = ["BATCH_GET_LIMIT", "StateTableReader", "plain", "state_tables"]

BATCH_GET_LIMIT = 100  # keys per BatchGetItem (DynamoDB's limit)
KEY = "id"
UNPROCESSED_ATTEMPTS = 5


def state_tables(variable: str | None, service: str) -> dict[str, dict[str, Any]]:
    """``INFERBUS_STATE_TABLES`` read: name -> ``{"table": ..., "cache_s": ...}`` (empty when unset).

    Raises
    ------
    ConfigurationError
        When it is not such a JSON object.
    """
    if not variable:
        return {}
    try:
        tables = json.loads(variable)
        if not all(isinstance(spec["table"], str) and isinstance(spec["cache_s"], int) for spec in tables.values()):
            raise TypeError
    except (ValueError, TypeError, KeyError, AttributeError):
        raise ConfigurationError(f"{service}: INFERBUS_STATE_TABLES must be a JSON object name -> "
                                 f'{{"table": str, "cache_s": int}}, got {variable!r}; the CDK stack sets it, redeploy') from None
    return tables


def plain(value: Any) -> Any:
    """A deserialized DynamoDB value as JSON-like Python: whole Decimals as int, others as float, sets as sorted lists."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted(plain(item) for item in value)
    return value


class StateTableReader:
    """Reads items by ``id`` from one table, keeping each answer (an item, or ``None`` for an absent
    id) for ``cache_s`` seconds in this container.

    Parameters
    ----------
    client
        A DynamoDB client.
    table
        The table's physical name.
    cache_s
        How long an answer is kept; 0 reads every time.
    clock
        Seconds, monotonic (tests pass their own).
    """

    def __init__(self, client: Any, table: str, cache_s: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        from boto3.dynamodb.types import TypeDeserializer

        self.client, self.table, self.cache_s, self.clock = client, table, cache_s, clock
        self._deserialize = TypeDeserializer().deserialize
        self._cache: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self.reads = 0  # BatchGetItem requests made: what the cache saves is visible

    def get(self, key: str) -> dict[str, Any] | None:
        """The item with ``id`` ``key``, or ``None``."""
        return self.get_many([key])[key]

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any] | None]:
        """Each key's item (``None`` when absent), reading only the keys not cached, up to 100 per request."""
        keys = list(dict.fromkeys(keys))
        now = self.clock()
        missing = [key for key in keys if key not in self._cache or now - self._cache[key][0] >= self.cache_s]
        for start in range(0, len(missing), BATCH_GET_LIMIT):
            found = self._batch_get(missing[start:start + BATCH_GET_LIMIT])
            for key in missing[start:start + BATCH_GET_LIMIT]:
                self._cache[key] = (now, found.get(key))
        return {key: self._cache[key][1] for key in keys}

    def _batch_get(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        request: dict[str, Any] = {self.table: {"Keys": [{KEY: {"S": key}} for key in keys]}}
        for attempt in range(UNPROCESSED_ATTEMPTS):  # DynamoDB may answer part now, the rest as UnprocessedKeys
            if not request:
                return found
            if attempt:
                time.sleep(0.05 * 2 ** attempt)
            self.reads += 1
            answer = self.client.batch_get_item(RequestItems=request)
            for raw in answer.get("Responses", {}).get(self.table, []):
                item = plain({name: self._deserialize(value) for name, value in raw.items()})
                found[item[KEY]] = item
            request = answer.get("UnprocessedKeys") or {}
        if request:
            raise TransientError(f"{self.table}: DynamoDB left keys unread after {UNPROCESSED_ATTEMPTS} attempts")
        return found
