"""Executions that ended outside the workflow protocol: reported and kept from outside the state machine.

A state machine cannot catch every way it ends. ``States.Runtime`` (an input its interpreter cannot
hold, a path that cannot be applied) and ``States.DataLimitExceeded`` (a state's data past 256 KiB)
are not caught by ``States.ALL``; an execution's own timeout and ``StopExecution`` pass no state at
all. None of them reaches ``EmitFailure``. Step Functions sends a "Step Functions Execution Status
Change" event to the account's default bus when an execution of a Standard workflow ends; a rule per
workflow queues its machine's ``FAILED``, ``TIMED_OUT`` and ``ABORTED`` ones. For an Express workflow
AWS sends none: its execution log's ``ExecutionFailed``, ``ExecutionTimedOut`` and ``ExecutionAborted``
records come through a CloudWatch Logs subscription instead (:func:`from_execution_log`, the same
fields, without the input). :func:`report` turns each into

- the workflow's failure event (the ids the protocol would have given it, when the input's id is
  readable), and
- a kept copy: the status change itself (with the execution's input, as Step Functions includes
  it) and the reason, for the invalid-events queue.

An execution that ended in the protocol's own ``Fail`` state (error :data:`PROTOCOL_ERROR`) has
published its failure event already: :func:`report` returns None for it.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .contracts.core import CAUSE_MAX_CHARS, WorkflowFailure, is_identifier, result_event_id

__all__ = ["ENDED", "LOGGED_ENDS", "PROTOCOL_ERROR", "STATUS_CHANGE", "ExecutionFailure", "from_execution_log",
           "report"]

STATUS_CHANGE = "Step Functions Execution Status Change"
ENDED = ("FAILED", "TIMED_OUT", "ABORTED")  # the statuses in which an execution may have reported nothing
PROTOCOL_ERROR = "WorkflowFailed"  # the protocol's Failed state: EmitFailure ran before it
# What an execution that ended without an error of its own (a timeout, a stop) is reported as.
STATUS_ERRORS = {"TIMED_OUT": "ExecutionTimedOut", "ABORTED": "ExecutionAborted", "FAILED": "ExecutionFailed"}
MAX_ERROR_CHARS = 256  # WorkflowFailure.error is ShortText
# An execution log's record of each way an execution ends outside its states, and the status it stands for.
LOGGED_ENDS = {"ExecutionFailed": "FAILED", "ExecutionTimedOut": "TIMED_OUT", "ExecutionAborted": "ABORTED"}


@dataclass(frozen=True)
class ExecutionFailure:
    """What one execution that ended outside the protocol leaves: its failure event and the reason it is kept."""

    event: dict[str, Any]  # the CloudEvent, as the ``Detail`` of a PutEvents entry
    error: str
    reason: str
    input_id: str | None


def _readable_input(detail: Mapping[str, Any]) -> Any:
    """The execution's input as Step Functions included it (a JSON text), or None when it could not be read."""
    text = detail.get("input")
    if not isinstance(text, str):
        return None  # too large for the event (inputDetails.included false), or not sent
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # nested past what a parser holds: the id is not readable either
        return None


def _input_attribute(value: Any, name: str) -> str | None:
    """``detail.<name>`` of an input that is an EventBridge event, when it is an identifier."""
    detail = value.get("detail") if isinstance(value, Mapping) else None
    found = detail.get(name) if isinstance(detail, Mapping) else None
    return found if is_identifier(found) else None


def report(change: Mapping[str, Any], *, workflow: str, failure_type: str, result_source: str) -> ExecutionFailure | None:
    """The failure event and reason for one status change, or None when there is nothing to report.

    Parameters
    ----------
    change
        The "Step Functions Execution Status Change" event, as EventBridge delivers it.
    workflow, failure_type, result_source
        The workflow's name, its failure event type and its ``source``.

    Returns
    -------
    ExecutionFailure or None
        None for a status that is not an end without a report (``RUNNING``, ``SUCCEEDED``) and for an
        execution that ended in the protocol's ``Failed`` state.

    Raises
    ------
    ValueError
        ``change`` is not a status change of an execution (no ``executionArn``).
    """
    detail = change.get("detail")
    if not isinstance(detail, Mapping) or not isinstance(detail.get("executionArn"), str):
        raise ValueError("not a Step Functions execution status change: no detail.executionArn")
    status, error = detail.get("status"), detail.get("error")
    if status not in ENDED or (status == "FAILED" and error == PROTOCOL_ERROR):
        return None
    execution = detail["executionArn"]
    error = (error if isinstance(error, str) and error else STATUS_ERRORS[status])[:MAX_ERROR_CHARS]
    cause = detail.get("cause") if isinstance(detail.get("cause"), str) and detail.get("cause") else None
    reason = (f"the execution ended {status} outside the workflow's states ({error}"
              + (f": {cause}" if cause else "") + ")")[:CAUSE_MAX_CHARS]
    original = _readable_input(detail)
    input_id = _input_attribute(original, "id")
    # The id the protocol would have given this failure, so a report of the same execution is the same event;
    # without a readable input id, one derived from the execution.
    detail_of_input = original.get("detail") if isinstance(original, Mapping) else None
    source = detail_of_input.get("source") if isinstance(detail_of_input, Mapping) else None
    input_source = source if isinstance(source, str) else None  # as the Accept step reads it (workflow.py)
    failure_id = (result_event_id(input_id, f"{result_source}:failed", input_source=input_source) if input_id
                  else result_event_id(execution, f"{result_source}:failed", input_source=None))
    data = WorkflowFailure(workflow=workflow, input_id=input_id, error=error, cause=reason, execution=execution)
    event = {
        "specversion": "1.0",
        "id": failure_id,
        "source": result_source,
        "type": failure_type,
        "time": change["time"] if isinstance(change.get("time"), str) else datetime.now(UTC).isoformat(),
        "subject": input_id,
        "datacontenttype": "application/json",
        "correlationid": _input_attribute(original, "correlationid") or failure_id,
        "data": data.model_dump(mode="json"),
    }
    return ExecutionFailure(event=event, error=error, reason=reason, input_id=input_id)


def from_execution_log(payload: Mapping[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The status changes an Express workflow's execution log tells of, each with its log record.

    Parameters
    ----------
    payload
        What a CloudWatch Logs subscription invokes a function with: ``{"awslogs": {"data": ...}}``,
        base64 of gzipped JSON whose ``logEvents`` each hold one execution-log record (JSON) as
        ``message``.

    Returns
    -------
    list
        For each record of an execution that ended (``ExecutionFailed``, ``ExecutionTimedOut``,
        ``ExecutionAborted``), a status change as :func:`report` takes it (no input: the log has
        none) and the record's text, to keep. Other records are left out.
    """
    batch = json.loads(gzip.decompress(base64.b64decode(payload["awslogs"]["data"])))
    changes = []
    for log_event in batch.get("logEvents", []):
        record = json.loads(log_event["message"])
        status = LOGGED_ENDS.get(record.get("type"))
        if status is None or not isinstance(record.get("execution_arn"), str):
            continue
        details = record.get("details") if isinstance(record.get("details"), Mapping) else {}
        stamp = record.get("event_timestamp")
        time = (datetime.fromtimestamp(int(stamp) / 1000, UTC).isoformat() if str(stamp).isdigit()
                else datetime.now(UTC).isoformat())
        changes.append(({"time": time, "detail": {"executionArn": record["execution_arn"], "status": status,
                                                  "error": details.get("error"), "cause": details.get("cause")}},
                        log_event["message"]))
    return changes
