"""A workflow's executions that ended outside its states: reported and kept.

See :mod:`inferbus_lambda.execution_failures`. Two feeds, one function:

- its status-change queue (Standard workflows): each record a "Step Functions Execution Status
  Change" event; a record whose event or copy cannot be sent is reported failed, retried, and at
  worst dead-lettered;
- its execution log's subscription (Express workflows): what is not sent raises, so Lambda retries
  the invocation and then sends it to the function's on-failure destination (the same DLQ).

One the protocol already reported is done; otherwise the workflow's failure event is published and
what told of it (the status change, input inside, or the log record) is kept with the reason in the
invalid-events queue. A report is never dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from inferbus_lambda.environment import ExecutionFailuresEnvironment
from inferbus_lambda.execution_failures import from_execution_log, report
from inferbus_lambda.handlers import FunctionRuntime, aws_client
from inferbus_lambda.metric_names import EXECUTIONS_REPORTED
from inferbus_lambda.publishing import publish_events
from inferbus_lambda.rejections import Rejection, send_rejections

environment = ExecutionFailuresEnvironment.from_environ()
runtime = FunctionRuntime(environment, load=lambda info: info)  # it loads no model

EVENTS = aws_client("events")
SQS = aws_client("sqs")


class ReportNotSent(RuntimeError):
    """A failure event or its kept copy could not be sent: the invocation is retried."""


def report_and_keep(told: list[tuple[str, Mapping[str, Any], str]]) -> set[str]:
    """Publish the failure event and keep the copy of each (id, status change, what to keep); the ids not done."""
    entries, kept, ids, refused = [], [], [], set()
    for told_id, change, body in told:
        try:
            failure = report(change, workflow=environment.WORKFLOW_NAME, failure_type=environment.FAILURE_TYPE,
                             result_source=environment.RESULT_SOURCE)
        except ValueError as error:  # not a status change: retried, then kept in the DLQ
            runtime.logger.error("not an execution status change", extra={"reason": str(error)[:200]})
            refused.add(told_id)
            continue
        if failure is None:
            continue
        ids.append(told_id)
        entries.append({"EventBusName": environment.EVENT_BUS_NAME, "Source": environment.RESULT_SOURCE,
                        "DetailType": environment.FAILURE_TYPE, "Detail": json.dumps(failure.event)})
        kept.append(Rejection(told_id, failure.error, failure.reason, failure.input_id, body))
        runtime.logger.error("execution ended outside the workflow's states",
                             extra={"workflow": environment.WORKFLOW_NAME, "error": failure.error,
                                    "reason": failure.reason, "event_id": failure.input_id})
    unsent = refused | ({ids[failed.index] for failed in publish_events(EVENTS, entries)} if entries else set())
    unsent |= send_rejections(SQS, environment.INVALID_EVENTS_QUEUE_URL, environment.WORKFLOW_NAME, kept) if kept else set()
    runtime.metrics.add_dimension(name="workflow", value=environment.WORKFLOW_NAME)
    runtime.metrics.add_metric(name=EXECUTIONS_REPORTED, unit=MetricUnit.Count, value=len(entries) - len(unsent - refused))
    return unsent


def report_executions(event: dict[str, Any], context: Any) -> dict[str, Any] | None:
    if "awslogs" in event:
        told = [(f"log-{index}", change, record) for index, (change, record) in enumerate(from_execution_log(event))]
        unsent = report_and_keep(told)
        if unsent:
            raise ReportNotSent(f"{len(unsent)} of {len(told)} execution reports not sent: retried")
        return None
    told, unreadable = [], set()
    for record in event["Records"]:
        try:
            told.append((record["messageId"], json.loads(record["body"]), record["body"]))
        except (ValueError, RecursionError) as error:  # not a status change: retried, then kept in the DLQ
            runtime.logger.error("not an execution status change", extra={"reason": str(error)[:200]})
            unreadable.add(record["messageId"])
    unsent = unreadable | report_and_keep(told)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in sorted(unsent)]}


lambda_handler = runtime.wrap(report_executions)
