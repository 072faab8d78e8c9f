"""One signal for "something may have moved": a message arrived, an invocation or an execution ended.

Waiters read :attr:`Activity.generation` before they look at the state they wait on, then
:meth:`Activity.wait` for a later generation: a change between the look and the wait is never
missed. This is what lets pollers and ``drain`` sleep until there is work instead of polling.
"""

from __future__ import annotations

import threading


class Activity:
    """A counter of changes, and a condition to wait for the next one."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self.generation = 0

    def changed(self, *_: object) -> None:
        """Something moved (the arguments, a hook's, are ignored)."""
        with self._condition:
            self.generation += 1
            self._condition.notify_all()

    def wait(self, seen: int, timeout_s: float) -> bool:
        """Wait until the generation is past ``seen`` or ``timeout_s`` passes; True if it moved."""
        with self._condition:
            return self._condition.wait_for(lambda: self.generation != seen, timeout=max(0.0, timeout_s))
