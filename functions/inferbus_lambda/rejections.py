"""Where records go aside, with their reason: the invalid-events destination and, on a record's
last receive, its dead-letter queue.

A record that fails validation would fail the same way on every retry, so a consumer sends
it here at once, with why, and reports it handled: no pointless retries, and the reason
travels with the record instead of only in a log line. The workflows' rejections reach the
same queue through a rule on their ``...Failed`` events.

A record that keeps failing for another reason (a transient error, a claim held elsewhere)
would be moved to its DLQ by SQS after ``maxReceiveCount`` receives, with no word of why. On its
last receive the consumer sends it there itself, unchanged, with the reason in message
attributes (:func:`send_to_dead_letter_queue`), and reports it handled; ``inferbus redrive``
shows the reason. Should that send fail, SQS's own redrive still takes it.

Example
-------
>>> rejection = Rejection("m-1", "InvalidEventError", "data.pixels.5: Input should be ...", "img-7", "{...}")
>>> json.loads(rejection.message_body("inferbus.image-classifier"))["reason"]
'data.pixels.5: Input should be ...'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .publishing import MAX_REQUEST_BYTES, plan_requests

__all__ = ["DEAD_LETTER_ATTRIBUTES", "DeadLetter", "MAX_KEPT_BODY_BYTES", "Rejection", "send_rejections",
           "send_to_dead_letter_queue"]

MAX_KEPT_BODY_BYTES = 64 * 1024  # the start of an oversized body is enough to see what it was
MAX_REASON_CHARS = 1024
# Message attributes of a record the consumer dead-letters: what it was, why, after how many receives.
DEAD_LETTER_ATTRIBUTES = ("inferbus-consumer", "inferbus-status", "inferbus-reason", "inferbus-receives")


@dataclass(frozen=True)
class Rejection:
    message_id: str
    error: str  # InvalidEventError, IdConflictError
    reason: str
    event_id: str | None
    body: str

    def message_body(self, consumer: str) -> str:
        body = self.body.encode("utf-8", "replace")
        return json.dumps({
            "consumer": consumer,
            "error": self.error,
            "reason": self.reason,
            "event_id": self.event_id,
            "message_id": self.message_id,
            "body": body[:MAX_KEPT_BODY_BYTES].decode("utf-8", "ignore"),
            "body_truncated": len(body) > MAX_KEPT_BODY_BYTES,
        })


def send_rejections(sqs: Any, queue_url: str, consumer: str, rejections: Sequence[Rejection]) -> set[str]:
    """Send ``rejections`` with SendMessageBatch (10 and 256 KB per call); return the message
    ids of those that could not be sent, which the caller must report as failed."""
    bodies = [rejection.message_body(consumer) for rejection in rejections]
    return _send_in_batches(sqs, queue_url, [rejection.message_id for rejection in rejections],
                            [{"MessageBody": body} for body in bodies], [len(body.encode()) for body in bodies])


@dataclass(frozen=True)
class DeadLetter:
    """A record that failed on its last receive: its body goes to the DLQ unchanged, the reason beside it."""

    message_id: str
    status: str  # failed, in_progress, invalid, conflict (see consumer.RecordOutcome)
    reason: str
    receives: int
    body: str
    group: str | None = None  # its ordering group: a FIFO DLQ needs one, and the record's own keeps the key visible

    def entry(self, consumer: str) -> dict[str, Any]:
        """Its SendMessageBatch entry (without ``Id``); in its group, deduplicated by its id, on a FIFO DLQ."""
        entry: dict[str, Any] = {"MessageBody": self.body, "MessageAttributes": self.message_attributes(consumer)}
        if self.group is not None:
            entry |= {"MessageGroupId": self.group, "MessageDeduplicationId": self.message_id}
        return entry

    def message_attributes(self, consumer: str) -> dict[str, dict[str, str]]:
        values = (consumer, self.status, self.reason[:MAX_REASON_CHARS] or "-", str(self.receives))
        return {name: {"DataType": "String", "StringValue": value}
                for name, value in zip(DEAD_LETTER_ATTRIBUTES, values, strict=True)}


def send_to_dead_letter_queue(sqs: Any, queue_url: str, consumer: str, letters: Sequence[DeadLetter]) -> set[str]:
    """Send ``letters`` to the DLQ with SendMessageBatch; return the message ids that could not be sent
    (the caller reports them failed, and SQS's redrive moves them, without the reason)."""
    return _send_in_batches(
        sqs, queue_url, [letter.message_id for letter in letters],
        [letter.entry(consumer) for letter in letters],
        [len(letter.body.encode("utf-8", "replace")) + MAX_REASON_CHARS + 256 for letter in letters])


def _send_in_batches(sqs: Any, queue_url: str, message_ids: Sequence[str], entries: Sequence[dict[str, Any]],
                     sizes: Sequence[int]) -> set[str]:
    """SendMessageBatch in requests of at most 10 entries and 256 KB (``sizes``, one per entry); the
    message ids of the entries not sent: too large for any request, or refused by SQS."""
    unsent = {message_ids[index] for index, size in enumerate(sizes) if size > MAX_REQUEST_BYTES}
    for request in plan_requests(sizes):
        response = sqs.send_message_batch(QueueUrl=queue_url,
                                          Entries=[{"Id": str(index), **entries[index]} for index in request])
        unsent |= {message_ids[int(failed["Id"])] for failed in response.get("Failed", [])}
    return unsent
