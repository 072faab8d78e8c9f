"""A local SQS event source mapping that behaves as Lambda's does, one poller.

It honours the template's ``BatchSize``, ``MaximumBatchingWindowInSeconds`` and
``ReportBatchItemFailures``; the queue's visibility timeout and redrive policy are the
template's and moto applies them. Received messages are held (in flight, invisible)
while a batch fills, as Lambda's poller holds them.

One difference, on purpose: a failed record is made visible again at once instead of
after ``VisibilityTimeout`` seconds, so a local run does not wait minutes per retry. The
number of deliveries, and so the move to the DLQ after ``maxReceiveCount``, is unchanged.
Whatever else the timeout would have let expire (an application's own leases, such as
idempotency claims an invocation left in progress) is the caller's to expire at once: the
``after_failure`` hook runs after every invocation that failed as a whole.

For chaos experiments the source can also deliver records twice, as SQS's at-least-once
delivery may: ``duplicate_rate`` is the share of successfully processed records that are
delivered again (a copy of the message goes back on the queue, once: a copy is not copied).
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from typing import Any

from .lambda_host import Invocation, LocalFunction
from .queue_ops import SQS_BATCH_LIMIT, delete_messages, release_messages
from .resources import REGION
from .specs import EventSourceSpec, QueueInfo

DUPLICATE_MARK = "local-duplicate"  # a message attribute on the copies the source delivers again
AfterFailure = Callable[[LocalFunction], int]


class LocalEventSource:
    """One event source mapping: a queue, its function, and the poller between them.

    Parameters
    ----------
    spec, queue, function
        The mapping, its queue and its function, as provisioned.
    sqs
        A boto3 SQS client inside the mock.
    after_failure
        Called with the function after an invocation that failed as a whole; returns how many
        leases it expired (summed in :attr:`expired_after_failures`).
    """

    def __init__(self, spec: EventSourceSpec, queue: QueueInfo, function: LocalFunction, sqs: Any,
                 after_failure: AfterFailure | None = None) -> None:
        self.spec = spec
        self.queue = queue
        self.function = function
        self.sqs = sqs
        self.after_failure = after_failure
        self._held: list[dict[str, Any]] = []
        self._first_held_at = 0.0
        self.deliveries = 0
        self.duplicate_rate = 0.0
        self.duplicates_delivered = 0
        self.expired_after_failures = 0
        self._draws = random.Random()  # noqa: S311 - chaos, not crypto

    def redeliver(self, rate: float, *, seed: int | None = None) -> None:
        """Deliver ``rate`` of the successfully processed records a second time (0 switches it off)."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be in [0, 1], got {rate}")
        self.duplicate_rate = rate
        self._draws.seed(seed)

    def _receive(self) -> None:
        while len(self._held) < self.spec.batch_size:
            wanted = min(SQS_BATCH_LIMIT, self.spec.batch_size - len(self._held))
            messages = self.sqs.receive_message(
                QueueUrl=self.queue.url, MaxNumberOfMessages=wanted, AttributeNames=["All"], MessageAttributeNames=["All"]
            ).get("Messages", [])
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

    def _invoke(self, messages: list[dict[str, Any]]) -> Invocation:
        self.deliveries += len(messages)
        records = [self._record(message) for message in messages]
        response, invocation = self.function.invoke({"Records": records})
        if invocation.error is not None:
            failed = {message["MessageId"] for message in messages}
            if self.after_failure is not None:
                self.expired_after_failures += self.after_failure(self.function)
        elif self.spec.report_batch_item_failures:
            failed = set(invocation.failed_ids)
        else:
            failed = set()
        done = [message for message in messages if message["MessageId"] not in failed]
        for message in done:
            is_copy = DUPLICATE_MARK in message.get("MessageAttributes", {})
            if self.duplicate_rate and not is_copy and self._draws.random() < self.duplicate_rate:
                self.sqs.send_message(QueueUrl=self.queue.url, MessageBody=message["Body"],
                                      MessageAttributes={DUPLICATE_MARK: {"DataType": "String", "StringValue": "true"}})
                self.duplicates_delivered += 1
        delete_messages(self.sqs, self.queue.url, done)
        release_messages(self.sqs, self.queue.url, [message for message in messages if message["MessageId"] in failed])
        return invocation

    def _record(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": message.get("MessageAttributes", {}),
            "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode()).hexdigest(),  # noqa: S324
            "eventSource": "aws:sqs",
            "eventSourceARN": self.queue.arn,
            "awsRegion": REGION,
        }

    def backlog(self) -> int:
        """Messages still to deliver: visible, or in flight (which includes those this poller holds)."""
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=self.queue.url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])
