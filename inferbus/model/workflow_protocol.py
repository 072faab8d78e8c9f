"""The workflow protocol: the states the kit adds around a workflow's own, at synth.

A workflow's ASL file (``statemachines/<name>.asl.json``) holds only its own work. :func:`wrap`
puts the kit's states around it::

    Accept ──> Route ──accepted──> <your StartAt> ... <your states> ... (End: true)
                 │ ──duplicate──> Duplicate (Succeed)
                 └──rejected───> Rejected ─────┐
    Accept fails ──> AcceptFailed ─────────────┤
    any of your states ──(Catch / Next)────────┴──> EmitFailure (one ${FailureType} event) ──> Failed

The contract with your states
-----------------------------
- They start with ``$.accepted`` in their input: the accepted CloudEvent (``$.accepted.event``),
  the ids of the events you emit (``$.accepted.result_ids.<Type>``) and the ids your failure
  event will use (``$.accepted.failure``). Keep ``$.accepted`` (write results under a
  ``ResultPath`` of your own) so the failure path can read it.
- A failure goes to :data:`EMIT_FAILURE`: a ``Catch`` with ``"ResultPath": "$.error"`` and
  ``"Next": "EmitFailure"``, or a ``Pass`` state that sets ``error`` to ``{"Error": ..., "Cause": ...}``
  beside ``accepted``. ``EmitFailure`` publishes ``$.error.Error`` and ``$.error.Cause``.
- They end in their own terminal states (``"End": true`` after publishing a result, a
  ``Succeed``); they may not name a kit state other than ``EmitFailure``.

The kit's states use the placeholders in :data:`KIT_PLACEHOLDERS`, which the stack fills from the
declaration; the ``emits`` and ``sources`` of the Accept request are written by :func:`wrap`.

Example
-------
>>> own = {"StartAt": "Publish", "States": {"Publish": {"Type": "Succeed"}}}
>>> machine = wrap(own, emits=["OrderChecked"])
>>> list(machine["States"])
['Accept', 'Route', 'Duplicate', 'Publish', 'Rejected', 'AcceptFailed', 'EmitFailure', 'Failed']
>>> machine["States"]["Route"]["Choices"][0]["Next"]
'Publish'
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from inferbus_lambda.errors import TransientError
from inferbus_lambda.execution_failures import PROTOCOL_ERROR

__all__ = [
    "ACCEPT", "ACCEPT_FAILED", "BACKOFF", "DUPLICATE", "EMIT_FAILURE", "ERROR_PATH", "FAILED", "KIT_PLACEHOLDERS",
    "KIT_STATES", "REJECTED", "ROUTE", "TRANSIENT_LAMBDA_ERRORS", "WorkflowDefinitionError", "parse", "wrap",
]

ACCEPT, ROUTE, DUPLICATE = "Accept", "Route", "Duplicate"
REJECTED, ACCEPT_FAILED, EMIT_FAILURE, FAILED = "Rejected", "AcceptFailed", "EmitFailure", "Failed"
KIT_STATES = (ACCEPT, ROUTE, DUPLICATE, REJECTED, ACCEPT_FAILED, EMIT_FAILURE, FAILED)
# Where a catcher that leads to EmitFailure puts the error: EmitFailure reads $.error.Error and $.error.Cause.
ERROR_PATH = "$.error"
# What the stack fills in the kit's states (besides your own placeholders).
KIT_PLACEHOLDERS = frozenset({"AcceptFunctionArn", "WorkflowName", "TriggerType", "ResultSource", "EventBusName",
                              "FailureType"})
# Errors a Lambda task retries: Lambda's service errors, timeouts, and the handlers' own TransientError.
TRANSIENT_LAMBDA_ERRORS = (
    "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException", "Lambda.Unknown", "Sandbox.Timedout", "States.Timeout", TransientError.__name__,
)
BACKOFF = {"IntervalSeconds": 1, "BackoffRate": 2, "MaxAttempts": 3, "MaxDelaySeconds": 10, "JitterStrategy": "FULL"}
# The top-level fields a workflow's own definition may carry (the kit's states are JSONPath).
OWN_FIELDS = ("Comment", "StartAt", "States", "TimeoutSeconds", "Version")


class WorkflowDefinitionError(ValueError):
    """A workflow's own definition the kit cannot wrap; the message names the file and the state."""


def _accept_and_route(start_at: str, emits: Sequence[str], sources: Sequence[str]) -> dict[str, Any]:
    """Accept, Route, Duplicate: before your states."""
    payload: dict[str, Any] = {
        "event.$": "$",
        "workflow": "${WorkflowName}",
        "types": ["${TriggerType}"],
        "emits": list(emits),
        "result_source": "${ResultSource}",
        "execution.$": "$$.Execution.Id",
    }
    if sources:
        payload["sources"] = list(sources)
    return {
        ACCEPT: {
            "Type": "Task",
            "Comment": "Validate the event against its contract and claim its id, so a redelivered event runs once.",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "${AcceptFunctionArn}", "Payload": payload},
            "ResultSelector": {"accepted.$": "$.Payload"},
            "ResultPath": "$",
            "Retry": [{"ErrorEquals": list(TRANSIENT_LAMBDA_ERRORS), **BACKOFF}],
            "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": ERROR_PATH, "Next": ACCEPT_FAILED}],
            "Next": ROUTE,
        },
        ROUTE: {
            "Type": "Choice",
            "Comment": "accepted: do the work; duplicate: another execution owns it; rejected: report why.",
            "Choices": [
                {"Variable": "$.accepted.status", "StringEquals": "accepted", "Next": start_at},
                {"Variable": "$.accepted.status", "StringEquals": "duplicate", "Next": DUPLICATE},
            ],
            "Default": REJECTED,
        },
        DUPLICATE: {
            "Type": "Succeed",
            "Comment": "Delivered again (at-least-once); the first execution publishes the result.",
        },
    }


FAILURE_PATH: dict[str, Any] = {  # after your states: every way an execution fails
    REJECTED: {
        "Type": "Pass",
        "Comment": "The event broke its contract (or reused an id): the failure event says why.",
        "Parameters": {
            "accepted.$": "$.accepted",
            "error": {"Error.$": "$.accepted.error", "Cause.$": "$.accepted.reason"},
        },
        "Next": EMIT_FAILURE,
    },
    ACCEPT_FAILED: {
        "Type": "Pass",
        "Comment": "Accept itself failed after its retries: ids come from the execution, not the input.",
        "Parameters": {
            "accepted": {
                "failure": {"id.$": "States.UUID()", "input_id": None, "correlationid.$": "$$.Execution.Name",
                            "subject": None},
            },
            "error.$": ERROR_PATH,
        },
        "Next": EMIT_FAILURE,
    },
    EMIT_FAILURE: {
        "Type": "Task",
        "Comment": "Every failure ends here: one ${FailureType} event with the error and the correlation id.",
        "Resource": "arn:aws:states:::events:putEvents",
        "Parameters": {
            "Entries": [
                {
                    "EventBusName": "${EventBusName}",
                    "Source": "${ResultSource}",
                    "DetailType": "${FailureType}",
                    "Detail": {
                        "specversion": "1.0",
                        "id.$": "$.accepted.failure.id",
                        "source": "${ResultSource}",
                        "type": "${FailureType}",
                        "time.$": "$$.State.EnteredTime",
                        "subject.$": "$.accepted.failure.subject",
                        "datacontenttype": "application/json",
                        "correlationid.$": "$.accepted.failure.correlationid",
                        "data": {
                            "workflow": "${WorkflowName}",
                            "input_id.$": "$.accepted.failure.input_id",
                            "error.$": "$.error.Error",
                            "cause.$": "$.error.Cause",
                            "execution.$": "$$.Execution.Id",
                        },
                    },
                },
            ],
        },
        "ResultPath": None,
        "Retry": [{"ErrorEquals": ["States.TaskFailed", "States.Timeout"], **BACKOFF}],
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.emit_error", "Next": FAILED}],
        "Next": FAILED,
    },
    FAILED: {
        "Type": "Fail",
        "Error": PROTOCOL_ERROR,  # the net (execution_failures) knows by it that EmitFailure ran
        "Cause": "See the ${FailureType} event on the bus for the error and its input.",
    },
}


def parse(text: str, origin: str) -> dict[str, Any]:
    """A workflow's own definition from its JSON text.

    Parameters
    ----------
    text
        The ASL file's content.
    origin
        What the errors call it (its file).

    Returns
    -------
    dict
        The definition, for :func:`wrap`.

    Raises
    ------
    WorkflowDefinitionError
        ``origin`` (the file) and where the JSON breaks.
    """
    try:
        definition = json.loads(text)
    except json.JSONDecodeError as error:
        raise WorkflowDefinitionError(f"{origin}: not JSON ({error})") from None
    if not isinstance(definition, dict):
        raise WorkflowDefinitionError(f"{origin}: a state machine definition is a JSON object")
    return definition


def wrap(definition: Mapping[str, Any], *, emits: Sequence[str], sources: Sequence[str] = (),
         origin: str = "the workflow's definition") -> dict[str, Any]:
    """The whole state machine: the kit's states around the workflow's own.

    Parameters
    ----------
    definition
        The workflow's own states: ``StartAt``, ``States`` and optionally ``Comment``,
        ``TimeoutSeconds``, ``Version``. See the module's docstring for the contract.
    emits
        The types of the events it publishes (the declaration's ``produces``): Accept derives
        their ids, ``$.accepted.result_ids.<Type>``.
    sources
        The only ``source`` values Accept takes its input from (the trigger's producers,
        resolved); empty: any.
    origin
        What the errors call the definition (its file).

    Returns
    -------
    dict
        The ASL, ``StartAt: Accept``, that ``json.dumps`` writes; the kit's placeholders
        (:data:`KIT_PLACEHOLDERS`) and the workflow's own are left for the stack to fill.

    Raises
    ------
    WorkflowDefinitionError
        Naming ``origin`` and the state: a missing ``StartAt``, a name a kit state has, a
        transition to a state that does not exist, a catcher to ``EmitFailure`` that does not
        put its error at ``$.error``, a state nothing reaches.
    """
    _check(definition, origin)
    own = {key: definition[key] for key in ("Comment",) if key in definition}
    machine: dict[str, Any] = {**own, "StartAt": ACCEPT}
    machine.update({key: definition[key] for key in ("TimeoutSeconds", "Version") if key in definition})
    machine["States"] = {
        **_accept_and_route(definition["StartAt"], emits, sources),
        **copy.deepcopy(dict(definition["States"])),  # a copy: the caller's definition stays as it was
        **copy.deepcopy(FAILURE_PATH),
    }
    return machine


# -- checks: what the kit needs of the workflow's own states ------------------------------------------


def _transitions(state: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any] | None]]:
    """Each state ``state`` may go to, with the catcher that leads there (None for Next/Default/Choices)."""
    for key in ("Next", "Default"):
        if key in state:
            yield state[key], None
    for choice in state.get("Choices", []):
        if "Next" in choice:
            yield choice["Next"], None
    for catcher in state.get("Catch", []):
        yield catcher.get("Next"), catcher


def _nested(state: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The Parallel branches and Map processors inside ``state``: each has its own states."""
    yield from state.get("Branches", [])
    processor = state.get("ItemProcessor") or state.get("Iterator")
    if processor:
        yield processor


def _check(definition: Mapping[str, Any], origin: str) -> None:
    if not isinstance(definition, Mapping):
        raise WorkflowDefinitionError(f"{origin}: a state machine definition is a JSON object")
    extra = sorted(set(definition) - set(OWN_FIELDS))
    if extra:
        raise WorkflowDefinitionError(f"{origin}: unexpected top-level fields {extra}; a workflow's own definition "
                                      f"has only {list(OWN_FIELDS)} (the kit writes the rest)")
    if definition.get("StartAt") == ACCEPT:
        raise WorkflowDefinitionError(f"{origin}: StartAt is {ACCEPT!r}, a kit state: this file still holds the kit's "
                                      f"states ({', '.join(KIT_STATES)}); keep only your own, the kit adds them at synth")
    _check_scope(definition, origin, "", top=True)


def _check_scope(scope: Mapping[str, Any], origin: str, where: str, *, top: bool) -> None:
    start_at, states = scope.get("StartAt"), scope.get("States")
    if not isinstance(start_at, str) or not start_at:
        raise WorkflowDefinitionError(f"{origin}: {where}no StartAt (the name of your first state)")
    if not isinstance(states, Mapping) or not states:
        raise WorkflowDefinitionError(f"{origin}: {where}no States (an object of your states by name)")
    if start_at not in states:
        raise WorkflowDefinitionError(f"{origin}: {where}StartAt {start_at!r} is not one of its States {sorted(states)}")
    allowed_outside = {EMIT_FAILURE} if top else set()
    for name, state in states.items():
        if name in KIT_STATES:
            raise WorkflowDefinitionError(f"{origin}: {where}state {name!r}: the name of a kit state ({', '.join(KIT_STATES)}); "
                                          "rename it")
        if not isinstance(state, Mapping) or "Type" not in state:
            raise WorkflowDefinitionError(f"{origin}: {where}state {name!r}: a state is an object with a Type")
        for target, catcher in _transitions(state):
            if target in states:
                continue
            if target in allowed_outside:
                if catcher is not None and catcher.get("ResultPath") != ERROR_PATH:
                    raise WorkflowDefinitionError(
                        f"{origin}: {where}state {name!r}: a Catch to {EMIT_FAILURE} needs \"ResultPath\": \"{ERROR_PATH}\" "
                        f"({EMIT_FAILURE} reports $.error.Error and $.error.Cause), not {catcher.get('ResultPath')!r}")
                continue
            if top and target in KIT_STATES:
                why = f"of the kit's states only {EMIT_FAILURE} may be named (every failure goes there)"
            elif not top:
                why = "a Parallel branch or Map processor reaches only its own states: catch on the enclosing state"
            else:
                why = f"no such state (states: {sorted(states)}; failures go to {EMIT_FAILURE})"
            raise WorkflowDefinitionError(f"{origin}: {where}state {name!r}: goes to {target!r}: {why}")
        for index, inner in enumerate(_nested(state)):
            _check_scope(inner, origin, f"state {name!r}, branch {index}: ", top=False)
    _check_reached(start_at, states, origin, where)


def _check_reached(start_at: str, states: Mapping[str, Any], origin: str, where: str) -> None:
    reached, frontier = set(), [start_at]
    while frontier:
        name = frontier.pop()
        if name in reached or name not in states:
            continue
        reached.add(name)
        frontier += [target for target, _ in _transitions(states[name])]
    unreached = sorted(set(states) - reached)
    if unreached:
        raise WorkflowDefinitionError(f"{origin}: {where}no transition reaches {unreached} from StartAt {start_at!r}")
