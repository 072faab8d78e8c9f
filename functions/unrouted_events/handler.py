"""Every event on the bus, from the catch-all rule's queue: one that no rule takes is kept with its reason.

See :mod:`inferbus_lambda.unrouted`. A record whose rejection cannot be sent is reported failed,
retried, and at worst dead-lettered; one that is a result or that a rule takes is done.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from inferbus_lambda.environment import UnroutedEnvironment
from inferbus_lambda.handlers import FunctionRuntime, aws_client
from inferbus_lambda.metric_names import (BATCH_SIZE, EVENTS_ROUTED, EVENTS_UNROUTED, PROCESSING_MS, RECORDS_FAILED,
                                          RESULT_EVENTS)
from inferbus_lambda.rejections import Rejection, send_rejections
from inferbus_lambda.unrouted import BusRules

VERDICT_METRICS = {"result": RESULT_EVENTS, "routed": EVENTS_ROUTED, "unrouted": EVENTS_UNROUTED}

environment = UnroutedEnvironment.from_environ()
runtime = FunctionRuntime(environment, load=lambda info: info)  # it loads no model

# Made after the environment is known good: a broken deployment fails fast.
EVENTS = aws_client("events")
SQS = aws_client("sqs")
RULES = BusRules(EVENTS, bus=environment.EVENT_BUS_NAME, exclude=[environment.CATCH_ALL_RULE_NAME],
                 result_sources=environment.RESULT_SOURCES)


def check_events(event: dict[str, Any], context: Any) -> dict[str, Any]:
    started = time.perf_counter()
    rejections, counts = [], dict.fromkeys(VERDICT_METRICS, 0)
    verdicts = RULES.verdicts([record["body"] for record in event["Records"]])  # the rules as they are now
    for record, verdict in zip(event["Records"], verdicts, strict=True):
        counts[verdict.status] += 1
        if verdict.status == "unrouted":
            assert verdict.error is not None and verdict.reason is not None
            rejections.append(Rejection(record["messageId"], verdict.error, verdict.reason, verdict.event_id, record["body"]))
            runtime.logger.warning("unrouted event", extra={"event_id": verdict.event_id, "error": verdict.error,
                                                            "reason": verdict.reason})
    unsent = send_rejections(SQS, environment.INVALID_EVENTS_QUEUE_URL, environment.REJECTED_BY, rejections) if rejections else set()
    for status, count in counts.items():
        runtime.metrics.add_metric(name=VERDICT_METRICS[status], unit=MetricUnit.Count, value=count)
    runtime.metrics.add_metric(name=BATCH_SIZE, unit=MetricUnit.Count, value=len(event["Records"]))
    runtime.metrics.add_metric(name=RECORDS_FAILED, unit=MetricUnit.Count, value=len(unsent))
    runtime.metrics.add_metric(name=PROCESSING_MS, unit=MetricUnit.Milliseconds, value=(time.perf_counter() - started) * 1000)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in sorted(unsent)]}


lambda_handler = runtime.wrap(check_events)
