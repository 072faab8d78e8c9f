"""Sets that remember only a window: the last ``keep`` members, each for at most a given age.

A twin that runs without end (``inferbus serve``) must not remember every name or handle it has
seen: it remembers what can still come back, for the retention window, and no more than a cap.

Example
-------
>>> seen = RecentSet(keep=2)
>>> seen.update(["a", "b", "c"])
>>> sorted(seen)
['b', 'c']
>>> seen.forget_before(float("inf"))
2
>>> "c" in seen
False
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["RecentSet"]


class RecentSet(set):  # type: ignore[type-arg]
    """A set of the last ``keep`` members added, oldest forgotten first; :meth:`forget_before` also ages them out.

    A ``set`` subclass, so code that holds a plain set (moto's) keeps working on it unchanged.

    Parameters
    ----------
    members
        The members to start with, taken as added now.
    keep
        The most members kept.
    clock
        When a member was added (``time.monotonic``).
    """

    def __init__(self, members: Iterable[Any] = (), *, keep: int, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        self.keep = keep
        self._clock = clock
        self._added: dict[Any, float] = {}  # in order of addition: the oldest first
        self.update(members)

    def update(self, *groups: Iterable[Any]) -> None:  # type: ignore[override]
        now = self._clock()
        for group in groups:
            for member in group:
                self._added.pop(member, None)  # added again: now its newest
                self._added[member] = now
                set.add(self, member)
        while len(self._added) > self.keep:
            self._forget_oldest()

    def add(self, member: Any) -> None:
        self.update((member,))

    def discard(self, member: Any) -> None:
        self._added.pop(member, None)
        set.discard(self, member)

    def forget_before(self, moment: float) -> int:
        """Forget the members added before ``moment`` (on the set's clock); return how many."""
        forgotten = 0
        while self._added and next(iter(self._added.values())) < moment:
            self._forget_oldest()
            forgotten += 1
        return forgotten

    def _forget_oldest(self) -> None:
        oldest = next(iter(self._added))
        del self._added[oldest]
        set.discard(self, oldest)
