"""SQS as a record source: Lambda's SQS event source mapping with ``ReportBatchItemFailures``.

A record is a message: its ``messageId``, ``body``, ``attributes.ApproximateReceiveCount``, and
on a FIFO queue ``attributes.MessageGroupId`` (its ordering group).
The answer names the failed messages (``batchItemFailures``); SQS deletes the rest. A message
failing on its last receive (``ApproximateReceiveCount >= maxReceiveCount``) is sent to the
DLQ by the consumer itself, unchanged, with its reason as message attributes
(:func:`~..rejections.send_to_dead_letter_queue`); should that fail, SQS's own redrive moves it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from ..rejections import DeadLetter, send_to_dead_letter_queue
from .base import RecordSource, SourceRecord

__all__ = ["SqsRecordSource"]


def _receive_count(record: Mapping[str, Any]) -> int:
    try:
        return int(record.get("attributes", {}).get("ApproximateReceiveCount", 1))
    except (TypeError, ValueError):
        return 1


class SqsRecordSource(RecordSource):
    """An SQS queue's batches.

    Parameters
    ----------
    consumer
        The consumer's name, signed on what it dead-letters.
    dead_letter_queue_url, max_receive_count
        The queue's DLQ and ``maxReceiveCount``; unset, SQS's redrive alone moves records.
    sqs
        Returns the boto3 SQS client (called on first use: only a batch with a record to
        dead-letter needs one).
    """

    name: ClassVar[str] = "sqs"

    def __init__(self, *, consumer: str, dead_letter_queue_url: str | None = None, max_receive_count: int | None = None,
                 sqs: Callable[[], Any] | None = None) -> None:
        self.consumer = consumer
        self.dead_letter_queue_url = dead_letter_queue_url
        self.max_receive_count = max_receive_count
        self.sqs = sqs

    def records(self, event: Mapping[str, Any]) -> list[SourceRecord]:
        return [SourceRecord(record["messageId"], record["body"], _receive_count(record),
                             {str(k): str(v) for k, v in record.get("attributes", {}).items()},
                             record.get("attributes", {}).get("MessageGroupId"))
                for record in event["Records"]]

    def batch_response(self, failed: Sequence[str]) -> dict[str, Any]:
        return {"batchItemFailures": [{"itemIdentifier": record_id} for record_id in failed]}

    def is_last_attempt(self, record: SourceRecord) -> bool:
        return self.max_receive_count is not None and record.attempt >= self.max_receive_count

    @property
    def dead_letters(self) -> bool:
        return self.dead_letter_queue_url is not None and self.max_receive_count is not None and self.sqs is not None

    def dead_letter(self, letters: Sequence[DeadLetter]) -> set[str]:
        if not self.dead_letters:
            return super().dead_letter(letters)
        assert self.sqs is not None and self.dead_letter_queue_url is not None
        return send_to_dead_letter_queue(self.sqs(), self.dead_letter_queue_url, self.consumer, letters)
