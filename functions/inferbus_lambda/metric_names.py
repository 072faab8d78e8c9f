"""The EMF metrics inferbus's functions emit, named once: the handlers emit them, the stack's alarms
and dashboard read them, the demo sums them.

Every metric carries the Powertools ``service`` dimension: the consumer's name, or
``<workflow>-<step>`` for a workflow step (the ``Accept`` step adds a ``workflow`` dimension).

==========================  =========================================================================
metric                      what
==========================  =========================================================================
``EventLatencyMs``          now minus the event's ``time``, when a consumer or a workflow stage takes it
``ProcessingMs``            a consumer's whole batch, or one workflow step, from start to answer
``InferenceMs``             the model call alone
``BatchSize``               records in a consumer's batch
``RecordsPublished``        records scored whose result is on the bus (the consumption rate)
``RecordsFailed``           records reported as batch item failures (retried, then dead-lettered)
``RecordsRejected``         records that break their contract, kept in the invalid-events queue
``RecordsDeadLettered``     records that failed on their last receive, sent to the DLQ with the reason
``DuplicatesSkipped``       records an earlier delivery already processed
``RecordsOverRate``         records the consumer's token bucket sent back with a backoff (``max_events_per_second``)
``RecordsOverRateLetThrough``  records over the rate processed anyway: on their last attempt (never to the DLQ)
``PutEventsFailedEntries``  entries PutEvents still refused after the retries
``ClaimsNotCompleted``      published records whose claim DynamoDB would not complete (may repeat once)
``EventsUnrouted``          the unrouted-events check: events no rule takes, kept in the invalid-events
                            queue with the reason (``EventsRouted``: taken by a rule; ``ResultEvents``:
                            a producer's result)
``ExecutionsReported``      a workflow's executions that ended outside its states (``States.Runtime``, a
                            timeout, a stop): failure event published, status change kept
==========================  =========================================================================
"""

from datetime import UTC, datetime

EVENT_LATENCY_MS = "EventLatencyMs"
PROCESSING_MS = "ProcessingMs"
INFERENCE_MS = "InferenceMs"
BATCH_SIZE = "BatchSize"
RECORDS_PUBLISHED = "RecordsPublished"
RECORDS_FAILED = "RecordsFailed"
RECORDS_REJECTED = "RecordsRejected"
RECORDS_DEAD_LETTERED = "RecordsDeadLettered"
RECORDS_OVER_RATE = "RecordsOverRate"
RECORDS_LET_THROUGH = "RecordsOverRateLetThrough"
DUPLICATES_SKIPPED = "DuplicatesSkipped"
PUT_EVENTS_FAILED_ENTRIES = "PutEventsFailedEntries"
CLAIMS_NOT_COMPLETED = "ClaimsNotCompleted"
EXECUTIONS_REPORTED = "ExecutionsReported"
# A workflow step's input may carry the event's time under this key (the ASL passes
# "$.accepted.event.time"); the kit reads it for EventLatencyMs and hands the rest to the step.
EVENT_TIME_KEY = "event_time"
# The HTTP ingest endpoint: events accepted onto the bus, and refused (4xx).
EVENTS_INGESTED = "EventsIngested"
EVENTS_REFUSED = "EventsRefused"
# The unrouted-events check's verdict on each event of the bus (``inferbus_lambda.unrouted``).
EVENTS_UNROUTED = "EventsUnrouted"
EVENTS_ROUTED = "EventsRouted"
RESULT_EVENTS = "ResultEvents"


def age_ms(moment: datetime) -> float:
    """``EventLatencyMs`` of an event made at ``moment`` (timezone-aware): now minus it, never negative (clocks differ)."""
    return max(0.0, (datetime.now(UTC) - moment).total_seconds() * 1000)
