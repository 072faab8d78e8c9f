"""The ASL a new workflow's file holds: its own states only, one Lambda task per step, then publish.

The kit adds Accept, Route, Duplicate, Rejected, AcceptFailed, EmitFailure and Failed around
them at synth (:mod:`inferbus.model.workflow_protocol`)::

    (kit: Accept -> Route -accepted->) Step1 -> Step2 -> ... -> Publish (<Result>, id derived from the input's)
    any step or Publish fails ──> EmitFailure (kit: one ${FailureType} event) ──> Failed

Each step gets ``{"input_id", "data"}``: the accepted event's data for the first, the previous
step's answer after that; the last step's answer is the published event's ``data``. Every step
retries Lambda's transient errors and ``TransientError`` (3 attempts, 1 s doubling, full
jitter, at most 10 s) and catches everything else into the kit's failure path, as
``tests/unit/test_statemachines.py`` checks of every workflow.

Example
-------
>>> own = workflow_definition("OrderChecked", ["Validate", "Score"], comment="...")
>>> own["StartAt"], list(own["States"])
('Validate', ['Validate', 'Score', 'Publish'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inferbus.model.workflow_protocol import BACKOFF, EMIT_FAILURE, ERROR_PATH, TRANSIENT_LAMBDA_ERRORS

__all__ = ["PUBLISH", "workflow_definition"]

PUBLISH = "Publish"
# Where each step's answer goes: the next step's input, and at the end the published data.
ANSWER = "$.processed"


def _retry(errors: Sequence[str]) -> list[dict[str, Any]]:
    return [{"ErrorEquals": list(errors), **BACKOFF}]


def _catch() -> list[dict[str, Any]]:
    return [{"ErrorEquals": ["States.ALL"], "ResultPath": ERROR_PATH, "Next": EMIT_FAILURE}]


def _step(stem: str, comment: str, data: str, next_state: str) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Comment": comment,
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": f"${{{stem}FunctionArn}}",
            "Payload": {"input_id.$": "$.accepted.event.id", "data.$": data},
        },
        "ResultSelector": {"data.$": "$.Payload"},
        "ResultPath": ANSWER,
        "Retry": _retry(TRANSIENT_LAMBDA_ERRORS),
        "Catch": _catch(),
        "Next": next_state,
    }


def _publish(result_type: str) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Comment": f"One {result_type} event, its id derived from the input's.",
        "Resource": "arn:aws:states:::events:putEvents",
        "Parameters": {
            "Entries": [
                {
                    "EventBusName": "${EventBusName}",
                    "Source": "${ResultSource}",
                    "DetailType": result_type,
                    "Detail": {
                        "specversion": "1.0",
                        "id.$": f"$.accepted.result_ids.{result_type}",
                        "source": "${ResultSource}",
                        "type": result_type,
                        "time.$": "$$.State.EnteredTime",
                        "subject.$": "$.accepted.event.id",
                        "datacontenttype": "application/json",
                        "correlationid.$": "$.accepted.event.correlationid",
                        "data.$": f"{ANSWER}.data",
                    },
                },
            ],
        },
        "ResultPath": None,
        "Retry": _retry(["States.TaskFailed", "States.Timeout"]),
        "Catch": _catch(),
        "End": True,
    }


def workflow_definition(result_type: str, stems: Sequence[str], *, comment: str) -> dict[str, Any]:
    """A workflow's own states: one Lambda task ``${<stem>FunctionArn}`` per step, in order, then publish.

    Parameters
    ----------
    result_type
        The event it publishes; the last step returns that event's whole ``data``.
    stems
        The steps' placeholder stems, in order (``Process`` -> ``${ProcessFunctionArn}``); at least one.
    comment
        The machine's ``Comment``.
    """
    if not stems:
        raise ValueError("a workflow has at least one step")
    states: dict[str, Any] = {}
    for index, stem in enumerate(stems):
        first, last = index == 0, index == len(stems) - 1
        data = "$.accepted.event.data" if first else f"{ANSWER}.data"
        what = ("the accepted event's data" if first else f"{stems[index - 1]}'s answer") + " in, " + (
            f"the {result_type} event's data out" if last else f"what {stems[index + 1]} needs out")
        states[stem] = _step(stem, f"Your work: {what}.", data, PUBLISH if last else stems[index + 1])
    states[PUBLISH] = _publish(result_type)
    return {"Comment": comment, "StartAt": stems[0], "States": states}
