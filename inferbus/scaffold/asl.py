"""The ASL skeleton of a new workflow: the kit's patterns, one Lambda task where your work goes.

::

    Accept ──> Route ──accepted──> Process ──> Publish (<Result>, id derived from the input's)
                 │ ──duplicate──> Duplicate (Succeed)
                 └──rejected───> Rejected ──┐
    Accept fails  ──> AcceptFailed ─────────┤
    Process / Publish fail ─────────────────┴──> EmitFailure (${FailureType}) ──> Failed (Fail)

Every Lambda task retries Lambda's transient errors and ``TransientError`` (3 attempts, 1 s
doubling, full jitter, at most 10 s) and catches everything else into the failure path, as
``tests/unit/test_statemachines.py`` checks of every ASL file.

Example
-------
>>> machine = workflow_definition("OrderChecked", "Process", sources=0, comment="...")
>>> machine["StartAt"], list(machine["States"])[-1]
('Accept', 'Failed')
"""

from __future__ import annotations

from typing import Any

__all__ = ["TRANSIENT_LAMBDA_ERRORS", "source_placeholder", "workflow_definition"]

TRANSIENT_LAMBDA_ERRORS = [
    "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException", "Lambda.Unknown", "Sandbox.Timedout", "States.Timeout", "TransientError",
]
BACKOFF = {"IntervalSeconds": 1, "BackoffRate": 2, "MaxAttempts": 3, "MaxDelaySeconds": 10, "JitterStrategy": "FULL"}


def _retry(errors: list[str]) -> list[dict[str, Any]]:
    return [{"ErrorEquals": errors, **BACKOFF}]


def _catch(target: str, result_path: str = "$.error") -> list[dict[str, Any]]:
    return [{"ErrorEquals": ["States.ALL"], "ResultPath": result_path, "Next": target}]


def _put_event(detail_type: str, event_id: str, subject: str, correlationid: str, data: Any) -> dict[str, Any]:
    detail: dict[str, Any] = {
        "specversion": "1.0",
        "id.$": event_id,
        "source": "${ResultSource}",
        "type": detail_type,
        "time.$": "$$.State.EnteredTime",
        "subject.$": subject,
        "datacontenttype": "application/json",
        "correlationid.$": correlationid,
    }
    detail.update({"data.$": data} if isinstance(data, str) else {"data": data})
    return {"Entries": [{"EventBusName": "${EventBusName}", "Source": "${ResultSource}", "DetailType": detail_type,
                         "Detail": detail}]}


def source_placeholder(index: int) -> str:
    """The placeholder of the ``index``-th producer a workflow takes input from (``InputSource``, ``InputSource2``)."""
    return "InputSource" if index == 0 else f"InputSource{index + 1}"


def workflow_definition(result_type: str, stem: str, *, sources: int, comment: str) -> dict[str, Any]:
    """The state machine: Accept, route, one Lambda task ``${<stem>FunctionArn}``, publish ``result_type``.

    Parameters
    ----------
    result_type
        The event it publishes; the task returns that event's whole ``data``.
    stem
        The task's placeholder stem (``Process`` -> ``${ProcessFunctionArn}``).
    sources
        How many producers it accepts its input from (a workflow on other components' results):
        Accept takes events only from ``${InputSource}``, ``${InputSource2}``, ...; 0: from any.
    comment
        The machine's ``Comment``.
    """
    accept_payload: dict[str, Any] = {
        "event.$": "$",
        "workflow": "${WorkflowName}",
        "types": ["${TriggerType}"],
        "emits": [result_type],
        "result_source": "${ResultSource}",
        "execution.$": "$$.Execution.Id",
    }
    if sources:
        accept_payload["sources"] = [f"${{{source_placeholder(i)}}}" for i in range(sources)]
    states: dict[str, Any] = {
        "Accept": {
            "Type": "Task",
            "Comment": "Validate the event against its contract and claim its id, so a redelivered event runs once.",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "${AcceptFunctionArn}", "Payload": accept_payload},
            "ResultSelector": {"accepted.$": "$.Payload"},
            "ResultPath": "$",
            "Retry": _retry(TRANSIENT_LAMBDA_ERRORS),
            "Catch": _catch("AcceptFailed"),
            "Next": "Route",
        },
        "Route": {
            "Type": "Choice",
            "Comment": "accepted: do the work; duplicate: another execution owns it; rejected: report why.",
            "Choices": [
                {"Variable": "$.accepted.status", "StringEquals": "accepted", "Next": stem},
                {"Variable": "$.accepted.status", "StringEquals": "duplicate", "Next": "Duplicate"},
            ],
            "Default": "Rejected",
        },
        "Duplicate": {
            "Type": "Succeed",
            "Comment": "Delivered again (at-least-once); the first execution publishes the result.",
        },
        stem: {
            "Type": "Task",
            "Comment": f"Your work: the accepted event's data in, the {result_type} event's data out.",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {
                "FunctionName": f"${{{stem}FunctionArn}}",
                "Payload": {"input_id.$": "$.accepted.event.id", "data.$": "$.accepted.event.data"},
            },
            "ResultSelector": {"data.$": "$.Payload"},
            "ResultPath": "$.processed",
            "Retry": _retry(TRANSIENT_LAMBDA_ERRORS),
            "Catch": _catch("EmitFailure"),
            "Next": "Publish",
        },
        "Publish": {
            "Type": "Task",
            "Comment": f"One {result_type} event, its id derived from the input's.",
            "Resource": "arn:aws:states:::events:putEvents",
            "Parameters": _put_event(result_type, f"$.accepted.result_ids.{result_type}", "$.accepted.event.id",
                                     "$.accepted.event.correlationid", "$.processed.data"),
            "ResultPath": None,
            "Retry": _retry(["States.TaskFailed", "States.Timeout"]),
            "Catch": _catch("EmitFailure"),
            "End": True,
        },
        "Rejected": {
            "Type": "Pass",
            "Comment": "The event broke its contract (or reused an id): the failure event says why.",
            "Parameters": {"accepted.$": "$.accepted",
                           "error": {"Error.$": "$.accepted.error", "Cause.$": "$.accepted.reason"}},
            "Next": "EmitFailure",
        },
        "AcceptFailed": {
            "Type": "Pass",
            "Comment": "Accept itself failed after its retries: ids come from the execution, not the input.",
            "Parameters": {
                "accepted": {"failure": {"id.$": "States.UUID()", "input_id": None,
                                         "correlationid.$": "$$.Execution.Name", "subject": None}},
                "error.$": "$.error",
            },
            "Next": "EmitFailure",
        },
        "EmitFailure": {
            "Type": "Task",
            "Comment": "Every failure ends here: one ${FailureType} event with the error and the correlation id.",
            "Resource": "arn:aws:states:::events:putEvents",
            "Parameters": _put_event("${FailureType}", "$.accepted.failure.id", "$.accepted.failure.subject",
                                     "$.accepted.failure.correlationid", {
                                         "workflow": "${WorkflowName}",
                                         "input_id.$": "$.accepted.failure.input_id",
                                         "error.$": "$.error.Error",
                                         "cause.$": "$.error.Cause",
                                         "execution.$": "$$.Execution.Id",
                                     }),
            "ResultPath": None,
            "Retry": _retry(["States.TaskFailed", "States.Timeout"]),
            "Catch": _catch("Failed", "$.emit_error"),
            "Next": "Failed",
        },
        "Failed": {
            "Type": "Fail",
            "Error": "WorkflowFailed",
            "Cause": "See the ${FailureType} event on the bus for the error and its input.",
        },
    }
    return {"Comment": comment, "StartAt": "Accept", "States": states}
