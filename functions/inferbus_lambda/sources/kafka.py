"""Kafka as a record source: Lambda's Amazon MSK and self-managed Kafka event source mappings.

The event (AWS's documented shape) groups records by ``"<topic>-<partition>"``; each has
``topic``, ``partition``, ``offset``, ``timestamp``, a base64 ``key`` and ``value``, and
``headers`` as a list of ``{name: [byte, ...]}``. A record holds one CloudEvent, in either of the
CloudEvents Kafka binding's modes:

- structured: the value is the CloudEvent as JSON (``specversion``, ``id``, ``type``, ...);
- binary: the attributes are ``ce_<name>`` headers (``ce_id``, ``ce_type``, ...) and the value
  is the event's ``data``.

Either way the consumer sees the same body as from SQS: an EventBridge event whose ``detail`` is
the CloudEvent, so its claims are keyed by the CloudEvent (its source and id), whatever offset
carried it. A record that holds no CloudEvent is refused with the reason (sent to the
invalid-events destination, as from every channel: it never blocks its partition).

A record's id is ``"<topic>-<partition>-<offset>"`` (what the batch response names) and its
ordering group its partition, ``"<topic>-<partition>"``: a record that fails holds back its
partition's later records, and Lambda resumes the partition from the earliest failed offset.
The channel does not say how many times a record was delivered, so the function never knows its
last attempt: after the mapping's ``MaximumRetryAttempts`` the mapping itself sends the batch's
description to its on-failure destination.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .base import RecordSource, SourceRecord

__all__ = ["BINARY_PREFIX", "KafkaRecordSource", "binary_mode", "kafka_body", "record_id"]

BINARY_PREFIX = "ce_"  # the CloudEvents Kafka binding's header prefix (binary mode)
CONTENT_TYPE = "content-type"


def record_id(record: Mapping[str, Any]) -> str:
    """``"<topic>-<partition>-<offset>"``: how the batch response names a Kafka record."""
    return f"{record['topic']}-{record['partition']}-{record['offset']}"


def _headers(record: Mapping[str, Any]) -> dict[str, str]:
    """The record's headers as text (each is a list of byte values); the first value of a repeated name wins."""
    headers: dict[str, str] = {}
    for header in record.get("headers") or ():
        for name, values in header.items():
            try:
                headers.setdefault(str(name), bytes(values).decode())
            except (TypeError, ValueError):
                continue  # not UTF-8 bytes: not a CloudEvents attribute
    return headers


def _value(record: Mapping[str, Any]) -> str | None:
    """The record's value as text; None when it is absent, not base64 or not UTF-8."""
    value = record.get("value")
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, ValueError):
        return None


def binary_mode(event: Any) -> tuple[list[tuple[str, bytes]], bytes]:
    """A CloudEvent as a Kafka producer writes it in binary mode: ``ce_*`` headers and the data as the value.

    (Structured mode is the CloudEvent's JSON as the value: ``event.model_dump_json(exclude_none=True)``.)
    """
    attributes = event.model_dump(mode="json", exclude_none=True)
    data = attributes.pop("data")
    content_type = attributes.pop("datacontenttype", "application/json")
    headers = [(f"{BINARY_PREFIX}{name}", str(value).encode()) for name, value in attributes.items()]
    return [*headers, (CONTENT_TYPE, content_type.encode())], json.dumps(data).encode()


def kafka_body(record: Mapping[str, Any]) -> tuple[str, str | None]:
    """The record as the consumer reads every channel's records: an EventBridge event holding the
    CloudEvent; and why no event could be read out of it (None when one could).

    A value that is JSON but not a CloudEvent is wrapped all the same: the consumer's parsing
    says what is wrong with it.
    """
    value = _value(record)
    headers = _headers(record)
    attributes = {name[len(BINARY_PREFIX):]: text for name, text in headers.items() if name.startswith(BINARY_PREFIX)}
    if value is None and record.get("value") is not None:
        return "", "the Kafka value is not base64-encoded UTF-8 text"
    if "specversion" in attributes:  # binary mode: the value is the data
        event: Any = dict(attributes)
        if CONTENT_TYPE in headers:
            event["datacontenttype"] = headers[CONTENT_TYPE]
        try:
            event["data"] = json.loads(value) if value is not None else None
        except ValueError:
            return value or "", "the Kafka value (binary-mode CloudEvent data) is not JSON"
    else:
        if value is None:
            return "", "the Kafka record has no value and no ce_specversion header: it holds no CloudEvent"
        try:
            event = json.loads(value)
        except ValueError:
            return value, "the Kafka value is not JSON and no ce_* headers carry a CloudEvent"
        if isinstance(event, dict) and "detail" in event:
            return value, None  # already an EventBridge event (a bus event written to the topic)
    source, detail_type = (event.get("source"), event.get("type")) if isinstance(event, dict) else (None, None)
    return json.dumps({"version": "0", "detail-type": detail_type, "source": source, "detail": event}), None


class KafkaRecordSource(RecordSource):
    """A Kafka topic's batches (Amazon MSK or self-managed), with ``ReportBatchItemFailures``."""

    name: ClassVar[str] = "kafka"

    def records(self, event: Mapping[str, Any]) -> list[SourceRecord]:
        records = []
        for partition_records in event["records"].values():  # one list per "<topic>-<partition>", in offset order
            for record in partition_records:
                attributes = {"topic": str(record["topic"]), "partition": str(record["partition"]),
                              "offset": str(record["offset"]), "timestamp": str(record.get("timestamp", "")),
                              "key": str(record.get("key") or "")}
                body, problem = kafka_body(record)
                records.append(SourceRecord(record_id(record), body, 1, attributes,
                                            f"{record['topic']}-{record['partition']}", problem))
        return records

    def batch_response(self, failed: Sequence[str]) -> dict[str, Any]:
        return {"batchItemFailures": [{"itemIdentifier": identifier} for identifier in failed]}
