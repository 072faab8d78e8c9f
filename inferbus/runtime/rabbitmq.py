"""A RabbitMQ queue on a real broker as a local channel: what Lambda's Amazon MQ mapping does, on localhost.

The embedded runtime (and ``inferbus serve``) reads a template's Amazon MQ event source mapping
(``EventSourceArn`` a broker, ``Queues`` one queue) from a RabbitMQ broker of your own,
``INFERBUS_RABBITMQ_URL`` (default ``amqp://guest:guest@localhost:5672/``; the virtual host is
the one the mapping's queue names). It hands the function AWS's documented event shape
(``eventSource`` ``aws:rmq``, ``rmqMessagesByQueue`` keyed ``"queue::vhost"``, each message's
``basicProperties``, ``redelivered`` and base64 ``data``), as the mapping does:

- a received message is unacknowledged (held) until its batch ends: acked when the invocation
  succeeds, returned to the queue (``basic.nack`` with requeue) when it fails: an MQ mapping
  takes no partial answer, so the whole batch comes back;
- the queue is declared a *quorum* queue if it does not exist, so a redelivery carries
  ``x-delivery-count`` (the consumer's attempt, for dead-lettering on the last one).

One connection per channel, used under a lock: pika's blocking connection is not thread-safe and
the poller's workers ack from their own threads.
"""

from __future__ import annotations

import base64
import datetime
import os
import threading
import time
from typing import Any

from inferbus_lambda.sources.amazon_mq import envelope

from .channels import DUPLICATE_MARK, LocalChannel

__all__ = ["BROKER_URL_VARIABLE", "DEFAULT_BROKER_URL", "START_COMMAND", "BrokerUnavailable", "RabbitMqChannel",
           "broker_url", "publish_cloudevents", "queue_key"]

BROKER_URL_VARIABLE = "INFERBUS_RABBITMQ_URL"
DEFAULT_BROKER_URL = "amqp://guest:guest@localhost:5672/"
START_COMMAND = "rabbitmq-server -detached"  # Debian's rabbitmq-server package
RECEIVE_LIMIT = 10_000  # an MQ mapping's largest batch
# A quorum queue applies returned (nacked) messages asynchronously: its count shows them a moment later.
# Until then the channel counts them as still to deliver, so a drain does not end while they are on their way.
RETURN_SETTLE_S = 1.0
Message = dict[str, Any]


class BrokerUnavailable(RuntimeError):
    """No RabbitMQ broker answers where the runtime looks for one; the message says how to start one."""


def broker_url() -> str:
    """The local broker's URL: ``INFERBUS_RABBITMQ_URL``, or the default guest account on localhost."""
    return os.environ.get(BROKER_URL_VARIABLE) or DEFAULT_BROKER_URL


def queue_key(queue: str, virtual_host: str) -> str:
    """How the Lambda event names a queue: ``"<queue>::<virtual host>"``."""
    return f"{queue}::{virtual_host}"


def _header(value: Any) -> Any:
    """A header as Lambda writes it: a string (AMQP long string) as ``{"bytes": [...]}``, numbers as they are."""
    if isinstance(value, str):
        return {"bytes": list(value.encode())}
    if isinstance(value, bytes):
        return {"bytes": list(value)}
    return value


def _timestamp(seconds: int | None) -> str | None:
    """The message's timestamp as the Lambda event writes it: ``"Jan 1, 1970, 12:33:41 AM"``."""
    if seconds is None:
        return None
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return f"{moment:%b} {moment.day}, {moment.year}, {moment:%I:%M:%S %p}".replace(", 0", ", ", 1)


class RabbitMqChannel(LocalChannel):
    """One queue on a RabbitMQ broker, read as Lambda's Amazon MQ mapping reads it.

    Parameters
    ----------
    queue, virtual_host
        The mapping's queue and its virtual host.
    broker_arn
        The mapping's ``EventSourceArn``, written in each event as ``eventSourceArn``.
    url
        The broker (default :func:`broker_url`); its own virtual host is replaced by ``virtual_host``.

    Raises
    ------
    BrokerUnavailable
        When nothing answers at ``url``: the message names the command that starts one.
    """

    max_per_receive = RECEIVE_LIMIT

    def __init__(self, queue: str, virtual_host: str, broker_arn: str, url: str | None = None) -> None:
        import pika

        self.queue = queue
        self.virtual_host = virtual_host
        self.broker_arn = broker_arn
        self.key = queue_key(queue, virtual_host)
        self.name = queue
        parameters = pika.URLParameters(url or broker_url())
        parameters.virtual_host = virtual_host
        parameters.heartbeat = 0  # used in bursts from several threads: no heartbeat to keep
        try:
            self._connection = pika.BlockingConnection(parameters)
        except pika.exceptions.AMQPError as error:
            raise BrokerUnavailable(f"no RabbitMQ broker at {parameters.host}:{parameters.port} (vhost "
                                    f"{virtual_host!r}): start one with `{START_COMMAND}` or set {BROKER_URL_VARIABLE} "
                                    f"({type(error).__name__})") from None
        self._lock = threading.Lock()
        self._channel = self._connection.channel()
        self._channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
        self._channel.confirm_delivery()  # a copy put back (deliver_again) is on the queue before its original is acked
        self._held = 0
        self._returning_until = 0.0

    def ready(self) -> bool:
        with self._lock:
            return self._channel.queue_declare(self.queue, passive=True).method.message_count > 0

    def receive(self, count: int) -> list[Message]:
        messages = []
        with self._lock:
            for _ in range(min(count, RECEIVE_LIMIT)):
                method, properties, body = self._channel.basic_get(self.queue, auto_ack=False)
                if method is None:
                    break
                message = {"tag": method.delivery_tag, "redelivered": bool(method.redelivered),
                           "properties": properties, "body": body}
                # What the consumer reads of it (an EventBridge-shaped event): how the runtime's
                # after-failure hook finds the claim on its CloudEvent, as it reads an SQS message's Body.
                message["Body"] = envelope(self._record(message))
                messages.append(message)
            self._held += len(messages)
        return messages

    def ack(self, messages: list[Message]) -> None:
        with self._lock:
            for message in messages:
                self._channel.basic_ack(message["tag"])
            self._held -= len(messages)

    def release(self, messages: list[Message]) -> None:
        with self._lock:
            for message in messages:
                self._channel.basic_nack(message["tag"], requeue=True)
            self._held -= len(messages)
            self._returning_until = time.monotonic() + RETURN_SETTLE_S

    def deliver_again(self, message: Message) -> None:
        import pika

        properties = message["properties"]
        headers = dict(properties.headers or {}) | {DUPLICATE_MARK: "true"}
        headers.pop("x-delivery-count", None)  # a copy is a new message to the broker
        copy = pika.BasicProperties(**{**vars(properties), "headers": headers})
        with self._lock:
            self._channel.basic_publish("", self.queue, message["body"], copy)

    def is_copy(self, message: Message) -> bool:
        return DUPLICATE_MARK in (message["properties"].headers or {})

    def message_id(self, message: Message) -> str:
        return f"{self.key}#{message['tag']}"

    def lambda_event(self, messages: list[Message]) -> dict[str, Any]:
        return {"eventSource": "aws:rmq", "eventSourceArn": self.broker_arn,
                "rmqMessagesByQueue": {self.key: [self._record(message) for message in messages]}}

    def _record(self, message: Message) -> dict[str, Any]:
        properties = message["properties"]
        return {
            "basicProperties": {
                "contentType": properties.content_type,
                "contentEncoding": properties.content_encoding,
                "headers": {name: _header(value) for name, value in (properties.headers or {}).items()},
                "deliveryMode": properties.delivery_mode,
                "priority": properties.priority,
                "correlationId": properties.correlation_id,
                "replyTo": properties.reply_to,
                "expiration": properties.expiration,
                "messageId": properties.message_id,
                "timestamp": _timestamp(properties.timestamp),
                "type": properties.type,
                "userId": properties.user_id,
                "appId": properties.app_id,
                "clusterId": properties.cluster_id,
                "bodySize": len(message["body"]),
            },
            "redelivered": message["redelivered"],
            "data": base64.b64encode(message["body"]).decode(),
        }

    def backlog(self) -> int:
        with self._lock:
            ready = self._channel.queue_declare(self.queue, passive=True).method.message_count
            returning = ready == 0 and time.monotonic() < self._returning_until
            return ready + self._held + returning

    def close(self) -> None:
        """Close the connection; messages still held go back to the queue (the broker requeues them)."""
        with self._lock:
            if self._connection.is_open:
                self._connection.close()




def publish_cloudevents(queue: str, cloudevents: list[str], virtual_host: str = "/", url: str | None = None) -> None:
    """Publish CloudEvents (JSON, structured mode) to ``queue`` on the local broker, as a producer would.

    The queue is declared a quorum queue first if it does not exist (as :class:`RabbitMqChannel` does).

    Raises
    ------
    BrokerUnavailable
        When nothing answers: the message names the command that starts a broker.
    """
    import pika

    parameters = pika.URLParameters(url or broker_url())
    parameters.virtual_host = virtual_host
    try:
        connection = pika.BlockingConnection(parameters)
    except pika.exceptions.AMQPError as error:
        raise BrokerUnavailable(f"no RabbitMQ broker at {parameters.host}:{parameters.port}: start one with "
                                f"`{START_COMMAND}` or set {BROKER_URL_VARIABLE} ({type(error).__name__})") from None
    try:
        channel = connection.channel()
        channel.confirm_delivery()  # each publish returns once the broker has the message: then a reader sees it
        channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
        properties = pika.BasicProperties(content_type="application/cloudevents+json", delivery_mode=2)
        for cloudevent in cloudevents:
            channel.basic_publish("", queue, cloudevent.encode(), properties)
    finally:
        connection.close()
