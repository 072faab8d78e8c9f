"""A local event source mapping that behaves as Lambda's does; the channel is a :class:`~.channels.LocalChannel`
(SQS first: :class:`~.channels.SqsChannel`).

It honours the template's ``BatchSize``, ``MaximumBatchingWindowInSeconds``,
``ReportBatchItemFailures`` and ``ScalingConfig.MaximumConcurrency``; the queue's visibility
timeout and redrive policy are the template's and moto applies them. Received messages are
held (in flight, invisible) while a batch fills, as Lambda's poller holds them.

Started (:meth:`LocalEventSource.start`), a poller thread fills batches as messages arrive
(woken by the patched moto, :mod:`.moto_patches`, not by polling) and hands each to a worker:
at most ``MaximumConcurrency`` batches run at once (and no more than the function's
reserved concurrency and local environments). Stopped, :meth:`LocalEventSource.pump` invokes
one batch on the caller's thread, for a test that steps through deliveries.

One difference, on purpose: a failed record is made visible again as soon as every other
invocation of the function that was running when it failed has ended, instead of after
``VisibilityTimeout`` seconds, so a local run does not wait minutes per retry. (The timeout,
six times the function's, always outlasts those invocations; a record that failed because
another invocation held its claim is retried after that one ended, as in AWS.) The number of
deliveries, and so the move to the DLQ after ``maxReceiveCount``, is unchanged.
A failed record the function itself hid for a backoff (``ChangeMessageVisibility`` during its
invocation: a consumer over its rate, :mod:`inferbus_lambda.rate_limit`) is left hidden, as in
AWS: it comes back when its backoff ends, never sooner (counted in :attr:`LocalEventSource.backed_off`).
Whatever else the timeout would have let expire (an application's own leases, such as
idempotency claims an invocation left in progress) is the caller's to expire at that moment:
the ``after_failure`` hook runs when failed records are about to be visible again, with
their messages and the moment they failed.

For chaos experiments the source can also deliver records twice, as at-least-once delivery may: ``duplicate_rate`` is the share of successfully processed records that are
delivered again (a copy of the message goes back on the queue, once: a copy is not copied; on an
ordered channel the message itself is left undeleted and comes back in its place, as after a
lost delete, so a duplicate never lands behind its group's later records).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .activity import Activity
from .channels import DUPLICATE_MARK, LocalChannel, SqsChannel
from .lambda_host import Invocation, LocalFunction
from .specs import EventSourceSpec, QueueInfo

__all__ = ["DUPLICATE_MARK", "AfterFailure", "LocalEventSource"]
AfterFailure = Callable[[LocalFunction, list[dict[str, Any]], int], int]
LAMBDA_DEFAULT_CONCURRENCY = 1000  # an SQS mapping without MaximumConcurrency scales to the account's limit
IDLE_WAIT_S = 1.0  # a started poller re-checks an idle queue this often (a message may become visible by time)


class LocalEventSource:
    """One event source mapping: a channel, its function, and the poller between them.

    Parameters
    ----------
    spec, function
        The mapping and its function, as provisioned.
    channel
        Where the records come from (:class:`~.channels.LocalChannel`).
    after_failure
        ``after_failure(function, messages, failed_at_ms)``, called when records that failed (a
        whole invocation, or items of its batch) are about to be visible again; returns how many
        leases it expired (summed in :attr:`expired_after_failures`).
    activity
        Signalled when an invocation of this source ends (what a wait for quiescence watches).
    wakeup
        What the poller waits on for records: signalled when its channel may have one (by whoever
        watches the channel), when an invocation of its own ends and when it stops. Default: ``activity``.
    """

    def __init__(self, spec: EventSourceSpec, channel: LocalChannel, function: LocalFunction,
                 after_failure: AfterFailure | None = None, activity: Activity | None = None,
                 wakeup: Activity | None = None) -> None:
        self.spec = spec
        self.channel = channel
        self.function = function
        self.after_failure = after_failure
        self.activity = activity or Activity()
        self.wakeup = wakeup or self.activity
        self._held: list[dict[str, Any]] = []
        self._first_held_at = 0.0
        self.deliveries = 0
        self.duplicate_rate = 0.0
        self.duplicates_delivered = 0
        self._again: set[str] = set()  # messages already delivered twice in place (an ordered channel's duplicates)
        self.expired_after_failures = 0
        self.backed_off = 0  # failed records the function hid for a backoff: left hidden, not released
        self._draws = random.Random()  # noqa: S311 - chaos, not crypto
        self._counts = threading.Lock()
        self._poller: threading.Thread | None = None
        self._workers: ThreadPoolExecutor | None = None
        self._stopping = threading.Event()
        self._in_flight = 0  # batches handed to workers and not finished
        # failed records waiting for the invocations running when they failed to end, when they failed, and the ids
        # of those the function hid for a backoff (left hidden when the others are released)
        self._failed: list[tuple[frozenset[int], list[dict[str, Any]], int, set[str]]] = []
        self.on_invocation: Callable[[LocalEventSource, Invocation], None] | None = None

    @property
    def queue(self) -> QueueInfo:
        """The SQS queue (an :class:`~.channels.SqsChannel`'s): what tools that redrive and inspect read."""
        if not isinstance(self.channel, SqsChannel):
            raise AttributeError(f"{self.channel.name} is not an SQS queue")
        return self.channel.queue

    @property
    def max_concurrency(self) -> int:
        """Batches that may run at once: ``MaximumConcurrency``, capped by the function's environments."""
        return min(self.spec.max_concurrency or LAMBDA_DEFAULT_CONCURRENCY, self.function.max_environments)

    def redeliver(self, rate: float, *, seed: int | None = None) -> None:
        """Deliver ``rate`` of the successfully processed records a second time (0 switches it off)."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be in [0, 1], got {rate}")
        self.duplicate_rate = rate
        self._draws.seed(seed)

    def _receive(self) -> None:
        while len(self._held) < self.spec.batch_size and not self._stopping.is_set():
            if not self.channel.ready():
                return
            messages = self.channel.receive(min(self.channel.max_per_receive, self.spec.batch_size - len(self._held)))
            if not messages:
                return
            if not self._held:
                self._first_held_at = time.monotonic()
            self._held.extend(messages)

    def _window_open(self) -> bool:
        return time.monotonic() - self._first_held_at < self.spec.max_batching_window_s

    def pump(self, *, wait: bool = False) -> Invocation | None:
        """Invoke once if a batch is ready: full, or its window has passed.

        With ``wait``, a partial batch waits out the rest of its window (draining).
        """
        if self.started:
            raise RuntimeError("the source polls by itself while started: stop the pipeline to step through it")
        self._release_due()
        self._receive()
        if not self._held:
            return None
        if len(self._held) < self.spec.batch_size and self._window_open():
            if not wait:
                return None
            time.sleep(max(0.0, self.spec.max_batching_window_s - (time.monotonic() - self._first_held_at)))
            self._receive()
        batch, self._held = self._held, []
        return self._invoke(batch)

    # -- started: a poller thread and up to max_concurrency workers ----------------------------

    @property
    def started(self) -> bool:
        return self._poller is not None

    def start(self) -> None:
        """Poll in the background until :meth:`stop`."""
        if self._poller is not None:
            return
        self._stopping.clear()
        self._workers = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix=f"esm-{self.channel.name[:20]}")
        self._slots = threading.Semaphore(self.max_concurrency)
        self._poller = threading.Thread(target=self._poll, name=f"poller-{self.channel.name[:20]}", daemon=True)
        self._poller.start()

    def stop(self) -> None:
        """Stop polling; batches already handed over finish; what is held is released to the queue."""
        if self._poller is None:
            return
        self._stopping.set()
        self.wakeup.changed()
        self._poller.join()
        assert self._workers is not None
        self._workers.shutdown(wait=True)
        self._poller = self._workers = None
        if self._held:
            self.channel.release(self._held)
            self._held = []

    @property
    def busy(self) -> bool:
        """A batch is held or running, or failed records wait to be made visible again."""
        if self._failed:
            self._release_due()
        return bool(self._held) or self._in_flight > 0 or bool(self._failed)

    def _poll(self) -> None:
        while not self._stopping.is_set():
            if not self._slots.acquire(timeout=IDLE_WAIT_S):
                continue
            batch = self._next_batch()
            if batch is None:
                self._slots.release()
                continue
            with self._counts:
                self._in_flight += 1
            assert self._workers is not None
            self._workers.submit(self._work, batch)

    def _next_batch(self) -> list[dict[str, Any]] | None:
        """Wait for a batch: full, or its window passed (None when stopping)."""
        while not self._stopping.is_set():
            seen = self.wakeup.generation
            self._release_due()
            self._receive()
            if self._held and (len(self._held) >= self.spec.batch_size or not self._window_open()):
                batch, self._held = self._held, []
                return batch
            window_left = self.spec.max_batching_window_s - (time.monotonic() - self._first_held_at)
            self.wakeup.wait(seen, window_left if self._held else IDLE_WAIT_S)
        return None

    def _work(self, batch: list[dict[str, Any]]) -> None:
        try:
            invocation = self._invoke(batch)
            if self.on_invocation is not None:
                self.on_invocation(self, invocation)
        finally:
            with self._counts:
                self._in_flight -= 1
            self._slots.release()
            if self.wakeup is not self.activity:
                self.wakeup.changed()
            self.activity.changed()

    def _invoke(self, messages: list[dict[str, Any]]) -> Invocation:
        with self._counts:
            self.deliveries += len(messages)
        response, invocation = self.function.invoke(self.channel.lambda_event(messages))
        failed_at_ms = int(time.time() * 1000)
        if invocation.error is not None:
            failed = {self.channel.message_id(message) for message in messages}
        elif self.spec.report_batch_item_failures:
            failed = set(invocation.failed_ids)
        else:
            failed = set()
        done = [message for message in messages if self.channel.message_id(message) not in failed]
        kept: list[dict[str, Any]] = []  # duplicates delivered in place: not deleted, so they come again
        for message in done:
            message_id = self.channel.message_id(message)
            is_copy = self.channel.is_copy(message) or message_id in self._again
            with self._counts:
                twice = bool(self.duplicate_rate) and not is_copy and self._draws.random() < self.duplicate_rate
                self.duplicates_delivered += twice
            if twice and self.channel.duplicates_in_place:
                self._again.add(message_id)
                kept.append(message)
            elif twice:
                self.channel.deliver_again(message)
        self.channel.ack([message for message in done if not any(message is k for k in kept)])
        if kept:
            self.channel.release(kept)
        retry = [message for message in messages if self.channel.message_id(message) in failed]
        if retry:
            # Read now, while the receipts are still this invocation's: by the time the record is released its backoff
            # may have ended and the message been received again under a new receipt.
            hidden = self.channel.hidden_by_function(retry)  # their backoff is the function's: not shortened
            with self._counts:
                self.backed_off += len(hidden)
                self._failed.append((self.function.running_ids(), retry, failed_at_ms, hidden))
        self._release_due()
        return invocation

    def _release_due(self) -> None:
        """Make failed records visible again once the invocations running when they failed have ended."""
        running = self.function.running_ids()
        with self._counts:
            due = [(messages, failed_at, hidden) for waiting_for, messages, failed_at, hidden in self._failed
                   if not waiting_for & running]
            self._failed = [pending for pending in self._failed if pending[0] & running]
        for messages, failed_at_ms, hidden in due:
            if self.after_failure is not None:  # the time the visibility timeout stands for has passed for them
                expired = self.after_failure(self.function, messages, failed_at_ms)
                with self._counts:
                    self.expired_after_failures += expired
            self.channel.release([message for message in messages if self.channel.message_id(message) not in hidden])

    def backlog(self) -> int:
        """Messages still to deliver: visible, or in flight (which includes those this poller holds)."""
        return self.channel.backlog()
