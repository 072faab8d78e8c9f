"""A workflow's executions that ended outside its states, from its status-change queue: reported and kept.

See :mod:`inferbus_lambda.execution_failures`. Each record is a "Step Functions Execution Status
Change" event; one the protocol already reported is done. Otherwise the workflow's failure event is
published and the status change (the input inside) is kept with the reason in the invalid-events
queue. A record whose event or copy cannot be sent is reported failed, retried, and at worst
dead-lettered: a report is never dropped.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from inferbus_lambda.environment import ExecutionFailuresEnvironment
from inferbus_lambda.execution_failures import report
from inferbus_lambda.handlers import FunctionRuntime, aws_client
from inferbus_lambda.metric_names import EXECUTIONS_REPORTED
from inferbus_lambda.publishing import publish_events
from inferbus_lambda.rejections import Rejection, send_rejections

environment = ExecutionFailuresEnvironment.from_environ()
runtime = FunctionRuntime(environment, load=lambda info: info)  # it loads no model

EVENTS = aws_client("events")
SQS = aws_client("sqs")


def report_executions(event: dict[str, Any], context: Any) -> dict[str, Any]:
    entries, kept, ids, unsent = [], [], [], set()
    for record in event["Records"]:
        try:
            failure = report(json.loads(record["body"]), workflow=environment.WORKFLOW_NAME,
                             failure_type=environment.FAILURE_TYPE, result_source=environment.RESULT_SOURCE)
        except (ValueError, RecursionError) as error:  # not a status change: retried, then kept in the DLQ
            runtime.logger.error("not an execution status change", extra={"reason": str(error)[:200]})
            unsent.add(record["messageId"])
            continue
        if failure is None:
            continue
        ids.append(record["messageId"])
        entries.append({"EventBusName": environment.EVENT_BUS_NAME, "Source": environment.RESULT_SOURCE,
                        "DetailType": environment.FAILURE_TYPE, "Detail": json.dumps(failure.event)})
        kept.append(Rejection(record["messageId"], failure.error, failure.reason, failure.input_id, record["body"]))
        runtime.logger.error("execution ended outside the workflow's states",
                             extra={"workflow": environment.WORKFLOW_NAME, "error": failure.error,
                                    "reason": failure.reason, "event_id": failure.input_id})
    unsent |= {ids[failed.index] for failed in publish_events(EVENTS, entries)} if entries else set()
    unsent |= send_rejections(SQS, environment.INVALID_EVENTS_QUEUE_URL, environment.WORKFLOW_NAME, kept) if kept else set()
    runtime.metrics.add_dimension(name="workflow", value=environment.WORKFLOW_NAME)
    runtime.metrics.add_metric(name=EXECUTIONS_REPORTED, unit=MetricUnit.Count, value=len(entries))
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in sorted(unsent)]}


lambda_handler = runtime.wrap(report_executions)
