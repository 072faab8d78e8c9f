"""A Kafka topic as a consumer's channel, or as a producer of the bus: :class:`KafkaTopic`, :class:`KafkaBridge`.

A consumer reads a topic through a Lambda event source mapping (Amazon MSK, or a self-managed
cluster by its bootstrap servers); a bridge moves a topic's CloudEvents onto the bus through an
EventBridge Pipe, so every rule sees them. Guarantees, limits and costs: ``docs/channels.md``.

The article tunes its Kafka consumers with ``max.poll.records = 500`` and
``fetch.max.bytes = 10 MB``. Lambda's poller is the Kafka consumer here, so they map onto the
mapping's settings: ``max.poll.records`` -> :attr:`KafkaTopic.batch_size` (default 500);
``fetch.max.bytes`` has no setting: a batch is also cut at Lambda's 6 MB invocation payload,
whichever comes first, and :attr:`KafkaTopic.max_batching_window_s` is how long the poller waits
to fill it.

Example
-------
>>> topic = KafkaTopic(topic="orders", cluster_arn=
...     "arn:aws:kafka:us-east-1:123456789012:cluster/payments/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0-1")
>>> topic.managed, topic.topic_arn
(True, 'arn:aws:kafka:us-east-1:123456789012:topic/payments/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0-1/orders')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from .declarations import DeclarationError
from .names import MAX_NAME, NAME

__all__ = ["MAX_POLL_RECORDS", "KafkaBridge", "KafkaTopic"]

MAX_POLL_RECORDS = 500  # the article's max.poll.records: the default batch
CLUSTER_ARN = re.compile(r"arn:aws[a-z-]*:kafka:[a-z0-9-]+:\d{12}:cluster/[A-Za-z0-9-]+/[A-Za-z0-9-]+")
SECRET_ARN = re.compile(r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+")
TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")  # Kafka's own rule for topic names
GROUP_ID = re.compile(r"[A-Za-z0-9\-/*:_+=.@]{1,200}")  # Lambda's ConsumerGroupId pattern
SERVER = re.compile(r"[A-Za-z0-9.-]+:\d{1,5}")
STARTING_POSITIONS = ("TRIM_HORIZON", "LATEST")


@dataclass(frozen=True, kw_only=True)
class KafkaTopic:
    """A Kafka topic a consumer reads (``Consumer(channel="kafka", broker=KafkaTopic(...))``).

    Parameters
    ----------
    topic
        The topic's name.
    cluster_arn
        An Amazon MSK cluster (IAM authentication: the function's role is granted the topic and
        its consumer group, nothing more). Exactly one of ``cluster_arn`` and ``bootstrap_servers``.
    bootstrap_servers
        A self-managed cluster's brokers, ``host:port`` each.
    secret_arn
        A Secrets Manager secret with the SASL/SCRAM-512 user (``username``, ``password``); required
        for a self-managed cluster (the kit does not read a topic without authentication).
    consumer_group_id
        The group the mapping commits offsets as. Default: the consumer's name (set by the consumer).
    starting_position
        ``TRIM_HORIZON`` (default: from the oldest record kept) or ``LATEST``.
    batch_size
        Records per invocation, 1-10,000: the article's ``max.poll.records`` (default 500).
    max_batching_window_s
        Seconds the poller waits to fill a batch, 0-300. Default 1.
    """

    topic: str
    cluster_arn: str | None = None
    bootstrap_servers: tuple[str, ...] = ()
    secret_arn: str | None = None
    consumer_group_id: str | None = None
    starting_position: Literal["TRIM_HORIZON", "LATEST"] = "TRIM_HORIZON"
    batch_size: int = MAX_POLL_RECORDS
    max_batching_window_s: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.bootstrap_servers, str):  # one server may be written bare
            object.__setattr__(self, "bootstrap_servers", (self.bootstrap_servers,))
        problem = self._problem()
        if problem:
            raise DeclarationError(f"KafkaTopic({self.topic!r})", problem)

    def _problem(self) -> str | None:  # one early answer per field
        if not (isinstance(self.topic, str) and TOPIC.fullmatch(self.topic)):
            return "topic must be 1-249 letters, digits, '.', '_' or '-'"
        if (self.cluster_arn is None) == (not self.bootstrap_servers):
            return "give exactly one of cluster_arn (Amazon MSK) and bootstrap_servers (self-managed Kafka)"
        if self.cluster_arn is not None and not CLUSTER_ARN.fullmatch(self.cluster_arn):
            return f"cluster_arn must be an MSK cluster ARN (arn:aws:kafka:<region>:<account>:cluster/<name>/<uuid>), got {self.cluster_arn!r}"
        bad = [server for server in self.bootstrap_servers if not (isinstance(server, str) and SERVER.fullmatch(server))]
        if bad:
            return f"bootstrap_servers must be 'host:port' each, got {bad[0]!r}"
        if self.bootstrap_servers and self.secret_arn is None:
            return "a self-managed cluster needs secret_arn (a Secrets Manager secret with its SASL/SCRAM-512 user)"
        if self.secret_arn is not None and not SECRET_ARN.fullmatch(self.secret_arn):
            return f"secret_arn must be a Secrets Manager secret ARN, got {self.secret_arn!r}"
        if self.consumer_group_id is not None and not GROUP_ID.fullmatch(self.consumer_group_id):
            return f"consumer_group_id must be 1-200 of letters, digits and -/*:_+=.@, got {self.consumer_group_id!r}"
        if self.starting_position not in STARTING_POSITIONS:
            return f"starting_position must be one of {', '.join(STARTING_POSITIONS)}, got {self.starting_position!r}"
        if not (isinstance(self.batch_size, int) and 1 <= self.batch_size <= 10_000):
            return f"batch_size must be 1-10,000 (the article's max.poll.records), got {self.batch_size!r}"
        if not (isinstance(self.max_batching_window_s, int) and 0 <= self.max_batching_window_s <= 300):
            return f"max_batching_window_s must be 0-300, got {self.max_batching_window_s!r}"
        return None

    @property
    def managed(self) -> bool:
        """Amazon MSK (else a self-managed cluster)."""
        return self.cluster_arn is not None

    @property
    def topic_arn(self) -> str | None:
        """The topic's ARN in IAM (MSK only)."""
        return None if self.cluster_arn is None else f"{self.cluster_arn.replace(':cluster/', ':topic/', 1)}/{self.topic}"

    def group_arn(self, group_id: str) -> str | None:
        """The consumer group's ARN in IAM (MSK only)."""
        return None if self.cluster_arn is None else f"{self.cluster_arn.replace(':cluster/', ':group/', 1)}/{group_id}"

    def with_group(self, group_id: str) -> KafkaTopic:
        """A copy whose consumer group is ``group_id`` when none was declared."""
        if self.consumer_group_id is not None:
            return self
        return replace(self, consumer_group_id=group_id)


@dataclass(frozen=True, kw_only=True)
class KafkaBridge:
    """A Kafka topic whose CloudEvents go onto the bus, through an EventBridge Pipe, so every rule sees them.

    The topic's records must hold structured CloudEvents (a JSON value with ``specversion``,
    ``type``, ``source``, ``id``, ``data``): the pipe puts each on the bus with the CloudEvent as
    ``detail``, its ``type`` as the detail-type and its ``source`` as the source, as ingest does.

    Parameters
    ----------
    name
        kebab-case; the pipe and its role derive from it.
    broker
        The topic (its ``batch_size`` is capped at the pipe's 10,000; its consumer group defaults to the name).
    """

    name: str
    broker: KafkaTopic

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and NAME.fullmatch(self.name) and len(self.name) <= MAX_NAME):
            raise DeclarationError(f"KafkaBridge({self.name!r})", f"name must be kebab-case, at most {MAX_NAME} characters")
        if not isinstance(self.broker, KafkaTopic):
            raise DeclarationError(f"KafkaBridge({self.name!r})", f"broker must be a KafkaTopic, got {self.broker!r}")
        object.__setattr__(self, "broker", self.broker.with_group(self.name))
