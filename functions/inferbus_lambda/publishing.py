"""Publish events to EventBridge in as few ``PutEvents`` calls as the limits allow.

A request holds at most 10 entries and 256 KB (sizes counted as EventBridge
counts them). Entries that PutEvents reports as failed with a transient error
are retried with exponential backoff and full jitter; whatever still fails is
returned to the caller, never dropped.

Example
-------
>>> [len(request) for request in plan_requests([100] * 12)]  # 12 small entries: two requests
[10, 2]
>>> [len(group) for group in plan_groups([100] * 45, max_entries=25)]  # whole requests, at most 25 entries a group
[20, 25]
>>> failures = publish_events(boto3.client("events"), entries)  # doctest: +SKIP
>>> [f.index for f in failures]  # the entries the caller must report as failed  # doctest: +SKIP
[]
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_ENTRIES_PER_REQUEST",
    "MAX_REQUEST_BYTES",
    "PublishFailure",
    "entry_size",
    "plan_groups",
    "plan_requests",
    "publish_events",
]

MAX_ENTRIES_PER_REQUEST = 10
MAX_REQUEST_BYTES = 256 * 1024
TIME_FIELD_BYTES = 14
TRANSIENT_ERROR_CODES = frozenset({"InternalFailure", "InternalException", "ThrottlingException", "ServiceUnavailable"})


@dataclass(frozen=True)
class PublishFailure:
    """An entry that was not published: its position in the input, and why."""

    index: int
    error_code: str
    error_message: str


def entry_size(entry: dict[str, Any]) -> int:
    """Size of one PutEvents entry as EventBridge counts it against the 256 KB limit."""
    size = TIME_FIELD_BYTES if entry.get("Time") is not None else 0
    for field in ("Source", "DetailType", "Detail"):
        size += len(str(entry.get(field, "")).encode())
    size += sum(len(resource.encode()) for resource in entry.get("Resources", ()))
    return size


def plan_requests(sizes: Sequence[int]) -> Iterator[list[int]]:
    """Group entry indexes into requests of at most 10 entries and 256 KB, keeping order.

    An entry over 256 KB on its own is left out of every request (see :func:`publish_events`).
    """
    request: list[int] = []
    request_bytes = 0
    for index, size in enumerate(sizes):
        if size > MAX_REQUEST_BYTES:
            continue
        if request and (len(request) == MAX_ENTRIES_PER_REQUEST or request_bytes + size > MAX_REQUEST_BYTES):
            yield request
            request, request_bytes = [], 0
        request.append(index)
        request_bytes += size
    if request:
        yield request


def plan_groups(sizes: Sequence[int], *, max_entries: int) -> list[list[int]]:
    """Group entry indexes into whole requests (:func:`plan_requests`), at most ``max_entries`` per group.

    A consumer publishes a group, then completes its claims in one write: a crash between
    the two can repeat at most one group. Entries too large for any request form a group
    of their own each, so :func:`publish_events` reports them.
    """
    groups: list[list[int]] = []
    group: list[int] = []
    for request in plan_requests(sizes):
        if group and len(group) + len(request) > max_entries:
            groups.append(group)
            group = []
        group.extend(request)
    if group:
        groups.append(group)
    groups.extend([index] for index, size in enumerate(sizes) if size > MAX_REQUEST_BYTES)
    return groups


def publish_events(
    client: Any,
    entries: Sequence[dict[str, Any]],
    *,
    max_attempts: int = 4,
    base_delay_s: float = 0.05,
    sleep: Callable[[float], None] = time.sleep,
) -> list[PublishFailure]:
    """Send ``entries`` with ``client.put_events``; return the ones that could not be published.

    Parameters
    ----------
    client
        A boto3 EventBridge client.
    entries
        PutEvents request entries.
    max_attempts
        Tries per entry for transient failures, 1 or more. Default 4.
    base_delay_s
        First backoff ceiling; it doubles each attempt (full jitter). Default 0.05 s.
    sleep
        How to wait; tests pass a no-op.

    Returns
    -------
    list[PublishFailure]
        Empty when everything was published, else one per failed entry, in input order.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be 1 or more, got {max_attempts}")
    failures: dict[int, PublishFailure] = {}
    sizes = [entry_size(entry) for entry in entries]
    for index, size in enumerate(sizes):
        if size > MAX_REQUEST_BYTES:
            failures[index] = PublishFailure(index, "EntryTooLarge", f"entry is {size} bytes, the limit is {MAX_REQUEST_BYTES}")

    pending = [index for index in range(len(entries)) if index not in failures]
    for attempt in range(1, max_attempts + 1):
        retry: list[int] = []
        for request in plan_requests([sizes[index] for index in pending]):
            indexes = [pending[position] for position in request]
            response = client.put_events(Entries=[entries[index] for index in indexes])
            if not response.get("FailedEntryCount"):
                continue
            # Results come back in request order, one per entry.
            for index, result in zip(indexes, response["Entries"], strict=True):
                code = result.get("ErrorCode")
                if not code:
                    continue
                failure = PublishFailure(index, code, result.get("ErrorMessage", ""))
                if code in TRANSIENT_ERROR_CODES and attempt < max_attempts:
                    retry.append(index)
                else:
                    failures[index] = failure
        if not retry:
            break
        sleep(random.uniform(0, base_delay_s * 2 ** (attempt - 1)))
        pending = retry
    return sorted(failures.values(), key=lambda failure: failure.index)
