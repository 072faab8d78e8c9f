"""The invalid-events destination: records that break their contract, kept with the reason.

A record that fails validation would fail the same way on every retry, so a consumer sends
it here at once, with why, and reports it handled: no pointless retries, and the reason
travels with the record instead of only in a log line. The workflows' rejections reach the
same queue through a rule on their ``...Failed`` events.

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

__all__ = ["MAX_KEPT_BODY_BYTES", "Rejection", "send_rejections"]

MAX_KEPT_BODY_BYTES = 64 * 1024  # the start of an oversized body is enough to see what it was


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
    sizes = [len(body.encode()) for body in bodies]
    unsent = {rejections[i].message_id for i, size in enumerate(sizes) if size > MAX_REQUEST_BYTES}
    for request in plan_requests(sizes):
        response = sqs.send_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(index), "MessageBody": bodies[index]} for index in request],
        )
        unsent |= {rejections[int(failed["Id"])].message_id for failed in response.get("Failed", [])}
    return unsent
