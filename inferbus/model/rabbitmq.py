"""A RabbitMQ queue as a consumer's channel: where a ``channel="rabbitmq"`` consumer reads its events.

The queue lives on an Amazon MQ for RabbitMQ broker, made by the stack (private, encrypted,
logging) or an existing one named by its ARN. Lambda's event source mapping reads it with a
username and password kept in Secrets Manager (``BASIC_AUTH``): a secret the stack makes for
its own broker, or an existing one. The batch size and window are the consumer's own
(:class:`~inferbus.model.settings.ConsumerSettings`), one source of truth for every channel.
Guarantees, limits and cost: ``docs/channels.md``.

Example
-------
>>> queue = RabbitMqQueue(queue="orders", virtual_host="/shop")
>>> queue.stack_broker, queue.queue_key
(True, 'orders::/shop')
>>> RabbitMqQueue(queue="amq.orders")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
inferbus.model.declarations.DeclarationError: RabbitMqQueue: queue 'amq.orders' ... 'amq.' is reserved ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .declarations import DeclarationError

__all__ = ["PLACEHOLDER_BROKER_ARN", "PLACEHOLDER_SECRET_ARN", "RabbitMqQueue"]

BROKER_ARN = re.compile(r"arn:aws[a-z-]*:mq:[a-z0-9-]+:\d{12}:broker:[A-Za-z0-9_-]{1,50}:b-[0-9a-f-]{36}")
SECRET_ARN = re.compile(r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+")
# RabbitMQ's limits: a queue name is at most 255 bytes, 'amq.' names are the broker's own.
MAX_QUEUE_BYTES = 255
VIRTUAL_HOST = re.compile(r"/?[A-Za-z0-9_.-]*")
# For declarations that are synthesized, never deployed (the channels stage, tests).
PLACEHOLDER_BROKER_ARN = "arn:aws:mq:us-east-1:111122223333:broker:inferbus-rabbit:b-00000000-0000-0000-0000-000000000000"
PLACEHOLDER_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:111122223333:secret:inferbus/rabbitmq-AbCdEf"


@dataclass(frozen=True, kw_only=True)
class RabbitMqQueue:
    """The RabbitMQ queue a consumer reads, and how Lambda reaches it.

    Parameters
    ----------
    queue
        The queue's name (1-255 bytes, not ``amq.``...). Declare it as a *quorum* queue on the
        broker: its ``x-delivery-count`` is how the consumer knows a record's last attempt.
    virtual_host
        The virtual host it is in. Default ``/``.
    broker_arn
        An existing Amazon MQ for RabbitMQ broker. Default ``None``: the stack makes one
        (single-instance, private, no public access, general logs on).
    credentials_secret_arn
        A Secrets Manager secret holding ``{"username": ..., "password": ...}`` for the broker.
        Required with ``broker_arn``; with the stack's broker, ``None`` makes one (a generated
        password).

    Raises
    ------
    DeclarationError
        On a malformed name or ARN, or an existing broker without a credential.
    """

    queue: str
    virtual_host: str = "/"
    broker_arn: str | None = None
    credentials_secret_arn: str | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if not isinstance(self.queue, str) or not 0 < len(self.queue.encode()) <= MAX_QUEUE_BYTES:
            raise DeclarationError(owner, f"queue must be a name of 1-{MAX_QUEUE_BYTES} bytes, got {self.queue!r}")
        if self.queue.startswith("amq."):
            raise DeclarationError(owner, f"queue {self.queue!r}: a name starting 'amq.' is reserved to the broker; "
                                   f"choose another name")
        if "::" in self.queue:
            raise DeclarationError(owner, f"queue {self.queue!r} may not hold '::' (Lambda writes 'queue::vhost')")
        if not (isinstance(self.virtual_host, str) and self.virtual_host and VIRTUAL_HOST.fullmatch(self.virtual_host)):
            raise DeclarationError(owner, f"virtual_host must be a virtual host's name ('/' or e.g. '/shop'), "
                                   f"got {self.virtual_host!r}")
        if self.broker_arn is not None and not (isinstance(self.broker_arn, str) and BROKER_ARN.fullmatch(self.broker_arn)):
            raise DeclarationError(owner, f"broker_arn must be an Amazon MQ broker ARN (arn:aws:mq:<region>:"
                                   f"<account>:broker:<name>:b-<uuid>), got {self.broker_arn!r}")
        if self.credentials_secret_arn is not None and not (isinstance(self.credentials_secret_arn, str)
                                                            and SECRET_ARN.fullmatch(self.credentials_secret_arn)):
            raise DeclarationError(owner, f"credentials_secret_arn must be a Secrets Manager secret ARN "
                                   f"(arn:aws:secretsmanager:<region>:<account>:secret:<name>), "
                                   f"got {self.credentials_secret_arn!r}")
        if self.broker_arn is not None and self.credentials_secret_arn is None:
            raise DeclarationError(owner, "an existing broker (broker_arn) needs credentials_secret_arn: the secret "
                                   "with the username and password Lambda reads it with")

    @property
    def stack_broker(self) -> bool:
        """Whether the stack makes the broker (no ``broker_arn``)."""
        return self.broker_arn is None

    @property
    def queue_key(self) -> str:
        """How Lambda's event names the queue: ``rmqMessagesByQueue`` is keyed ``"<queue>::<virtual host>"``."""
        return f"{self.queue}::{self.virtual_host}"
