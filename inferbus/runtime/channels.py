"""What a local event source mapping needs from a channel, and SQS as the first one.

:class:`~.event_source.LocalEventSource` is the poller Lambda runs for an event source
mapping: batches, the batching window, concurrency, retries after failures, duplicate
deliveries. Everything it knows of the channel itself goes through a :class:`LocalChannel`:

===================  ========================================================================
method               what a channel does
===================  ========================================================================
``ready``            is anything receivable now (cheap: looked at before every receive)?
``receive``          take up to N messages, held (invisible to other pollers) until acked or
                     released
``ack``              the messages are done: delete them (SQS), commit their offsets (Kafka)
``release``          the messages failed: make them deliverable again at once
``deliver_again``    put a copy of a message back, marked as a copy (an at-least-once
                     duplicate)
``is_copy``          was this message put back by ``deliver_again``?
``message_id``       the id the function's batch response names a message by
``lambda_event``     the Lambda event for a batch, in the shape the real mapping sends
``backlog``          messages not yet done (visible or in flight)
``close``            let go of the channel's connections (a broker's); default none
===================  ========================================================================

Of the failed messages, ``hidden_by_function`` names those the function itself hid for a backoff
(SQS's ``ChangeMessageVisibility``): the poller does not release them, they come back when the
backoff ends (default none: a channel without a visibility timeout has no such backoff).

An ordered channel (an SQS FIFO queue) says so with ``duplicates_in_place``: the poller then
delivers a duplicate by leaving the message undeleted, as a lost delete would, never as a copy
behind its group's later messages.

A Kafka or RabbitMQ poller is one module with a :class:`LocalChannel` subclass (its own
``lambda_event``: AWS's documented Kafka or Amazon MQ event shape); the poller is unchanged.
RabbitMQ's is :class:`~.rabbitmq.RabbitMqChannel`, on a real broker.
"""

from __future__ import annotations

import abc
import hashlib
from typing import Any

from .queue_ops import SQS_BATCH_LIMIT, lambda_message_attributes, release_messages
from .resources import REGION
from .specs import QueueInfo

__all__ = ["LocalChannel", "SqsChannel"]

DUPLICATE_MARK = "local-duplicate"  # a message attribute on the copies the source delivers again
Message = dict[str, Any]


class LocalChannel(abc.ABC):
    """A channel as the local poller sees it; see the module's table for the methods.

    Attributes
    ----------
    name
        For thread names and logs.
    max_per_receive
        Most messages one :meth:`receive` returns.
    """

    name: str
    max_per_receive: int

    @abc.abstractmethod
    def ready(self) -> bool: ...

    @abc.abstractmethod
    def receive(self, count: int) -> list[Message]: ...

    @abc.abstractmethod
    def ack(self, messages: list[Message]) -> None: ...

    @abc.abstractmethod
    def release(self, messages: list[Message]) -> None: ...

    @abc.abstractmethod
    def deliver_again(self, message: Message) -> None: ...

    @abc.abstractmethod
    def is_copy(self, message: Message) -> bool: ...

    @abc.abstractmethod
    def message_id(self, message: Message) -> str: ...

    @abc.abstractmethod
    def lambda_event(self, messages: list[Message]) -> dict[str, Any]: ...

    @abc.abstractmethod
    def backlog(self) -> int: ...

    def close(self) -> None:
        """Let go of the channel's connections (a broker's); a queue on moto holds none."""

    def hidden_by_function(self, messages: list[Message]) -> set[str]:
        """The ids of ``messages`` (failed) that the function hid for a backoff of its own while it had them:
        the poller leaves them hidden. Default none: a channel without a visibility timeout has no such backoff."""
        return set()

    @property
    def duplicates_in_place(self) -> bool:
        """Whether an at-least-once duplicate comes back in its place (the message not deleted: visible again at
        the head of its ordering group) instead of as a copy at the end: an ordered channel never reorders."""
        return False


class SqsChannel(LocalChannel):
    """An SQS queue on moto: received messages are in flight (invisible) until deleted or made visible.

    A FIFO queue is one too: moto holds back a message group while any of its messages is in
    flight, as SQS does, so batches of one group never run at once and a failed message (made
    visible again) comes back before its group's later ones.

    Parameters
    ----------
    queue
        The queue, as provisioned (its visibility timeout and redrive policy are moto's to apply).
    sqs
        A boto3 SQS client inside the mock.
    """

    max_per_receive = SQS_BATCH_LIMIT

    def __init__(self, queue: QueueInfo, sqs: Any) -> None:
        self.queue = queue
        self.sqs = sqs
        self.name = queue.name
        self.fifo = queue.name.endswith(".fifo")

    def ready(self) -> bool:
        from .moto_patches import receivable

        return receivable(self.queue.arn)  # looked at in-process: a request for nothing slows every other

    def receive(self, count: int) -> list[Message]:
        from .moto_patches import receive_in_process

        return receive_in_process(self.queue.arn, min(count, SQS_BATCH_LIMIT))  # the poller is AWS's: no API request

    def ack(self, messages: list[Message]) -> None:
        from .moto_patches import delete_in_process

        delete_in_process(self.queue.arn, [message["ReceiptHandle"] for message in messages])

    def release(self, messages: list[Message]) -> None:
        release_messages(self.sqs, self.queue.url, messages)

    def hidden_by_function(self, messages: list[Message]) -> set[str]:
        from .moto_patches import hidden_on_purpose

        hidden = hidden_on_purpose(self.queue.arn, [message["ReceiptHandle"] for message in messages])
        return {message["MessageId"] for message in messages if message["ReceiptHandle"] in hidden}

    @property
    def duplicates_in_place(self) -> bool:
        return self.fifo

    def deliver_again(self, message: Message) -> None:
        self.sqs.send_message(QueueUrl=self.queue.url, MessageBody=message["Body"],
                              MessageAttributes={DUPLICATE_MARK: {"DataType": "String", "StringValue": "true"}})

    def is_copy(self, message: Message) -> bool:
        return DUPLICATE_MARK in message.get("MessageAttributes", {})

    def message_id(self, message: Message) -> str:
        return str(message["MessageId"])

    def lambda_event(self, messages: list[Message]) -> dict[str, Any]:
        return {"Records": [self._record(message) for message in messages]}

    def _record(self, message: Message) -> dict[str, Any]:
        return {
            "messageId": message["MessageId"],
            "receiptHandle": message["ReceiptHandle"],
            "body": message["Body"],
            "attributes": message.get("Attributes", {}),
            "messageAttributes": lambda_message_attributes(message.get("MessageAttributes", {})),
            "md5OfBody": message.get("MD5OfBody") or hashlib.md5(message["Body"].encode()).hexdigest(),  # noqa: S324
            "eventSource": "aws:sqs",
            "eventSourceARN": self.queue.arn,
            "awsRegion": REGION,
        }

    def backlog(self) -> int:
        from .moto_patches import queue_depth

        return queue_depth(self.queue.arn)
