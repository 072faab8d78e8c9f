"""Where a consumer's records come from: the :class:`RecordSource` interface and the sources.

=========================  ====================================================================
name (``RECORD_SOURCE``)   implementation
=========================  ====================================================================
``sqs`` (default)          :class:`SqsRecordSource`: the consumer's queue, its DLQ
``kafka``                  :class:`KafkaRecordSource`: an MSK or self-managed Kafka topic
``amazon-mq``              :class:`AmazonMqRecordSource`: a RabbitMQ queue on Amazon MQ; the
                           consumer's SQS DLQ
=========================  ====================================================================

A function gets its source from its environment (:func:`record_source`); a new channel is one
module with a :class:`RecordSource` subclass and one line in :data:`RECORD_SOURCES`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..environment import ConsumerEnvironment
from ..errors import registered
from .amazon_mq import AmazonMqRecordSource
from .base import RecordSource, SourceRecord
from .dead_letters import SqsDeadLetteringSource
from .kafka import KafkaRecordSource
from .sqs import SqsRecordSource

__all__ = ["RECORD_SOURCES", "AmazonMqRecordSource", "KafkaRecordSource", "RecordSource", "SourceRecord", "SqsRecordSource",
           "record_source"]


def _dead_lettering(source: type[SqsDeadLetteringSource]) -> Callable[[ConsumerEnvironment, Callable[[str], Any]], RecordSource]:
    """How to make ``source``, which sends a record failing on its last attempt to the consumer's DLQ itself."""
    def make(environment: ConsumerEnvironment, clients: Callable[[str], Any]) -> RecordSource:
        return source(consumer=environment.RESULT_SOURCE, dead_letter_queue_url=environment.DEAD_LETTER_QUEUE_URL,
                      max_receive_count=environment.MAX_RECEIVE_COUNT, sqs=lambda: clients("sqs"))
    return make


def _kafka(environment: ConsumerEnvironment, clients: Callable[[str], Any]) -> RecordSource:
    return KafkaRecordSource()  # the mapping's on-failure destination takes what it gives up on


# RECORD_SOURCE name -> how to make the source from the consumer's environment and a client getter.
RECORD_SOURCES: dict[str, Callable[[ConsumerEnvironment, Callable[[str], Any]], RecordSource]] = {
    SqsRecordSource.name: _dead_lettering(SqsRecordSource),
    KafkaRecordSource.name: _kafka,
    AmazonMqRecordSource.name: _dead_lettering(AmazonMqRecordSource),
}


def record_source(environment: ConsumerEnvironment, clients: Callable[[str], Any]) -> RecordSource:
    """The source ``environment.RECORD_SOURCE`` names.

    Parameters
    ----------
    environment
        The consumer's validated environment.
    clients
        ``clients(service)`` -> the function's boto3 client for ``service`` (made on first use).

    Raises
    ------
    ConfigurationError
        When no source has that name.
    """
    make = registered(RECORD_SOURCES, "RECORD_SOURCE", environment.RECORD_SOURCE,
                      service=environment.POWERTOOLS_SERVICE_NAME, what="record source")
    return make(environment, clients)
