"""The claims store interface and the exactly-once policy, apart from any storage.

A :class:`ClaimStore` owns an event for one consumer (or one workflow) so that its result is
published once however often the event is delivered. The policy (which claim wins, when a
claim expires, when the same id is a conflict) lives here, in :class:`ClaimStore`; a store
implements five storage primitives and nothing else, as Powertools'
``BasePersistenceLayer`` implementations do:

======================  ==================================================================
primitive               what the store must do
======================  ==================================================================
``put_in_progress``     write each record *only if its event is claimable*
                        (:func:`claimable`), atomically per record; answer per record
``put_completed``       write completed records unconditionally; the keys not written
``delete``              delete the claims of these keys; the keys not deleted
``put_accepted``        write one completed record if none (or an expired one) holds its
                        key; else return the record that does
``end_hold``            (the embedded runtime only) end an in-progress claim's hold if it
                        was made before a moment: compressed time, see ``inferbus.claims``
======================  ==================================================================

A claim is a :class:`ClaimRecord`: ``IN_PROGRESS`` until it is completed (its result was
published) or deleted (processing failed, so a redelivery may claim it again). An in-progress
claim left by a crashed invocation expires with that invocation's remaining time; a completed
one lives as long as the longest way the same event can come back.

An event is who sent it and its id: CloudEvents' identity is ``(source, id)``, so a claim is keyed by
both (:func:`claim_key`). The same id from another source is another event, claimed on its own; the
same source and id with other data is an id conflict.

Example
-------
>>> from inferbus_lambda.claims import InMemoryClaimStore
>>> store = InMemoryClaimStore(scope="image-classifier", expires_after_seconds=3600)
>>> store.claim([event], remaining_ms=30_000)  # doctest: +SKIP
[<ClaimStatus.CLAIMED: 'claimed'>]
"""

from __future__ import annotations

import abc
import enum
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..contracts.core import CloudEvent

__all__ = ["ClaimRecord", "ClaimState", "ClaimStatus", "ClaimStore", "PutAnswer", "claim_key", "claimable", "data_hash",
           "decide"]

KEY_SEPARATOR = "|"  # never in an event id (the contracts' IDENTIFIER_PATTERN): a key reads back unambiguously
SOURCE_DIGEST_CHARS = 32  # 128 bits of SHA-256: a key stays short (at most 161 characters) whatever the source's length


def claim_key(source: str, event_id: str) -> str:
    """The key of an event's claim: its id, then a digest of its source (CloudEvents' identity is both).

    ``<id>|<32 hex digits>``: the id stays readable in the table; the source, up to 256 characters
    of any kind, becomes a fixed-length digest, so a key fits any store's limit (DynamoDB's is 2,048
    bytes for a partition key). An id never holds ``|``, so no key is ever the bare id that claims
    written before sources counted were keyed by (see :class:`~.dynamodb.DynamoDBClaimStore`).

    Example
    -------
    >>> claim_key("inferbus.cli", "img-1")
    'img-1|332b38b41af1c469e192afc867869700'
    """
    digest = hashlib.sha256(source.encode()).hexdigest()[:SOURCE_DIGEST_CHARS]
    return f"{event_id}{KEY_SEPARATOR}{digest}"


def event_key(event: CloudEvent[Any]) -> str:
    """:func:`claim_key` of ``event``."""
    return claim_key(event.source, event.id)


class ClaimStatus(enum.Enum):
    """What a claim attempt means for one event."""

    CLAIMED = "claimed"
    """This invocation owns the event: process it, then complete or release."""
    ALREADY_DONE = "already_done"
    """A result was published before (a duplicate delivery): skip it, report success."""
    IN_PROGRESS = "in_progress"
    """Another invocation (or an earlier copy in this batch) holds it: report failure so it is redelivered later."""
    CONFLICT = "conflict"
    """Same id as a processed event but different data: a bad event, never processed."""
    UNAVAILABLE = "unavailable"
    """The claim could not be written (throttled, after retries): report failure so it is redelivered later."""


class ClaimState(str, enum.Enum):
    """A stored claim's state (the values are what a store writes)."""

    IN_PROGRESS = "INPROGRESS"
    COMPLETED = "COMPLETED"


@dataclass(frozen=True)
class ClaimRecord:
    """One stored claim, whatever the store.

    Attributes
    ----------
    key
        The event's :func:`claim_key` (a store prefixes it with its scope).
    state
        In progress, or completed.
    validation
        :func:`data_hash` of the event: the same id with other data is a conflict.
    expires_at_s
        Epoch seconds after which the claim is void (a store may also delete it then).
    held_until_ms
        In progress only: epoch milliseconds after which its holder is presumed dead.
    claimed_at_ms
        In progress only: when it was taken.
    result
        Completed only: what the owner recorded (the result's id, or the workflow execution).
    """

    key: str
    state: ClaimState
    validation: str
    expires_at_s: int
    held_until_ms: int | None = None
    claimed_at_ms: int | None = None
    result: Mapping[str, Any] | None = field(default=None, compare=False)

    def result_json(self) -> str:
        return json.dumps(dict(self.result or {}), separators=(",", ":"))


# What a store answers for one record of ``put_in_progress``: CLAIMED (written); the record
# that made the write fail (its condition); IN_PROGRESS (the write lost to a concurrent one, or
# the record that blocked it is gone again); UNAVAILABLE (not written: throttled, after retries).
PutAnswer = ClaimStatus | ClaimRecord


def data_hash(event: CloudEvent[Any]) -> str:
    """What tells two events with one id apart: a hash of the canonical JSON of their ``data``, less
    its measurements (``EventData.MEASUREMENTS``: a result scored again differs only in those)."""
    data = event.data
    measured = data.MEASUREMENTS.intersection(type(data).model_fields)
    return hashlib.md5(data.model_dump_json(exclude=measured or None).encode(), usedforsecurity=False).hexdigest()


def claimable(existing: ClaimRecord | None, *, now_ms: int) -> bool:
    """May a new claim replace ``existing``? When there is none, when it has expired (a store's own
    expiry can lag by days), or when it is in progress past its holder's deadline (a crashed invocation).
    A store applies this condition atomically with its write."""
    if existing is None or existing.expires_at_s < now_ms // 1000:
        return True
    return existing.state is ClaimState.IN_PROGRESS and (existing.held_until_ms or 0) < now_ms


def acceptable(existing: ClaimRecord | None, *, now_ms: int) -> bool:
    """May a workflow own an event that ``existing`` holds? Only when there is none, or it has expired."""
    return existing is None or existing.expires_at_s < now_ms // 1000


def decide(existing: ClaimRecord | None, validation: str) -> ClaimStatus:
    """The status of a claim that ``existing`` blocked: a conflict (other data), done, or held elsewhere."""
    if existing is None:
        return ClaimStatus.IN_PROGRESS  # gone again already: let the event come back later
    if existing.validation != validation:
        return ClaimStatus.CONFLICT
    if existing.state is ClaimState.COMPLETED:
        return ClaimStatus.ALREADY_DONE
    return ClaimStatus.IN_PROGRESS


class ClaimStore(abc.ABC):
    """Exactly-once claims on events: the policy here, the storage in a subclass.

    Parameters
    ----------
    scope
        Prefix of the keys, so consumers and workflows sharing a store do not collide.
    expires_after_seconds
        How long a completed claim suppresses duplicates (the stack derives it from the
        longest redelivery path: archive replay plus DLQ retention).
    """

    def __init__(self, *, scope: str, expires_after_seconds: int) -> None:
        self.scope = scope
        self.expires_after_seconds = expires_after_seconds

    # -- the policy ------------------------------------------------------------------------------

    def claim(self, events: Sequence[CloudEvent[Any]], *, remaining_ms: int | None) -> list[ClaimStatus]:
        """Try to own every event; one status per event, in order.

        ``remaining_ms`` bounds how long the in-progress claims hold (default: the completed
        lifetime). A second copy of an event (same source and id) in the batch is held by the first
        (or, with other data, a conflict); the store is asked only once per event.
        """
        now_ms = int(time.time() * 1000)
        hold_ms = remaining_ms if remaining_ms is not None else self.expires_after_seconds * 1000
        hashes = [data_hash(event) for event in events]
        keys = [event_key(event) for event in events]
        statuses: list[ClaimStatus | None] = [None] * len(events)
        first: dict[str, int] = {}
        for index, key in enumerate(keys):
            if key in first:
                same = hashes[first[key]] == hashes[index]
                statuses[index] = ClaimStatus.IN_PROGRESS if same else ClaimStatus.CONFLICT
            else:
                first[key] = index
        pending = list(first.values())
        records = [ClaimRecord(keys[index], ClaimState.IN_PROGRESS, hashes[index],
                               expires_at_s=now_ms // 1000 + self.expires_after_seconds,
                               held_until_ms=now_ms + hold_ms, claimed_at_ms=now_ms) for index in pending]
        answers = self.put_in_progress(records, now_ms=now_ms) if records else []
        for index, answer in zip(pending, answers, strict=True):
            statuses[index] = answer if isinstance(answer, ClaimStatus) else decide(answer, hashes[index])
        return [status or ClaimStatus.UNAVAILABLE for status in statuses]

    def complete(self, completions: Sequence[tuple[CloudEvent[Any], Mapping[str, Any]]]) -> list[str]:
        """Mark each ``(event, result)`` done, storing the small ``result`` (the id of the event published).

        Returns the keys (:func:`claim_key`) of the events whose completion could not be written: their
        claims stay in progress until they expire, so a redelivery after that would repeat their result.
        """
        expires_at_s = int(time.time()) + self.expires_after_seconds
        return self.put_completed([ClaimRecord(event_key(event), ClaimState.COMPLETED, data_hash(event), expires_at_s,
                                               result=result) for event, result in completions])

    def release(self, events: Sequence[CloudEvent[Any]]) -> list[str]:
        """Give the claims back after a failure, so a redelivery can process the events.

        Returns the keys whose claims could not be deleted (they expire with the invocation's deadline).
        """
        return self.delete([event_key(event) for event in events])

    def accept_once(self, event: CloudEvent[Any], *, owner: str) -> ClaimStatus:
        """Own ``event`` for ``owner`` (a workflow execution) in ONE conditional write, completed at once.

        A workflow owns an event from the moment it accepts it (its failure path reports what
        happens next), so there is no in-progress state for a crash to leave behind. ``owner``
        asking again, as a retried step does, gets ``CLAIMED`` again; anyone else gets
        ``ALREADY_DONE``; the same source and id with other data, ``CONFLICT``.
        """
        now_ms = int(time.time() * 1000)
        validation = data_hash(event)
        record = ClaimRecord(event_key(event), ClaimState.COMPLETED, validation, now_ms // 1000 + self.expires_after_seconds,
                             result={"owner": owner})
        written, existing = self.put_accepted(record, now_ms=now_ms)
        if written:
            return ClaimStatus.CLAIMED
        status = decide(existing, validation)
        if status is ClaimStatus.ALREADY_DONE and existing is not None:
            return ClaimStatus.CLAIMED if (existing.result or {}).get("owner") == owner else ClaimStatus.ALREADY_DONE
        return status

    # -- the storage: what an implementation provides ------------------------------------------

    @abc.abstractmethod
    def put_in_progress(self, records: Sequence[ClaimRecord], *, now_ms: int) -> list[PutAnswer]:
        """Write each record if :func:`claimable` holds for what its id has now (atomically per record).

        Keys are distinct. Returns one :data:`PutAnswer` per record, in order.
        """

    @abc.abstractmethod
    def put_completed(self, records: Sequence[ClaimRecord]) -> list[str]:
        """Write completed records, replacing what their keys hold; the keys not written."""

    @abc.abstractmethod
    def delete(self, keys: Sequence[str]) -> list[str]:
        """Delete the claims of these keys (a missing one is deleted); the keys not deleted."""

    @abc.abstractmethod
    def put_accepted(self, record: ClaimRecord, *, now_ms: int) -> tuple[bool, ClaimRecord | None]:
        """Write ``record`` if :func:`acceptable` holds: ``(True, None)``; else ``(False, the record that holds it)``."""

    @abc.abstractmethod
    def end_hold(self, key: str, *, claimed_before_ms: int, now_ms: int) -> bool:
        """End the hold of the in-progress claim under ``key`` (:func:`claim_key`) if it was taken before ``claimed_before_ms``
        (it becomes claimable at once); whether one was. The embedded runtime uses it where it
        compresses time; a production path never does."""
