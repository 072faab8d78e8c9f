"""The local RabbitMQ broker, for the tests that need a real one.

Without a broker such a test skips, naming the one command that starts it; with
``INFERBUS_REQUIRE_BROKERS=1`` (CI sets it: ``.ci/run`` installs and starts the broker) it fails
instead, so CI never skips it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from inferbus.runtime.rabbitmq import START_COMMAND, broker_url

REQUIRE_BROKERS = "INFERBUS_REQUIRE_BROKERS"


def rabbitmq_or_skip() -> None:
    """Skip (or, in CI, fail) unless a RabbitMQ broker answers at :func:`broker_url`."""
    import pika

    try:
        pika.BlockingConnection(pika.URLParameters(broker_url())).close()
    except pika.exceptions.AMQPError:
        message = f"RabbitMQ is not running at {broker_url()}: start it with `{START_COMMAND}`"
        if os.environ.get(REQUIRE_BROKERS) == "1":
            pytest.fail(f"{message} ({REQUIRE_BROKERS}=1: a broker test may not skip)")
        pytest.skip(message)


@pytest.fixture
def rabbitmq_queue() -> Iterator[str]:
    """A fresh queue name on the running broker (skips without one); the queue is deleted afterwards."""
    import pika

    rabbitmq_or_skip()
    name = f"inferbus-test-{uuid.uuid4().hex[:12]}"
    yield name
    connection = pika.BlockingConnection(pika.URLParameters(broker_url()))
    connection.channel().queue_delete(name)
    connection.close()


def publish(queue: str, bodies: list[tuple[bytes, dict]]) -> None:
    """Publish each ``(body, properties)`` to ``queue`` (the default exchange routes by queue name)."""
    import pika

    connection = pika.BlockingConnection(pika.URLParameters(broker_url()))
    channel = connection.channel()
    channel.confirm_delivery()  # each publish returns once the broker has it: the runtime then sees it
    channel.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum"})
    for body, properties in bodies:
        channel.basic_publish("", queue, body, pika.BasicProperties(**properties))
    connection.close()
