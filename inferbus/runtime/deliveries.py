"""Rule deliveries made after PutEvents has answered, for events that clients put over HTTP.

EventBridge answers ``PutEvents`` once it has taken the events; matching them against the bus's
rules and delivering them to the targets happens afterwards. moto does all of it inside the
request, under the lock that every Step Functions, SQS and EventBridge request takes. While the
twin's consumers and workflows run in the same interpreter, a client's ``PutEvents`` would wait
behind their requests for that lock. Measured: a server-side PutEvents of 10 valid events spent
55 ms waiting for the lock and 33 ms holding it, against 4 ms of its own CPU.

``inferbus serve`` therefore answers a client's ``PutEvents`` without the lock. The checks that
decide the answer still happen in the request: size limits, required fields, malformed Detail,
the bus's resource policy, a bus that does not exist. The matching and the deliveries are handed
to one thread, batch by batch, in the order the requests came. A call made in process, such as a
function's ``PutEvents`` of its results, the demo's, or a test's, still delivers before it returns.

Example
-------
>>> deliveries = Deliveries(limit=100)
>>> deliveries.deferring()      # not on a thread answering a client, and not started
False
>>> with deliveries.answering_client():
...     deliveries.deferring()  # and start() is still needed
False
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

LOGGER = logging.getLogger(__name__)
DEFAULT_LIMIT = 10_000  # events taken and not yet delivered; a PutEvents past it waits (memory stays bounded)
STOP_WAIT_S = 60.0  # how long stop() lets the thread deliver what is left
KEPT_FAILURES = 100  # the last failures kept for reading: what an operator reads, not a log of every one


@dataclass(frozen=True)
class DeliveryFailure:
    """One event a rule matched whose delivery raised (in AWS: the rule's FailedInvocations)."""

    event_id: str
    rule_arn: str
    reason: str


class Deliveries:
    """A queue of rule deliveries and the one thread that makes them.

    Parameters
    ----------
    limit
        Most events taken and not yet delivered. A ``PutEvents`` that would go past it waits for
        room, so a client that puts faster than the twin delivers is slowed down, not buffered
        without bound.
    """

    def __init__(self, *, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        self.limit = limit
        self.on_failure: Callable[[DeliveryFailure], None] | None = None
        self._local = threading.local()
        self._queue: queue.Queue[tuple[Callable[[], list[DeliveryFailure]], int] | None] = queue.Queue()
        self._room = threading.Condition()
        self._pending = 0
        self._thread: threading.Thread | None = None
        self.failures: list[DeliveryFailure] = []

    @contextmanager
    def answering_client(self) -> Iterator[None]:
        """Mark this thread as answering a client's HTTP request for the time of the block."""
        previous = getattr(self._local, "client", False)
        self._local.client = True
        try:
            yield
        finally:
            self._local.client = previous

    def deferring(self) -> bool:
        """Whether a ``PutEvents`` on this thread should hand its deliveries over (started, and answering a client)."""
        return self._thread is not None and getattr(self._local, "client", False)

    @property
    def pending(self) -> int:
        """Events taken whose deliveries are not done yet."""
        return self._pending

    def defer(self, deliver: Callable[[], list[DeliveryFailure]], events: int) -> None:
        """Queue ``deliver`` (it delivers ``events`` events and returns what failed); wait for room past the limit.

        Stopped meanwhile (the thread has taken its last batch): ``deliver`` runs here, so nothing is left behind.
        """
        with self._room:
            self._room.wait_for(lambda: self._pending == 0 or self._pending + events <= self.limit)
            queued = self._thread is not None
            if queued:  # under the same lock as stop()'s last item: nothing is queued behind it
                self._pending += events
                self._queue.put((deliver, events))
        if not queued:
            self._tell(deliver())

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="deliveries", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Deliver what was taken, then stop the thread (later PutEvents deliver in the request again)."""
        with self._room:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            self._queue.put(None)
        thread.join(timeout=STOP_WAIT_S)
        if thread.is_alive():
            LOGGER.error("%d events taken were still being delivered after %g s", self._pending, STOP_WAIT_S)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            deliver, events = item
            try:
                failed = deliver()
            except Exception as error:  # noqa: BLE001 - the thread must go on: every later event depends on it
                LOGGER.exception("a batch of %d events could not be delivered", events)
                failed = [DeliveryFailure("?", "?", f"{type(error).__name__}: {error}")]
            self._tell(failed)
            with self._room:
                self._pending -= events
                self._room.notify_all()

    def _tell(self, failed: list[DeliveryFailure]) -> None:
        for failure in failed:
            self.failures.append(failure)
            del self.failures[:-KEPT_FAILURES]
            if self.on_failure is not None:
                self.on_failure(failure)


DELIVERIES = Deliveries()  # the twin's one bus front: moto is patched for one pipeline at a time
