"""A record source that dead-letters by itself: records failing on their last attempt go to an SQS DLQ.

SQS (whose own redrive would move a message without its reason) and Amazon MQ (which has no
on-failure destination for Lambda) share it: the consumer sends each such record, unchanged, with
its reason as message attributes (:func:`~..rejections.send_to_dead_letter_queue`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..rejections import DeadLetter, send_to_dead_letter_queue
from .base import RecordSource, SourceRecord

__all__ = ["SqsDeadLetteringSource"]


class SqsDeadLetteringSource(RecordSource):
    """The dead-lettering half of a source; a subclass reads its channel's records and answers.

    Parameters
    ----------
    consumer
        The consumer's name, signed on what it dead-letters.
    dead_letter_queue_url, max_receive_count
        The DLQ and the attempt that is a record's last; unset, the channel's own limit (if any)
        decides, and the reason is not kept.
    sqs
        Returns the boto3 SQS client (called on first use: only a batch with a record to
        dead-letter needs one).
    """

    def __init__(self, *, consumer: str, dead_letter_queue_url: str | None = None, max_receive_count: int | None = None,
                 sqs: Callable[[], Any] | None = None) -> None:
        self.consumer = consumer
        self.dead_letter_queue_url = dead_letter_queue_url
        self.max_receive_count = max_receive_count
        self.sqs = sqs

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
