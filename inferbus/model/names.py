"""Names derived from a component's name, and the stack outputs tools find resources by.

A component's ``name`` (kebab-case) is the only name a user chooses; everything else derives from it:

======================  ==================================================================
derived from ``name``   e.g. for ``image-classifier``
======================  ==================================================================
construct id            ``ImageClassifier`` (logical ids start with it)
result ``source``       ``inferbus.image-classifier`` (reserved to its role on the bus)
Powertools service      ``image-classifier`` (logs, metrics, traces, idempotency keys)
stack outputs           ``ImageClassifierQueueUrl``, ``ImageClassifierDeadLetterQueueUrl``, ...
======================  ==================================================================
"""

from __future__ import annotations

import re

__all__ = [
    "ACCEPT_STEM", "ALARM_TOPIC_OUTPUT", "DEAD_LETTER_QUEUE_URL", "EVENT_ARCHIVE_OUTPUT", "EVENT_BUS_NAME_OUTPUT",
    "FUNCTION_NAME", "IDEMPOTENCY_TABLE_OUTPUT", "INGEST_FUNCTION_OUTPUT", "INGEST_PRODUCER_POLICY_OUTPUT",
    "INGEST_URL_OUTPUT", "INVALID_EVENTS_OUTPUT", "MAX_NAME", "NAME", "QUEUE_URL", "RESULTS_BUCKET_OUTPUT",
    "RESULT_SOURCE_PREFIX", "SCHEMA_REGISTRY_OUTPUT", "STATE_MACHINE_ARN", "STEM", "UNROUTED_CHECK_ID",
    "UNROUTED_CHECK_NAME", "UNROUTED_CHECK_SOURCE", "kebab", "pascal", "result_source",
]

NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
MAX_NAME = 40
STEM = re.compile(r"^[A-Z][A-Za-z0-9]*$")
RESULT_SOURCE_PREFIX = "inferbus."
SOURCE_TAG = "inferbus-source"
"""The IAM tag a producer role carries: the one reserved ``source`` it may put (the bus policy reads it)."""
# Stack outputs of the shared core.
EVENT_BUS_NAME_OUTPUT = "EventBusName"
INVALID_EVENTS_OUTPUT = "InvalidEventsQueueUrl"
ALARM_TOPIC_OUTPUT = "AlarmTopicArn"
IDEMPOTENCY_TABLE_OUTPUT = "IdempotencyTableName"
EVENT_ARCHIVE_OUTPUT = "EventArchiveName"
INGEST_URL_OUTPUT = "IngestUrl"
INGEST_FUNCTION_OUTPUT = "IngestFunctionName"
INGEST_PRODUCER_POLICY_OUTPUT = "IngestProducerPolicyArn"
SCHEMA_REGISTRY_OUTPUT = "SchemaRegistryName"
RESULTS_BUCKET_OUTPUT = "ResultsArchiveBucketName"
# Stack outputs of a component: <construct id><kind>.
QUEUE_URL = "QueueUrl"
DEAD_LETTER_QUEUE_URL = "DeadLetterQueueUrl"
FUNCTION_NAME = "FunctionName"
STATE_MACHINE_ARN = "StateMachineArn"
# The kit's first step of every workflow: its ASL calls ${AcceptFunctionArn}.
ACCEPT_STEM = "Accept"


def pascal(name: str) -> str:
    """``image-classifier`` -> ``ImageClassifier``.

    >>> pascal("risk-review")
    'RiskReview'
    """
    return "".join(part.capitalize() for part in name.split("-"))


def kebab(stem: str) -> str:
    """``ScoreMlp`` -> ``score-mlp``.

    >>> kebab("ScoreMlp")
    'score-mlp'
    """
    return re.sub(r"(?<!^)(?=[A-Z])", "-", stem).lower()


def result_source(name: str) -> str:
    """The ``source`` a component's results carry on the bus.

    >>> result_source("risk-scorer")
    'inferbus.risk-scorer'
    """
    return RESULT_SOURCE_PREFIX + name


# The shared core's unrouted-events check: a catch-all rule -> queue -> function, outputs <id>QueueUrl, ...
UNROUTED_CHECK_NAME = "unrouted-events"  # its service name
UNROUTED_CHECK_ID = pascal(UNROUTED_CHECK_NAME)
UNROUTED_CHECK_SOURCE = result_source(UNROUTED_CHECK_NAME)  # signs the rejections it keeps
