"""The record source interface: how a consumer's channel hands it records and takes its answers.

A consumer runs on whatever delivers its events (an SQS queue, a Kafka topic, a RabbitMQ
queue); a :class:`RecordSource` is that channel as the consumer sees it, as Powertools'
``BatchProcessor`` event types are:

=====================  ======================================================================
method                 what a source does
=====================  ======================================================================
``records``            the Lambda event -> the batch's records (:class:`SourceRecord`: id,
                       body, attempt, attributes, ordering group), in delivery order
``batch_response``     the failed records' ids -> what the handler returns, so that only they
                       come back (SQS: ``batchItemFailures``)
``is_last_attempt``    will the channel give up on this record if it fails now?
``dead_letter``        send records failing on their last attempt aside, each with its reason
                       (SQS: to the DLQ with message attributes); the ids not sent
=====================  ======================================================================

Redriving (moving dead-lettered records back to the channel) is an operator's act, not the
function's: ``inferbus redrive`` does it for SQS.

Example
-------
>>> from inferbus_lambda.sources import SqsRecordSource
>>> source = SqsRecordSource(consumer="image-classifier")
>>> [record.record_id for record in source.records({"Records": [{"messageId": "m-1", "body": "{}"}]})]
['m-1']
>>> source.batch_response(["m-1"])
{'batchItemFailures': [{'itemIdentifier': 'm-1'}]}
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..rejections import DeadLetter

__all__ = ["RecordSource", "SourceRecord"]


@dataclass(frozen=True)
class SourceRecord:
    """One record of a batch, whatever the channel.

    Attributes
    ----------
    record_id
        What identifies it in the channel's answer (SQS: the message id).
    body
        The payload: an EventBridge event holding a CloudEvent.
    attempt
        Which delivery this is, from 1 (SQS: ``ApproximateReceiveCount``).
    attributes
        The channel's own attributes, as strings.
    group
        Its ordering key (SQS FIFO: the message group; Kafka: the partition): the records of one
        group are processed in delivery order, and one that fails holds back the group's later
        records until it is retried. ``None``: unordered.
    problem
        Why the channel could not read an event out of it (a Kafka value that is not base64 or
        not UTF-8): the consumer refuses it with this reason, without parsing ``body``.
    """

    record_id: str
    body: str
    attempt: int = 1
    attributes: Mapping[str, str] = field(default_factory=dict)
    group: str | None = None
    problem: str | None = None


class RecordSource(abc.ABC):
    """A channel as a consumer sees it; see the module's table for the methods.

    Attributes
    ----------
    name
        The name in ``RECORD_SOURCE`` that selects it.
    """

    name: ClassVar[str]

    @abc.abstractmethod
    def records(self, event: Mapping[str, Any]) -> list[SourceRecord]:
        """The batch's records, in delivery order."""

    @abc.abstractmethod
    def batch_response(self, failed: Sequence[str]) -> dict[str, Any]:
        """What the handler returns when the records ``failed`` (by id) must come back and the rest not."""

    def is_last_attempt(self, record: SourceRecord) -> bool:
        """Will the channel give up on ``record`` if it fails now? Default: never known (False)."""
        return False

    @property
    def dead_letters(self) -> bool:
        """Whether :meth:`dead_letter` sends anywhere (else the channel's own give-up applies, reason unknown)."""
        return False

    def dead_letter(self, letters: Sequence[DeadLetter]) -> set[str]:
        """Send ``letters`` aside with their reasons; return the ids not sent (they fail, and the
        channel's own give-up takes them). Default: none sent."""
        return {letter.message_id for letter in letters}

    def return_later(self, records: Sequence[SourceRecord], *, delay_s: int) -> None:
        """Ask the channel to deliver ``records`` (which the consumer then reports failed) no sooner than
        ``delay_s`` from now: the backoff of records over the consumer's rate. Default: nothing more than the
        failure (the channel's own retry delay applies)."""
