"""Look into a dead-letter queue and move its messages back to their source queue.

``inspect_dead_letters`` re-validates each message with the consumer's own contracts, so a
dry run tells which messages would fail again (and why) and which failed for a reason that
may have passed (a throttled bus, a crashed invocation). ``redrive`` moves them: in AWS with
the SQS message-move API (``StartMessageMoveTask``); where that API is missing (moto) with
receive → send → delete, one message at a time, so a crash never loses one (at worst it is
duplicated, and the consumer's idempotency claims absorb that).

Example
-------
>>> letters = inspect_dead_letters(sqs, dlq_url)  # doctest: +SKIP
>>> [(letter.event_id, letter.verdict) for letter in letters]  # doctest: +SKIP
[('img-7', 'would fail again: data.pixels.5: Input should be less than or equal to 16')]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inferbus.runtime.lambda_host import add_code_root_to_path

add_code_root_to_path()

from inferbus_lambda.contracts import InvalidEventError, from_eventbridge_event  # noqa: E402

__all__ = ["DeadLetter", "inspect_dead_letters", "redrive"]


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    event_id: str | None
    receive_count: int
    verdict: str

    @property
    def valid(self) -> bool:
        return not self.verdict.startswith("would fail again")


def _receive_all(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    messages, seen = [], set()
    while batch := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"],
                                       VisibilityTimeout=30).get("Messages", []):
        fresh = [m for m in batch if m["MessageId"] not in seen]
        if not fresh:
            break
        seen.update(m["MessageId"] for m in fresh)
        messages += fresh
    return messages


def inspect_dead_letters(sqs: Any, dlq_url: str) -> list[DeadLetter]:
    """Every message in the DLQ with a verdict; the messages stay in the DLQ."""
    letters = []
    for message in _receive_all(sqs, dlq_url):
        try:
            event = from_eventbridge_event(message["Body"])
            letter = DeadLetter(message["MessageId"], event.id, int(message["Attributes"]["ApproximateReceiveCount"]),
                                "valid now: failed for a transient reason, safe to redrive")
        except InvalidEventError as error:
            letter = DeadLetter(message["MessageId"], error.event_id, int(message["Attributes"]["ApproximateReceiveCount"]),
                                f"would fail again: {error.reason}")
        letters.append(letter)
        sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return letters


def redrive(sqs: Any, dlq_url: str, source_url: str, *, only_valid: bool = True) -> int:
    """Move DLQ messages back to ``source_url``; return how many moved (-1: a move task was started).

    ``only_valid`` (default) leaves the messages that would fail again where they are. The
    message-move API moves everything, so it is used only with ``only_valid=False``.
    """
    if not only_valid:
        try:
            arns = [sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
                    for url in (dlq_url, source_url)]
            sqs.start_message_move_task(SourceArn=arns[0], DestinationArn=arns[1])
            return -1
        except NotImplementedError:
            pass  # moto has no message-move API: move them one by one below
    moved = 0
    for message in _receive_all(sqs, dlq_url):
        try:
            from_eventbridge_event(message["Body"])
        except InvalidEventError:
            if only_valid:
                sqs.change_message_visibility(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
                continue
        sqs.send_message(QueueUrl=source_url, MessageBody=message["Body"])
        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
        moved += 1
    return moved
