"""Amazon MQ for RabbitMQ as a record source: Lambda's event source mapping on a RabbitMQ queue.

The event (AWS's documented shape, ``eventSource`` ``aws:rmq``)::

    {"eventSource": "aws:rmq", "eventSourceArn": "arn:aws:mq:...:broker:...",
     "rmqMessagesByQueue": {"orders::/": [{"basicProperties": {...headers...}, "redelivered": false,
                                            "data": "<base64 of the message body>"}]}}

A message carries one CloudEvent, in any of three forms, and becomes the EventBridge-shaped
body the consumer parses (``detail`` the CloudEvent, ``source``/``detail-type`` its own), so
the claims are keyed by the CloudEvent's ``source`` and ``id`` as on every channel:

- *structured*: the body is the CloudEvent's JSON (``application/cloudevents+json``);
- *binary* (the CloudEvents AMQP binding): the attributes are headers named ``cloudEvents:<attr>``
  (or ``cloudEvents_<attr>``), the body is the ``data``;
- an EventBridge event (``detail`` holding the CloudEvent), as a rule's target would write it.

Anything else is handed on as it came, and the consumer rejects it with the reason, as on SQS.

Lambda takes no partial answer from an MQ mapping: when a record must come back, the whole
invocation fails (:class:`RedeliverBatch`) and Lambda returns the batch to the queue; the
records that succeeded are claimed, so their redelivery is a duplicate, published once.
Lambda has no on-failure destination for Amazon MQ either: a record failing on its last
attempt is sent by the consumer to its DLQ (an SQS queue, as on SQS) with its reason. The
attempt is RabbitMQ's ``x-delivery-count`` header (a quorum queue's) plus one; without it, 2
once ``redelivered``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .base import SourceRecord
from .dead_letters import SqsDeadLetteringSource

__all__ = ["AmazonMqRecordSource", "RedeliverBatch", "header_text"]

EVENT_SOURCE = "aws:rmq"
CLOUDEVENT_HEADER_PREFIXES = ("cloudEvents:", "cloudEvents_")  # the CloudEvents AMQP binding's application properties
DELIVERY_COUNT = "x-delivery-count"  # a quorum queue's count of earlier deliveries


class RedeliverBatch(Exception):
    """The invocation fails so that Lambda returns the batch to the queue (an MQ mapping takes no partial answer)."""

    def __init__(self, failed: Sequence[str]) -> None:
        super().__init__(f"{len(failed)} record(s) must come back, so the batch goes back to the queue: "
                         f"{', '.join(list(failed)[:10])}{' ...' if len(failed) > 10 else ''}")
        self.failed = list(failed)


def header_text(value: Any) -> Any:
    """A header as Lambda writes it: an AMQP long string is ``{"bytes": [...]}``; it is read as text."""
    if isinstance(value, Mapping) and isinstance(value.get("bytes"), list):
        return bytes(value["bytes"]).decode("utf-8", "replace")
    return value


def _attempt(message: Mapping[str, Any]) -> int:
    headers = (message.get("basicProperties") or {}).get("headers") or {}
    try:
        return int(header_text(headers[DELIVERY_COUNT])) + 1
    except (KeyError, TypeError, ValueError):
        return 2 if message.get("redelivered") else 1


def _binary_cloudevent(headers: Mapping[str, Any], body: str, content_type: str | None) -> dict[str, Any] | None:
    attributes = {name[len(prefix):]: header_text(value) for name, value in headers.items()
                  for prefix in CLOUDEVENT_HEADER_PREFIXES if name.startswith(prefix)}
    if "specversion" not in attributes:
        return None
    try:
        attributes["data"] = json.loads(body) if body else None
    except ValueError:
        attributes["data"] = body
    if content_type and "datacontenttype" not in attributes:
        attributes["datacontenttype"] = content_type
    return attributes


def envelope(message: Mapping[str, Any]) -> str:
    """The message as the body the consumer parses: an EventBridge-shaped event whose ``detail`` is the
    CloudEvent; a message that holds none is returned as it came (the consumer rejects it with the reason)."""
    properties = message.get("basicProperties") or {}
    try:
        body = base64.b64decode(message.get("data") or "", validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return str(message.get("data"))
    cloudevent = _binary_cloudevent(properties.get("headers") or {}, body, properties.get("contentType"))
    if cloudevent is None:
        try:
            parsed = json.loads(body)
        except ValueError:
            return body
        if not isinstance(parsed, dict) or "detail" in parsed or "specversion" not in parsed:
            return body
        cloudevent = parsed
    return json.dumps({"source": cloudevent.get("source"), "detail-type": cloudevent.get("type"), "detail": cloudevent})


class AmazonMqRecordSource(SqsDeadLetteringSource):
    """An Amazon MQ for RabbitMQ queue's batches.

    Parameters
    ----------
    consumer
        The consumer's name, signed on what it dead-letters.
    dead_letter_queue_url, max_receive_count
        Where a record failing on its ``max_receive_count``-th attempt goes, with its reason;
        unset, it comes back until the queue's own ``delivery-limit`` (or forever).
    sqs
        Returns the boto3 SQS client (called on first use).
    """

    name: ClassVar[str] = "amazon-mq"

    def records(self, event: Mapping[str, Any]) -> list[SourceRecord]:
        records = []
        for queue_key, messages in (event.get("rmqMessagesByQueue") or {}).items():
            for index, message in enumerate(messages):
                properties = message.get("basicProperties") or {}
                message_id = properties.get("messageId")
                record_id = f"{queue_key}#{index}" + (f":{message_id}" if message_id else "")
                attributes = {"queue": queue_key, "redelivered": str(bool(message.get("redelivered"))).lower()}
                records.append(SourceRecord(record_id, envelope(message), _attempt(message), attributes))
        return records

    def batch_response(self, failed: Sequence[str]) -> dict[str, Any]:
        if failed:
            raise RedeliverBatch(failed)
        return {}
