"""Claims in a dict: the second implementation of :class:`~.base.ClaimStore`, for tests and local tools.

It applies the same conditions as a real store, atomically under a lock, so the policy behaves
exactly as it does on DynamoDB; nothing survives the process.

Example
-------
>>> store = InMemoryClaimStore(scope="image-classifier", expires_after_seconds=3600)
>>> store.delete(["never-claimed"])
[]
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

from .base import ClaimRecord, ClaimState, ClaimStatus, ClaimStore, PutAnswer, acceptable, claimable

__all__ = ["InMemoryClaimStore"]


class InMemoryClaimStore(ClaimStore):
    """Claims kept in :attr:`records`, by :func:`~.base.claim_key`.

    Parameters
    ----------
    scope, expires_after_seconds
        See :class:`~.base.ClaimStore`.
    """

    def __init__(self, *, scope: str, expires_after_seconds: int) -> None:
        super().__init__(scope=scope, expires_after_seconds=expires_after_seconds)
        self.records: dict[str, ClaimRecord] = {}
        self._lock = threading.Lock()

    def put_in_progress(self, records: Sequence[ClaimRecord], *, now_ms: int) -> list[PutAnswer]:
        answers: list[PutAnswer] = []
        with self._lock:
            for record in records:
                existing = self.records.get(record.key)
                if claimable(existing, now_ms=now_ms):
                    self.records[record.key] = record
                    answers.append(ClaimStatus.CLAIMED)
                else:
                    assert existing is not None
                    answers.append(existing)
        return answers

    def put_completed(self, records: Sequence[ClaimRecord]) -> list[str]:
        with self._lock:
            self.records.update({record.key: record for record in records})
        return []

    def delete(self, keys: Sequence[str]) -> list[str]:
        with self._lock:
            for key in keys:
                self.records.pop(key, None)
        return []

    def put_accepted(self, record: ClaimRecord, *, now_ms: int) -> tuple[bool, ClaimRecord | None]:
        with self._lock:
            existing = self.records.get(record.key)
            if acceptable(existing, now_ms=now_ms):
                self.records[record.key] = record
                return True, None
            return False, existing

    def end_hold(self, key: str, *, claimed_before_ms: int, now_ms: int) -> bool:
        with self._lock:
            existing = self.records.get(key)
            if (existing is None or existing.state is not ClaimState.IN_PROGRESS
                    or (existing.claimed_at_ms or 0) >= claimed_before_ms):
                return False
            self.records[key] = dataclasses.replace(existing, held_until_ms=now_ms - 1)
            return True
