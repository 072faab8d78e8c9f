"""SQS as a record source: Lambda's SQS event source mapping with ``ReportBatchItemFailures``.

A record is a message: its ``messageId``, ``body``, ``attributes.ApproximateReceiveCount``, and
on a FIFO queue ``attributes.MessageGroupId`` (its ordering group).
The answer names the failed messages (``batchItemFailures``); SQS deletes the rest. A message
failing on its last receive (``ApproximateReceiveCount >= maxReceiveCount``) is sent to the
DLQ by the consumer itself, unchanged, with its reason as message attributes
(:func:`~..rejections.send_to_dead_letter_queue`); should that fail, SQS's own redrive moves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .base import SourceRecord
from .dead_letters import SqsDeadLetteringSource

__all__ = ["SqsRecordSource"]


def _queue_url(arn: str) -> str:
    """An SQS queue's URL from its ARN (``arn:<partition>:sqs:<region>:<account>:<name>``)."""
    _, partition, _, region, account, name = arn.split(":", 5)
    domain = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    return f"https://sqs.{region}.{domain}/{account}/{name}"


def _receive_count(record: Mapping[str, Any]) -> int:
    try:
        return int(record.get("attributes", {}).get("ApproximateReceiveCount", 1))
    except (TypeError, ValueError):
        return 1


class SqsRecordSource(SqsDeadLetteringSource):
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

    def records(self, event: Mapping[str, Any]) -> list[SourceRecord]:
        # What return_later needs of this batch's messages: their queue and receipt handle.
        self._receipts = {record["messageId"]: (record.get("eventSourceARN", ""), record.get("receiptHandle", ""))
                          for record in event["Records"]}
        return [SourceRecord(record["messageId"], record["body"], _receive_count(record),
                             {str(k): str(v) for k, v in record.get("attributes", {}).items()},
                             record.get("attributes", {}).get("MessageGroupId"))
                for record in event["Records"]]

    def batch_response(self, failed: Sequence[str]) -> dict[str, Any]:
        return {"batchItemFailures": [{"itemIdentifier": record_id} for record_id in failed]}

    def return_later(self, records: Sequence[SourceRecord], *, delay_s: int) -> None:
        """Hide the messages ``delay_s`` more seconds (``ChangeMessageVisibilityBatch``, 10 at a time): reported
        failed, they come back after that instead of after the queue's visibility timeout. A message it could not
        hide comes back after the visibility timeout, as any failed record."""
        from botocore.exceptions import BotoCoreError, ClientError

        if self.sqs is None:
            return
        receipts = getattr(self, "_receipts", {})
        by_queue: dict[str, list[str]] = {}
        for record in records:
            arn, handle = receipts.get(record.record_id, ("", ""))
            if arn and handle:
                by_queue.setdefault(_queue_url(arn), []).append(handle)
        client = self.sqs()
        for url, handles in by_queue.items():
            for start in range(0, len(handles), 10):
                entries = [{"Id": str(n), "ReceiptHandle": handle, "VisibilityTimeout": delay_s}
                           for n, handle in enumerate(handles[start:start + 10])]
                try:
                    client.change_message_visibility_batch(QueueUrl=url, Entries=entries)
                except (BotoCoreError, ClientError):
                    pass  # not hidden longer: they come back after the visibility timeout, as any failed record
