"""A Kafka topic as a local channel: the poller reads it as Lambda's Kafka event source mapping does.

No Kafka broker installs from the package registries here, so by default the channel starts
librdkafka's built-in mock cluster (``test.mock.num.brokers``), which speaks the Kafka protocol on
loopback with partitions, offsets and committed consumer-group offsets; give ``bootstrap_servers``
to read a real broker instead. Either way the function gets AWS's documented event
(``records`` by ``"<topic>-<partition>"``, base64 ``key`` and ``value``, headers as byte lists).

What it does as the mapping does:

- partitions are processed in offset order, one batch per partition at a time (a batch may hold
  several partitions); a batch never holds records of a partition that has one in flight;
- a failed record and its partition's later records come back (the earliest failed offset is
  where the partition resumes); the offsets before it are committed as the consumer group's;
- a record delivered ``1 + max_retry_attempts`` times without success is given up: an
  invocation record (AWS's on-failure shape: the condition, the partition and offset) goes to
  ``on_failure`` and the partition moves on past it. The records that only waited behind it
  are not counted (AWS may give up the rest of that retried batch with it: see the docs);
- reading starts at the group's committed offsets, else at ``starting_position``.

What only Amazon MSK proves is listed in ``docs/channels.md``.
"""

from __future__ import annotations

import base64
import threading
import uuid
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .channels import LocalChannel

__all__ = ["MOCK_PARTITIONS", "KafkaChannel", "mock_cluster"]

Message = dict[str, Any]
MOCK_PARTITIONS = 4  # librdkafka's mock cluster creates a topic with 4 partitions on first use
FETCH_TIMEOUT_S = 0.05  # one look at what the brokers have: receive must not block the poller
COPY = "_copy"  # internal marks on a message: never in the Lambda event
ATTEMPTS = "_attempts"


def mock_cluster(brokers: int = 1) -> tuple[str, Any]:
    """Start librdkafka's mock cluster; return its bootstrap servers and the client that keeps it alive."""
    from confluent_kafka import Producer

    owner = Producer({"test.mock.num.brokers": brokers, "log_level": 3})
    metadata = owner.list_topics(timeout=10)
    return ",".join(f"{broker.host}:{broker.port}" for broker in metadata.brokers.values()), owner


class KafkaChannel(LocalChannel):
    """A topic read by a consumer group, as Lambda's Kafka poller reads it.

    Parameters
    ----------
    topic
        The topic (created with the broker's default partitions on first use if missing).
    group_id
        The consumer group whose committed offsets say where reading starts.
    bootstrap_servers
        A real broker's ``host:port`` list; default a mock cluster started here.
    starting_position
        ``TRIM_HORIZON`` (from the oldest record) or ``LATEST``, for a group with no committed offset.
    max_retry_attempts
        The mapping's ``MaximumRetryAttempts``: deliveries after the first before a record is given up.
    on_failure
        Where a given-up record's invocation record goes (the mapping's on-failure destination).
    event_source_arn
        An MSK cluster ARN: the event says ``aws:kafka`` and carries it; default ``SelfManagedKafka``.
    """

    max_per_receive = 10_000

    def __init__(self, topic: str, group_id: str, *, bootstrap_servers: str | None = None,
                 starting_position: str = "TRIM_HORIZON", max_retry_attempts: int = 2,
                 on_failure: Callable[[dict[str, Any]], None] | None = None, event_source_arn: str | None = None) -> None:
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, TopicPartition

        self.name = f"kafka-{topic}"
        self.topic = topic
        self.group_id = group_id
        self.max_retry_attempts = max_retry_attempts
        self.on_failure = on_failure
        self.event_source_arn = event_source_arn
        self._mock = None
        if bootstrap_servers is None:
            bootstrap_servers, self._mock = mock_cluster()
        self.bootstrap_servers = bootstrap_servers
        self._lock = threading.RLock()
        self._pending: dict[int, deque[Message]] = {}  # fetched, not yet delivered, in offset order
        self._in_flight: dict[int, int] = {}  # partition -> messages delivered and not yet acked or released
        self._committed: dict[int, int] = {}
        self._attempts: dict[tuple[int, int], int] = {}
        self.given_up = 0
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap_servers, "group.id": group_id, "enable.auto.commit": False,
            "auto.offset.reset": "earliest" if starting_position == "TRIM_HORIZON" else "latest", "log_level": 3,
            "fetch.wait.max.ms": 10})  # short fetches: a broker query (backlog) does not queue behind a long poll
        count = self._partition_count()
        start = OFFSET_BEGINNING if starting_position == "TRIM_HORIZON" else OFFSET_END
        committed = self._consumer.committed([TopicPartition(topic, p) for p in range(count)], timeout=10)
        self._committed = {tp.partition: tp.offset for tp in committed if tp.offset >= 0}
        # Lambda's poller owns the assignment (no group rebalance to wait for); the group keeps the offsets.
        self._consumer.assign([TopicPartition(topic, tp.partition, tp.offset if tp.offset >= 0 else start)
                               for tp in committed])
        self.partitions = list(range(count))

    def _partition_count(self) -> int:
        metadata = self._consumer.list_topics(self.topic, timeout=10)
        return len(metadata.topics[self.topic].partitions) or MOCK_PARTITIONS

    def close(self) -> None:
        with self._lock:
            self._consumer.close()
        self._mock = None

    # -- reading ---------------------------------------------------------------------------------

    def _fetch(self) -> None:
        """Move what the brokers have into the per-partition buffers."""
        while True:
            fetched = self._consumer.consume(1000, timeout=FETCH_TIMEOUT_S)
            for record in fetched:
                if record.error() is None:
                    self._pending.setdefault(record.partition(), deque()).append(self._message(record))
            if len(fetched) < 1000:
                return

    def _message(self, record: Any) -> Message:
        kind, timestamp = record.timestamp()
        key, value = record.key(), record.value()
        return {
            "topic": record.topic(), "partition": record.partition(), "offset": record.offset(),
            "timestamp": timestamp, "timestampType": "LOG_APPEND_TIME" if kind == 2 else "CREATE_TIME",
            "key": None if key is None else base64.b64encode(key).decode(),
            "value": None if value is None else base64.b64encode(value).decode(),
            "headers": [{name: list(data or b"")} for name, data in record.headers() or ()],
        }

    def _free(self) -> list[int]:
        return [p for p, messages in self._pending.items() if messages and not self._in_flight.get(p)]

    def ready(self) -> bool:
        with self._lock:
            self._fetch()
            return bool(self._free())

    def receive(self, count: int) -> list[Message]:
        """Up to ``count`` messages from the partitions with nothing in flight, each partition's in offset order."""
        with self._lock:
            self._fetch()
            batch: list[Message] = []
            for partition in sorted(self._free()):
                taken = 0
                while self._pending[partition] and len(batch) < count:
                    message = self._pending[partition].popleft()
                    key = (partition, message["offset"])
                    tries = self._attempts.get(key, 0) if not message.get(COPY) else 0
                    if tries > self.max_retry_attempts:
                        self._give_up(message, tries)
                        continue
                    self._attempts[key] = tries + 1
                    batch.append(message)
                    taken += 1
                if taken:
                    self._in_flight[partition] = taken
            return batch

    def _give_up(self, message: Message, tries: int) -> None:
        """The mapping's retries are spent: the invocation record to the on-failure destination, the offset past it."""
        self.given_up += 1
        if self.on_failure is not None:
            self.on_failure(self.failure_record(message, tries))
        self._commit(message["partition"], message["offset"] + 1)

    def failure_record(self, message: Message, tries: int) -> dict[str, Any]:
        """What the mapping sends its on-failure destination: the condition and where the record is, not the record."""
        return {
            "requestContext": {"requestId": str(uuid.uuid4()), "condition": "RetryAttemptsExhausted",
                               "approximateInvokeCount": tries},
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "version": "1.0", "timestamp": datetime.now(UTC).isoformat(),
            "KafkaBatchInfo": {"batchSize": 1, "topic": message["topic"], "partition": message["partition"],
                               "firstOffset": message["offset"], "lastOffset": message["offset"],
                               "bootstrapServers": self.bootstrap_servers, "eventSourceArn": self.event_source_arn},
        }

    # -- answering -------------------------------------------------------------------------------

    def _commit(self, partition: int, offset: int) -> None:
        from confluent_kafka import TopicPartition

        if offset > self._committed.get(partition, -1):
            self._consumer.commit(offsets=[TopicPartition(self.topic, partition, offset)], asynchronous=False)
            self._committed[partition] = offset

    def _done(self, messages: list[Message]) -> None:
        for message in messages:
            partition = message["partition"]
            self._in_flight[partition] = max(0, self._in_flight.get(partition, 0) - 1)

    def ack(self, messages: list[Message]) -> None:
        """Commit each partition past its acked messages (they are its oldest in flight: order holds)."""
        with self._lock:
            for message in messages:
                if not message.get(COPY):
                    self._attempts.pop((message["partition"], message["offset"]), None)
                    self._commit(message["partition"], message["offset"] + 1)
            self._done(messages)

    def release(self, messages: list[Message]) -> None:
        """Failed (or held): back at the head of their partitions, in offset order, deliverable at once."""
        with self._lock:
            for partition in {message["partition"] for message in messages}:
                back = [message for message in messages if message["partition"] == partition]
                # merged by offset: a duplicate released now and failed records released later land in order
                for message in sorted(back, key=lambda m: m["offset"])[1:]:  # they waited behind the one that failed
                    self._attempts.pop((partition, message["offset"]), None)
                waiting = self._pending.get(partition, deque())
                self._pending[partition] = deque(sorted([*back, *waiting], key=lambda m: (m["offset"], bool(m.get(COPY)))))
            self._done(messages)

    @property
    def duplicates_in_place(self) -> bool:
        return True  # an ordered channel: a duplicate is the record read again, never a copy behind later ones

    def deliver_again(self, message: Message) -> None:
        with self._lock:
            self._pending.setdefault(message["partition"], deque()).append({**message, COPY: True})

    def is_copy(self, message: Message) -> bool:
        return bool(message.get(COPY))

    def message_id(self, message: Message) -> str:
        return f"{message['topic']}-{message['partition']}-{message['offset']}"

    def lambda_event(self, messages: list[Message]) -> dict[str, Any]:
        """AWS's documented Kafka event: records grouped by ``"<topic>-<partition>"``, each in offset order."""
        records: dict[str, list[dict[str, Any]]] = {}
        for message in messages:
            records.setdefault(f"{message['topic']}-{message['partition']}", []).append(
                {key: value for key, value in message.items() if not key.startswith("_")})
        event: dict[str, Any] = {"eventSource": "aws:kafka" if self.event_source_arn else "SelfManagedKafka",
                                 "bootstrapServers": self.bootstrap_servers, "records": records}
        if self.event_source_arn:
            event["eventSourceArn"] = self.event_source_arn
        return event

    def backlog(self) -> int:
        """Records not yet done: the topic's end offsets past the group's committed ones, and copies waiting."""
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        with self._lock:
            self._fetch()
            behind = 0
            for partition in self.partitions:
                # asked of the broker: the offsets cached from the last fetch miss what was produced since
                try:
                    low, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, partition), timeout=5)
                except KafkaException as error:
                    if error.args[0].code() == KafkaError._UNKNOWN_PARTITION:  # the topic does not have it: empty
                        continue
                    behind += 1  # the broker did not answer (a busy machine): not known to be drained
                    continue
                behind += max(0, high - max(self._committed.get(partition, low), low))
            copies = sum(1 for messages in self._pending.values() for message in messages if message.get(COPY))
            return behind + copies

