"""The SQS calls the runtime, the demo and ``redrive`` share: read a whole queue, delete, release."""

from __future__ import annotations

import base64
from typing import Any

SQS_BATCH_LIMIT = 10  # most messages per ReceiveMessage, DeleteMessageBatch or ChangeMessageVisibilityBatch


def _chunks(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [messages[start : start + SQS_BATCH_LIMIT] for start in range(0, len(messages), SQS_BATCH_LIMIT)]


def receive_all(sqs: Any, queue_url: str, *, visibility_timeout_s: int = 30) -> list[dict[str, Any]]:
    """Receive every visible message once, hiding each for ``visibility_timeout_s`` while the caller works."""
    messages: list[dict[str, Any]] = []
    seen: set[str] = set()
    while batch := sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=SQS_BATCH_LIMIT, AttributeNames=["All"], MessageAttributeNames=["All"],
        VisibilityTimeout=visibility_timeout_s,
    ).get("Messages", []):
        fresh = [message for message in batch if message["MessageId"] not in seen]
        if not fresh:
            break
        seen.update(message["MessageId"] for message in fresh)
        messages += fresh
    return messages


def peek_messages(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Every visible message, left on the queue (visible again at once): a look, not a take."""
    messages = receive_all(sqs, queue_url)
    release_messages(sqs, queue_url, messages)
    return messages


def delete_messages(sqs: Any, queue_url: str, messages: list[dict[str, Any]]) -> None:
    """Delete received messages, 10 per call."""
    for chunk in _chunks(messages):
        sqs.delete_message_batch(
            QueueUrl=queue_url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)]
        )


def release_messages(sqs: Any, queue_url: str, messages: list[dict[str, Any]]) -> None:
    """Make received messages visible again at once, 10 per call."""
    for chunk in _chunks(messages):
        sqs.change_message_visibility_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0} for i, m in enumerate(chunk)],
        )


def lambda_message_attributes(attributes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A message's attributes as Lambda's (and Pipes') SQS records give them, from ``ReceiveMessage``'s.

    >>> lambda_message_attributes({"reason": {"DataType": "String", "StringValue": "late"}})
    {'reason': {'stringValue': 'late', 'stringListValues': [], 'binaryListValues': [], 'dataType': 'String'}}
    """
    records: dict[str, dict[str, Any]] = {}
    for name, value in attributes.items():
        record: dict[str, Any] = {}
        if "StringValue" in value:
            record["stringValue"] = value["StringValue"]
        if "BinaryValue" in value:  # bytes once botocore has read it; base64 text in a record
            record["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode("ascii")
        records[name] = record | {"stringListValues": [], "binaryListValues": [], "dataType": value["DataType"]}
    return records
