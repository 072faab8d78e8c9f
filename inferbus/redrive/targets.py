"""Where a dead-letter queue's messages go back to, for every channel's failure queue.

- :class:`SqsRedrive`: an SQS consumer's DLQ (and a FIFO one's, in its message group) goes back to the
  queue whose redrive policy names it.
- :class:`RabbitMqRedrive`: a RabbitMQ consumer dead-letters a record itself, into an SQS queue, with the
  record's body (the event, EventBridge-shaped); it goes back to the consumer's RabbitMQ queue, published
  over AMQP to the broker at ``INFERBUS_RABBITMQ_URL`` (or ``--broker-url``): the local broker, or an
  Amazon MQ broker where this machine reaches it.
- :class:`KafkaRedrive`: a Kafka mapping's on-failure destination gets AWS's invocation record, which
  says *where* the records are (topic, partition, first and last offset), not the records. The records
  stay in the topic until its retention ends, so a redrive reads them there again and writes them back
  to the end of the same partition (the consumer reads them again; claims drop the ones already done).
  That needs the cluster reachable from here without authentication (the embedded runtime's cluster,
  or ``--bootstrap-servers`` of a listener this machine reaches); an MSK cluster in its VPC with IAM
  authentication is not: the record stays in the queue, and :func:`kafka_failure` says which offsets
  to read with a client that reaches it.
- :class:`LambdaRedrive`: an asynchronous invocation's on-failure destination (an Express workflow's
  failure net, fed by a log subscription) gets AWS's invocation record, which holds the request; it
  goes back by invoking the function the record names again, asynchronously, with that request.

Each target's :meth:`send` returns whether the message went back (then it leaves the DLQ); one that
did not stays, with the reason in :attr:`problems`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["INVOKED_AGAIN", "AsyncInvocationFailure", "KafkaFailure", "KafkaRedrive", "KafkaUnreachable", "LambdaRedrive",
           "RabbitMqRedrive", "RedriveTarget", "SqsRedrive", "async_invocation_failure", "kafka_failure"]

KAFKA_TIMEOUT_S = 10.0  # how long to look for a cluster (and its records) before saying it is not reachable
REDRIVE_GROUP = "inferbus-redrive"  # the group the re-read runs as; it commits nothing


class RedriveTarget(Protocol):
    """Where a DLQ's messages go back to."""

    problems: list[str]

    def describe(self) -> str:
        """One line for the user: where the messages go."""
        ...

    def send(self, sqs: Any, message: Mapping[str, Any]) -> bool:
        """Send ``message`` (as SQS received it from the DLQ) back; whether it went."""
        ...


@dataclass
class SqsRedrive:
    """The SQS queue a DLQ takes failures from."""

    url: str
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return self.url

    def send(self, sqs: Any, message: Mapping[str, Any]) -> bool:
        sqs.send_message(QueueUrl=self.url, MessageBody=message["Body"], **_ordering(message))
        return True


def _ordering(message: Mapping[str, Any]) -> dict[str, str]:
    """A FIFO DLQ's message goes back in its own message group, under a deduplication id of its own
    (its first one may still be in the source queue's 5-minute window); a standard one needs neither."""
    group = message.get("Attributes", {}).get("MessageGroupId")
    return {} if group is None else {"MessageGroupId": group, "MessageDeduplicationId": f"redrive-{message['MessageId']}"}


@dataclass
class RabbitMqRedrive:
    """A RabbitMQ consumer's queue, on the broker at ``url`` (default: ``INFERBUS_RABBITMQ_URL``, else localhost)."""

    queue: str
    virtual_host: str = "/"
    url: str | None = None
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"RabbitMQ queue {self.queue} (virtual host {self.virtual_host})"

    def send(self, sqs: Any, message: Mapping[str, Any]) -> bool:
        from inferbus.runtime.rabbitmq import BrokerUnavailable, publish_cloudevents

        try:  # an EventBridge-shaped event, which the consumer reads as it reads a rule's
            publish_cloudevents(self.queue, [message["Body"]], self.virtual_host, self.url, content_type="application/json")
        except BrokerUnavailable as error:
            self.problems.append(str(error))
            return False
        return True


@dataclass(frozen=True)
class KafkaFailure:
    """What a Kafka mapping's on-failure record says: where the given-up records are, and why."""

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    bootstrap_servers: str
    condition: str

    def describe(self) -> str:
        return f"{self.topic} partition {self.partition} offsets {self.first_offset}-{self.last_offset}"


def kafka_failure(body: str) -> KafkaFailure | None:
    """The Kafka on-failure record in ``body`` (AWS's invocation record with ``KafkaBatchInfo``), or None."""
    try:
        record = json.loads(body)
        info = record["KafkaBatchInfo"]
        return KafkaFailure(topic=str(info["topic"]), partition=int(info["partition"]),
                            first_offset=int(info["firstOffset"]), last_offset=int(info["lastOffset"]),
                            bootstrap_servers=str(info.get("bootstrapServers") or ""),
                            condition=str(record.get("requestContext", {}).get("condition", "?")))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


@dataclass
class KafkaRedrive:
    """The topics Kafka on-failure records point into; ``bootstrap_servers`` overrides the records' own."""

    bootstrap_servers: str | None = None
    problems: list[str] = field(default_factory=list)
    unreachable: dict[str, str] = field(default_factory=dict)  # servers -> why: asked once per redrive, not per record

    def describe(self) -> str:
        return "the records' own Kafka partitions (read again there, written back to the end of the partition)"

    def send(self, sqs: Any, message: Mapping[str, Any]) -> bool:
        failure = kafka_failure(message["Body"])
        if failure is None:
            self.problems.append(f"{message['MessageId']}: not a Kafka on-failure record: nothing to read again")
            return False
        servers = self.bootstrap_servers or failure.bootstrap_servers
        try:
            if servers in self.unreachable:
                raise KafkaUnreachable(self.unreachable[servers])
            _write_back(servers, failure, _read_again(servers, failure))
        except KafkaUnreachable as error:
            if str(error).startswith("no Kafka cluster answers"):
                self.unreachable[servers] = str(error)
            self.problems.append(f"{failure.describe()}: {error}: read them with a client that reaches the cluster, "
                                 f"or pass --bootstrap-servers")
            return False
        return True


class KafkaUnreachable(RuntimeError):
    """The cluster, or the records, cannot be read from here."""


def _read_again(servers: str, failure: KafkaFailure) -> list[Any]:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    if not servers:
        raise KafkaUnreachable("the record names no bootstrap servers")
    consumer = Consumer({"bootstrap.servers": servers, "group.id": REDRIVE_GROUP, "enable.auto.commit": False,
                         "log_level": 0})
    try:
        try:
            consumer.list_topics(failure.topic, timeout=KAFKA_TIMEOUT_S)
        except KafkaException as error:
            raise KafkaUnreachable(f"no Kafka cluster answers at {servers} ({error.args[0].name()})") from None
        consumer.assign([TopicPartition(failure.topic, failure.partition, failure.first_offset)])
        wanted = failure.last_offset - failure.first_offset + 1
        records: list[Any] = []
        deadline = time.monotonic() + KAFKA_TIMEOUT_S
        while len(records) < wanted and time.monotonic() < deadline:
            record = consumer.poll(0.2)
            if record is None or record.error() is not None:
                continue
            if record.offset() > failure.last_offset:
                break
            records.append(record)
    finally:
        consumer.close()
    if len(records) < wanted:
        raise KafkaUnreachable(f"only {len(records)} of its {wanted} records are still in the topic (its retention "
                               f"may have removed them)")
    return records


def _write_back(servers: str, failure: KafkaFailure, records: list[Any]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": servers, "log_level": 0, "enable.idempotence": True})
    for record in records:  # the same partition, so they keep their order among themselves
        producer.produce(failure.topic, value=record.value(), key=record.key(), headers=record.headers(),
                         partition=failure.partition)
    if producer.flush(KAFKA_TIMEOUT_S):
        raise KafkaUnreachable(f"the cluster at {servers} did not take the records back")


@dataclass(frozen=True)
class AsyncInvocationFailure:
    """What an asynchronous invocation's on-failure record says: the function, the request it gave up on, why."""

    function_arn: str
    request: Any
    condition: str

    def describe(self) -> str:
        return f"a request to {self.function_arn.split(':function:')[-1].split(':')[0]}"


def async_invocation_failure(body: str) -> AsyncInvocationFailure | None:
    """The asynchronous invocation's on-failure record in ``body`` (AWS's invocation record, with the request
    in ``requestPayload``), or None (a Kafka mapping's record names its records, not a request)."""
    try:
        record = json.loads(body)
        if "KafkaBatchInfo" in record or "requestPayload" not in record:
            return None
        context = record["requestContext"]
        return AsyncInvocationFailure(function_arn=str(context["functionArn"]), request=record["requestPayload"],
                                      condition=str(context.get("condition", "?")))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


INVOKED_AGAIN = "the function each record names, invoked again asynchronously with its request"


@dataclass
class LambdaRedrive:
    """The functions asynchronous on-failure records name, invoked again (``InvocationType=Event``) with each
    record's request; ``client`` makes the Lambda client (as the command's other clients are made)."""

    client: Callable[[], Any]
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return INVOKED_AGAIN

    def send(self, sqs: Any, message: Mapping[str, Any]) -> bool:
        failure = async_invocation_failure(message["Body"])
        if failure is None:
            self.problems.append(f"{message['MessageId']}: not an asynchronous invocation's on-failure record")
            return False
        self.client().invoke(FunctionName=failure.function_arn, InvocationType="Event",
                             Payload=json.dumps(failure.request).encode())
        return True
