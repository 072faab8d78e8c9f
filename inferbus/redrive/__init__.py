"""Look into a dead-letter queue and move its messages back to where they came from, whatever the channel.

``inspect_dead_letters`` re-validates each message with the consumer's own contracts, so a
dry run tells which messages would fail again (and why) and which failed for a reason that
may have passed (a throttled bus, a crashed invocation). A record the consumer dead-lettered
itself on its last receive carries its last reason as message attributes
(``inferbus_lambda.rejections``); one SQS moved (its last receive failed as a whole: a
timeout, a crash) has none, and the verdict says so. ``redrive`` moves them: in AWS with
the SQS message-move API (``StartMessageMoveTask``); where that API is missing (moto) with
receive → send → delete, one message at a time, so a crash never loses one (at worst it is
duplicated, and the consumer's idempotency claims absorb that).

Every channel's failure queue is an SQS queue, so the same two calls serve them all; where the messages
go back to is a :class:`~.targets.RedriveTarget` (see :mod:`.targets`): the SQS source queue, a RabbitMQ
consumer's queue (its DLQ is written by the consumer, no SQS queue dead-letters into it), or, for a
Kafka mapping's on-failure records (where the records are, not the records), the records' partition,
read again, and for an asynchronous invocation's on-failure records (an Express workflow's failure net)
the function each names, invoked again with its request. :func:`resolve_target` finds it from the
queue's redrive sources or, for a queue that has none, from its messages: signed by a declared consumer,
a Kafka record, or an invocation record.

Example
-------
>>> letters = inspect_dead_letters(sqs, dlq_url)  # doctest: +SKIP
>>> [(letter.event_id, letter.verdict) for letter in letters]  # doctest: +SKIP
[('img-7', 'would fail again: data.pixels.5: Input should be less than or equal to 16')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferbus_lambda.contracts import InvalidEventError, from_eventbridge_event
from inferbus_lambda.rejections import DEAD_LETTER_ATTRIBUTES

from inferbus.model.declarations import Channel, Consumer
from inferbus.model.names import DEAD_LETTER_QUEUE_URL, kebab
from inferbus.model.rabbitmq import RabbitMqQueue
from inferbus.runtime.queue_ops import peek_messages, receive_all, release_messages

from .targets import (
    INVOKED_AGAIN,
    KafkaRedrive,
    LambdaRedrive,
    RabbitMqRedrive,
    RedriveTarget,
    SqsRedrive,
    async_invocation_failure,
    kafka_failure,
)

__all__ = ["DeadLetter", "FailureQueue", "RedriveError", "RedriveTarget", "failure_queues", "inspect_dead_letters",
           "redrive", "resolve_queues", "resolve_target", "target_of"]


class RedriveError(ValueError):
    """The queues to redrive between cannot be told; the message says why."""


def resolve_queues(sqs: Any, queue: str, source_url: str | None = None) -> tuple[str, str]:
    """``(dlq_url, source_url)`` from a DLQ given by URL or name; the source is the one queue
    whose redrive policy names this DLQ, unless ``source_url`` is given."""
    dlq_url = _queue_url(sqs, queue)
    if source_url:
        return dlq_url, source_url
    sources = sqs.list_dead_letter_source_queues(QueueUrl=dlq_url).get("queueUrls", [])
    if len(sources) != 1:
        found = ", ".join(sources) or "none"
        raise RedriveError(f"{queue} is the DLQ of {len(sources)} queues ({found}): name the one with --source-url")
    return dlq_url, sources[0]


def _queue_url(sqs: Any, queue: str) -> str:
    return queue if queue.startswith(("https://", "http://")) else sqs.get_queue_url(QueueName=queue)["QueueUrl"]


def target_of(consumer: Consumer, *, broker_url: str | None = None,
              bootstrap_servers: str | None = None) -> RedriveTarget | None:
    """Where a broker-fed consumer's failure queue goes back to (None for ``sqs``/``fifo``: its source queue)."""
    if consumer.channel is Channel.RABBITMQ:
        assert isinstance(consumer.broker, RabbitMqQueue)
        return RabbitMqRedrive(consumer.broker.queue, consumer.broker.virtual_host, broker_url)
    if consumer.channel is Channel.KAFKA:
        return KafkaRedrive(bootstrap_servers)
    return None


def resolve_target(sqs: Any, queue: str, consumers: Sequence[Consumer] = (), *, source_url: str | None = None,
                   broker_url: str | None = None, bootstrap_servers: str | None = None,
                   lambda_client: Callable[[], Any] | None = None) -> tuple[str, RedriveTarget]:
    """``(dlq_url, target)`` for any channel's failure queue, given by URL or name.

    The target is ``source_url`` if given, else the one SQS queue whose redrive policy names the DLQ; a
    queue that no SQS queue dead-letters into is a broker-fed consumer's: the declared ``consumers``' one
    whose name its messages are signed with (a RabbitMQ consumer's), or the Kafka partitions its
    on-failure records point to, or the functions an asynchronous invocation's on-failure records name
    (invoked again with ``lambda_client()``). ``broker_url`` and ``bootstrap_servers`` say where the broker
    is, when not where the runtime's is (RabbitMQ) or where the records say (Kafka).

    Raises
    ------
    RedriveError
        When it cannot be told: the message says what to pass.
    """
    dlq_url = _queue_url(sqs, queue)
    sources = [source_url] if source_url else sqs.list_dead_letter_source_queues(QueueUrl=dlq_url).get("queueUrls", [])
    if len(sources) == 1:
        return dlq_url, SqsRedrive(sources[0])
    if len(sources) > 1:
        raise RedriveError(f"{queue} is the DLQ of {len(sources)} queues ({', '.join(sources)}): name the one with "
                           f"--source-url")
    signers = {consumer.result_source: consumer for consumer in consumers}  # a consumer signs with its result source
    for message in peek_messages(sqs, dlq_url):
        if kafka_failure(message["Body"]) is not None:
            return dlq_url, KafkaRedrive(bootstrap_servers)
        if lambda_client is not None and async_invocation_failure(message["Body"]) is not None:
            return dlq_url, LambdaRedrive(lambda_client)
        signed = signers.get(_attributes(message).get(DEAD_LETTER_ATTRIBUTES[0], ""))
        if signed is not None and (target := target_of(signed, broker_url=broker_url, bootstrap_servers=bootstrap_servers)):
            return dlq_url, target
    raise RedriveError(f"{queue}: no queue dead-letters into it, and none of its messages is a Kafka or asynchronous "
                       "invocation's on-failure record or signed by a declared RabbitMQ consumer: name the queue to move "
                       "them to with --source-url")


@dataclass(frozen=True)
class FailureQueue:
    """One failure queue of the stack (a ``...DeadLetterQueueUrl`` output), whatever its channel: a declared
    consumer's, or one of the kit's own (the unrouted-events check's, a workflow's failure net's)."""

    consumer: str
    channel: Channel
    url: str
    messages: int
    goes_back_to: str  # where a redrive sends its messages, or why it cannot


def failure_queues(sqs: Any, consumers: Sequence[Consumer], outputs: Mapping[str, str], *,
                   broker_url: str | None = None, bootstrap_servers: str | None = None) -> list[FailureQueue]:
    """Every declared consumer's failure queue, then the stack's other ones (every other ``...DeadLetterQueueUrl``
    output: the kit's own checks and nets, named after the output), each with its depth and where it goes back to.

    Raises
    ------
    RedriveError
        When a declared consumer has no ``DeadLetterQueueUrl`` output (the stack is not the declarations').
    """
    def listed(name: str, channel: Channel, url: str, back: str) -> FailureQueue:
        depth = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        return FailureQueue(name, channel, url, int(depth["Attributes"]["ApproximateNumberOfMessages"]), back)

    def source_of(url: str, if_none: str = "0 queues dead-letter into it: give --source-url") -> str:
        sources = sqs.list_dead_letter_source_queues(QueueUrl=url).get("queueUrls", [])
        if not sources:
            return if_none
        return sources[0] if len(sources) == 1 else f"{len(sources)} queues dead-letter into it: give --source-url"

    found = []
    for consumer in consumers:
        key = consumer.output_key(DEAD_LETTER_QUEUE_URL)
        if key not in outputs:
            raise RedriveError(f"the stack has no output {key}: is it deployed from these declarations "
                               f"(--stage for a stage's own)?")
        target = target_of(consumer, broker_url=broker_url, bootstrap_servers=bootstrap_servers)
        found.append(listed(consumer.name, consumer.channel, outputs[key],
                            source_of(outputs[key]) if target is None else target.describe()))
    declared = {consumer.output_key(DEAD_LETTER_QUEUE_URL) for consumer in consumers}
    for key in sorted(key for key in outputs if key.endswith(DEAD_LETTER_QUEUE_URL) and key not in declared):
        # No queue dead-letters into an asynchronous invocation's on-failure destination: its records name the function.
        found.append(listed(kebab(key.removesuffix(DEAD_LETTER_QUEUE_URL)), Channel.SQS, outputs[key],
                            source_of(outputs[key], if_none=INVOKED_AGAIN)))
    return found


# A Kafka on-failure record says where its records are, not what they hold: they are read again there.
KAFKA_VERDICT = "a Kafka on-failure record (where the records are, not the records): redrive reads again"
INVOCATION_VERDICT = "an asynchronous invocation's on-failure record: redrive invokes its function again with"
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
        if (failure := kafka_failure(message["Body"])) is not None:
            letters.append(DeadLetter(message["MessageId"], None, int(message["Attributes"]["ApproximateReceiveCount"]),
                                      f"{KAFKA_VERDICT} {failure.describe()} (from {failure.bootstrap_servers or '?'})",
                                      f"{failure.condition}: the mapping gave up its records after its retries"))
            continue
        if (invocation := async_invocation_failure(message["Body"])) is not None:
            letters.append(DeadLetter(message["MessageId"], None, int(message["Attributes"]["ApproximateReceiveCount"]),
                                      f"{INVOCATION_VERDICT} {invocation.describe()}",
                                      f"{invocation.condition}: Lambda gave up on the invocation after its retries"))
            continue
        try:
            event_id, verdict = from_eventbridge_event(message["Body"]).id, "valid now: failed for a transient reason, safe to redrive"
        except InvalidEventError as error:
            event_id, verdict = error.event_id, f"would fail again: {error.reason}"
        letters.append(DeadLetter(message["MessageId"], event_id, int(message["Attributes"]["ApproximateReceiveCount"]), verdict,
                                  last_reason(message)))
    return letters


def _attributes(message: dict[str, Any]) -> dict[str, str]:
    return {name: value.get("StringValue", "") for name, value in message.get("MessageAttributes", {}).items()}


def last_reason(message: dict[str, Any]) -> str:
    """Why the consumer gave up on a message, from the attributes it dead-lettered it with."""
    attributes = _attributes(message)
    _, status, reason, receives = DEAD_LETTER_ATTRIBUTES
    if reason not in attributes:
        return NO_REASON
    return f"{attributes.get(status, 'failed')}: {attributes[reason]} (after {attributes.get(receives, '?')} receives)"


def _would_fail_again(message: dict[str, Any]) -> bool:
    if kafka_failure(message["Body"]) is not None or async_invocation_failure(message["Body"]) is not None:
        return False  # its records (its request) are checked by the function when they come back
    try:
        from_eventbridge_event(message["Body"])
    except InvalidEventError:
        return True
    return False


def redrive(sqs: Any, dlq_url: str, to: str | RedriveTarget, *, only_valid: bool = True) -> int:
    """Move DLQ messages back to ``to`` (a source queue's URL, or any :class:`RedriveTarget`); return how many
    moved (-1: a move task was started). A message that could not go back stays (the target's ``problems`` say why).

    ``only_valid`` (default) leaves the messages that would fail again where they are. The
    message-move API moves everything between SQS queues, so it is used only with ``only_valid=False``.
    """
    target = SqsRedrive(to) if isinstance(to, str) else to
    if not only_valid and isinstance(target, SqsRedrive):
        source_url = target.url
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
            if (only_valid and _would_fail_again(message)) or not target.send(sqs, message):
                kept.append(message)
                continue
            sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
            moved += 1
        if all(message in kept for message in batch):
            break
    release_messages(sqs, dlq_url, kept)
    return moved
