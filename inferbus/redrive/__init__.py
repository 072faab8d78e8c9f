"""Look into a dead-letter queue and move its messages back to their source queue.

``inspect_dead_letters`` re-validates each message with the consumer's own contracts, so a
dry run tells which messages would fail again (and why) and which failed for a reason that
may have passed (a throttled bus, a crashed invocation). A record the consumer dead-lettered
itself on its last receive carries its last reason as message attributes
(``inferbus_lambda.rejections``); one SQS moved (its last receive failed as a whole: a
timeout, a crash) has none, and the verdict says so. ``redrive`` moves them: in AWS with
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

from inferbus_lambda.contracts import InvalidEventError, from_eventbridge_event
from inferbus_lambda.rejections import DEAD_LETTER_ATTRIBUTES

from inferbus.runtime.queue_ops import peek_messages, receive_all, release_messages

__all__ = ["DeadLetter", "RedriveError", "inspect_dead_letters", "redrive", "resolve_queues"]


class RedriveError(ValueError):
    """The queues to redrive between cannot be told; the message says why."""


def resolve_queues(sqs: Any, queue: str, source_url: str | None = None) -> tuple[str, str]:
    """``(dlq_url, source_url)`` from a DLQ given by URL or name; the source is the one queue
    whose redrive policy names this DLQ, unless ``source_url`` is given."""
    dlq_url = queue if queue.startswith(("https://", "http://")) else sqs.get_queue_url(QueueName=queue)["QueueUrl"]
    if source_url:
        return dlq_url, source_url
    sources = sqs.list_dead_letter_source_queues(QueueUrl=dlq_url).get("queueUrls", [])
    if len(sources) != 1:
        found = ", ".join(sources) or "none"
        raise RedriveError(f"{queue} is the DLQ of {len(sources)} queues ({found}): name the one with --source-url")
    return dlq_url, sources[0]


NO_REASON = "none recorded: SQS moved it after its last receive failed as a whole (a timeout or a crash)"


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    event_id: str | None
    receive_count: int
    verdict: str
    last_reason: str = NO_REASON

    @property
    def valid(self) -> bool:
        return not self.verdict.startswith("would fail again")


def inspect_dead_letters(sqs: Any, dlq_url: str) -> list[DeadLetter]:
    """Every message in the DLQ with a verdict; the messages stay in the DLQ."""
    letters = []
    for message in peek_messages(sqs, dlq_url):
        try:
            event_id, verdict = from_eventbridge_event(message["Body"]).id, "valid now: failed for a transient reason, safe to redrive"
        except InvalidEventError as error:
            event_id, verdict = error.event_id, f"would fail again: {error.reason}"
        letters.append(DeadLetter(message["MessageId"], event_id, int(message["Attributes"]["ApproximateReceiveCount"]), verdict,
                                  last_reason(message)))
    return letters


def last_reason(message: dict[str, Any]) -> str:
    """Why the consumer gave up on a message, from the attributes it dead-lettered it with."""
    attributes = {name: value.get("StringValue", "") for name, value in message.get("MessageAttributes", {}).items()}
    _, status, reason, receives = DEAD_LETTER_ATTRIBUTES
    if reason not in attributes:
        return NO_REASON
    return f"{attributes.get(status, 'failed')}: {attributes[reason]} (after {attributes.get(receives, '?')} receives)"


def _ordering(message: dict[str, Any]) -> dict[str, str]:
    """A FIFO DLQ's message goes back in its own message group, under a deduplication id of its own
    (its first one may still be in the source queue's 5-minute window); a standard one needs neither."""
    group = message.get("Attributes", {}).get("MessageGroupId")
    return {} if group is None else {"MessageGroupId": group, "MessageDeduplicationId": f"redrive-{message['MessageId']}"}


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
    moved, kept = 0, []
    # Round after round: a FIFO DLQ hands out a message group's next batch only once the last one is deleted
    # (a group stops at a message kept back, which keeps the rest of it in order behind it).
    while batch := receive_all(sqs, dlq_url):
        for message in batch:
            if only_valid:
                try:
                    from_eventbridge_event(message["Body"])
                except InvalidEventError:
                    kept.append(message)
                    continue
            sqs.send_message(QueueUrl=source_url, MessageBody=message["Body"], **_ordering(message))
            sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
            moved += 1
        if all(message in kept for message in batch):
            break
    release_messages(sqs, dlq_url, kept)
    return moved
