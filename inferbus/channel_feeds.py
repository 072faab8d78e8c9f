"""How the demo and chaos reach each declared consumer locally, through the channel it is declared on.

A ``sqs`` or ``fifo`` consumer is behind a rule: its inputs go on the bus. A ``kafka`` or ``rabbitmq``
consumer reads a broker, not the bus: a producer writes to its topic or queue, so its inputs are written
there, as a producer would (each a structured CloudEvent, the entry's ``Detail``):

- ``kafka``: to the consumer's topic on the embedded runtime's Kafka cluster (librdkafka's mock, or the
  broker ``INFERBUS_KAFKA_BOOTSTRAP_SERVERS`` names), keyed by the event's id; where each record landed
  (partition, offset) is kept, to read the on-failure destination back and to check each partition's
  order;
- ``rabbitmq``: to the consumer's queue on the local broker (``INFERBUS_RABBITMQ_URL``).

What such a consumer gives up is kept where its channel keeps it, with the reason: a Kafka mapping's
on-failure queue holds where the record was (topic, partition, offset), the reason is the consumer's log
line for it; a RabbitMQ consumer's DLQ holds the record with its reason as attributes. Moving them back
(:meth:`ChannelFeeds.redrive`) writes each record to its topic or queue again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inferbus.model.declarations import Channel, Consumer, Pipeline

if TYPE_CHECKING:
    from .local import LocalPipeline

__all__ = ["BROKER_CHANNELS", "ChannelFeeds", "Kept", "fed_by_broker"]

BROKER_CHANNELS = (Channel.KAFKA, Channel.RABBITMQ)  # the channels a consumer reads without a rule of the bus
NO_REASON = "none recorded"


def fed_by_broker(component: Any) -> bool:
    """Whether ``component`` reads a broker (its topic or queue), not the bus's rules."""
    return isinstance(component, Consumer) and component.channel in BROKER_CHANNELS


@dataclass(frozen=True)
class Kept:
    """An input a broker-fed consumer gave up, where its channel keeps it."""

    event_id: str
    reason: str


@dataclass
class ChannelFeeds:
    """Writes each broker-fed consumer's inputs to its topic or queue, and reads back what it gave up.

    Parameters
    ----------
    pipeline
        The running pipeline (its Kafka cluster, its consumers' dead-letter queues).
    declarations
        Its declarations: the consumers whose channel is a broker's.
    """

    pipeline: LocalPipeline
    declarations: Pipeline
    placed: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)  # consumer -> id -> (part, offset)
    written: dict[str, list[str]] = field(default_factory=dict)  # consumer -> the entries' Details, as written
    _producer: Any = None

    @property
    def consumers(self) -> dict[str, Consumer]:
        return {c.name: c for c in self.declarations.consumers if fed_by_broker(c)}

    def send(self, entries: Iterable[Mapping[str, Any]], consumer_of: Mapping[str, str],
             on_bus: Iterable[str] = ()) -> list[dict[str, Any]]:
        """Write each entry meant for a broker-fed consumer (``consumer_of``: event id -> component) to its
        channel, in order; return the others, for the bus. Ids in ``on_bus`` stay on the bus whoever they
        were meant for (copies no rule takes: they test the bus)."""
        consumers, stay = self.consumers, set(on_bus)
        bus: list[dict[str, Any]] = []
        by_consumer: dict[str, list[str]] = {}
        for entry in entries:
            event_id = _event_id(entry["Detail"])
            name = consumer_of.get(event_id or "", "")
            if name in consumers and event_id not in stay:
                by_consumer.setdefault(name, []).append(entry["Detail"])
            else:
                bus.append(dict(entry))
        for name, details in by_consumer.items():
            self.write(consumers[name], details)
        return bus

    def write(self, consumer: Consumer, details: list[str]) -> None:
        """Write CloudEvents (JSON) to ``consumer``'s topic or queue, in order."""
        self.written.setdefault(consumer.name, []).extend(details)
        if consumer.channel is Channel.KAFKA:
            self._produce(consumer, details)
        else:
            from .runtime.rabbitmq import publish_cloudevents

            publish_cloudevents(consumer.broker.queue, details, consumer.broker.virtual_host)  # type: ignore[union-attr]

    def _produce(self, consumer: Consumer, details: list[str]) -> None:
        from confluent_kafka import KafkaException, Producer

        if self._producer is None:
            self._producer = Producer({"bootstrap.servers": self.pipeline.kafka_bootstrap_servers, "log_level": 3,
                                       "enable.idempotence": True})  # in order per partition, each write once
        placed = self.placed.setdefault(consumer.name, {})

        def landed(error: Any, record: Any) -> None:
            if error is None:
                placed.setdefault(record.key().decode(), []).append((record.partition(), record.offset()))

        for detail in details:
            event_id = _event_id(detail) or ""
            self._producer.produce(consumer.broker.topic, key=event_id.encode(), value=detail.encode(),  # type: ignore[union-attr]
                                   on_delivery=landed)
            self._producer.poll(0)
        if self._producer.flush(30):
            raise KafkaException(f"{consumer.broker.topic}: the Kafka cluster did not take every record in 30 s")  # type: ignore[union-attr]

    # -- reading back ------------------------------------------------------------------------------

    def partition_order(self, consumer: Consumer) -> list[tuple[str, str]]:
        """``(event id, partition)`` of each record written to ``consumer``'s topic, in offset order per partition
        (an event written twice counts where it was first written)."""
        first = {event_id: places[0] for event_id, places in self.placed.get(consumer.name, {}).items()}
        return [(event_id, str(part)) for event_id, (part, _) in sorted(first.items(), key=lambda item: item[1])]

    def kept(self, consumer: Consumer) -> list[Kept]:
        """The inputs ``consumer`` gave up, each once, with the reason, from where its channel keeps them."""
        url = self.pipeline.consumer(consumer.name).dead_letter_queue_url
        if not url:
            return []
        messages = self.pipeline.peek(url)
        if consumer.channel is Channel.KAFKA:
            reasons = _last_failures(self.pipeline.consumer(consumer.name).function.logs)
            return self._kafka_kept(consumer, messages, reasons)
        from .redrive import last_reason

        kept: dict[str, Kept] = {}
        for message in messages:
            detail = _detail(message["Body"])
            if isinstance(detail, dict) and detail.get("id") is not None:
                kept.setdefault(str(detail["id"]), Kept(str(detail["id"]), last_reason(message)))
        return list(kept.values())

    def redrive(self, consumer: Consumer) -> int:
        """Write what ``consumer`` gave up to its topic or queue again, each event once, and empty where it was kept;
        return how many events.

        A Kafka on-failure message says where the record was, not what it held: the record written then is
        written again (what the demo or chaos wrote at that place).
        """
        from .runtime.queue_ops import delete_messages, receive_all

        url = self.pipeline.consumer(consumer.name).dead_letter_queue_url
        if not url:
            return 0
        messages = receive_all(self.pipeline.sqs, url)
        if consumer.channel is Channel.KAFKA:
            ids = {item.event_id for item in self._kafka_kept(consumer, messages, {})}
            details = [detail for detail in dict.fromkeys(self.written.get(consumer.name, []))
                       if _event_id(detail) in ids]
        else:  # each event once: a duplicate delivery may have been dead-lettered beside its original
            details = list(dict.fromkeys(json.dumps(_detail(message["Body"])) for message in messages))
        self.write(consumer, details)
        delete_messages(self.pipeline.sqs, url, messages)
        return len(details)

    def _kafka_kept(self, consumer: Consumer, messages: list[dict[str, Any]],
                    reasons: Mapping[str, str]) -> list[Kept]:
        """The records Kafka on-failure messages point at (topic, partition, offsets), by what was written there."""
        at = {place: event_id for event_id, places in self.placed.get(consumer.name, {}).items() for place in places}
        kept: dict[str, Kept] = {}
        for message in messages:
            record = json.loads(message["Body"])
            info, condition = record.get("KafkaBatchInfo", {}), record.get("requestContext", {}).get("condition")
            for offset in range(int(info.get("firstOffset", 0)), int(info.get("lastOffset", -1)) + 1):
                if (event_id := at.get((int(info.get("partition", -1)), offset))) is not None:
                    kept.setdefault(event_id, Kept(event_id, reasons.get(event_id) or f"{condition or NO_REASON}: "
                                                   "its invocations failed as a whole (a timeout or a crash)"))
        return list(kept.values())

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
            self._producer = None


def _event_id(detail: str) -> str | None:
    try:
        event_id = json.loads(detail)["id"]
    except (ValueError, TypeError, KeyError):
        return None
    return str(event_id) if event_id is not None else None


def _detail(body: str) -> Any:
    """The CloudEvent a dead-lettered body holds (the consumer keeps its EventBridge-shaped envelope)."""
    try:
        envelope = json.loads(body)
    except ValueError:
        return None
    return envelope.get("detail", envelope) if isinstance(envelope, dict) else envelope


def _last_failures(logs: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Event id -> the reason of the last failure the consumer logged for it."""
    reasons: dict[str, str] = {}
    for line in logs:  # a record that only waited behind a failed one says so: not its own reason
        if line.get("message") == "record failed" and line.get("event_id") and line.get("status") != "waiting":
            reasons[str(line["event_id"])] = f"{line.get('status')}: {line.get('reason')}"
    return reasons
