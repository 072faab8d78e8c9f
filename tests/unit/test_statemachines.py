"""Every workflow as it deploys (its ASL file wrapped in the kit's protocol), statically: no dangling
or dead state, every Task retried and caught, every failure one failure event; and the protocol's
own checks of a workflow's states, each failing with a message that names the file and the state."""

from __future__ import annotations

import doctest
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from inferbus_lambda.errors import TransientError

import inferbus.model.workflow_protocol
from inferbus.model.settings import InferbusSettings
from inferbus.model.workflow_protocol import (
    ACCEPT,
    EMIT_FAILURE,
    KIT_PLACEHOLDERS,
    KIT_STATES,
    ROUTE,
    WorkflowDefinitionError,
    parse,
    wrap,
)
from tests.declared import PIPELINE

STATEMACHINES = Path(__file__).resolve().parents[2] / "statemachines"
# What the stack fills in from each workflow's declaration.
WORKFLOW_NAME, FAILURE_TYPE, TRIGGER_TYPE = "${WorkflowName}", "${FailureType}", "${TriggerType}"
FILES = sorted(STATEMACHINES.glob("*.asl.json"))
WORKFLOWS = {workflow.definition: workflow for workflow in PIPELINE.workflows}
# Errors a Lambda task retries: Lambda's service errors, timeouts, and the handlers' own TransientError.
TRANSIENT_LAMBDA_ERRORS = {
    "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException", "Lambda.Unknown", "Sandbox.Timedout", "States.Timeout", TransientError.__name__,
}
TERMINAL_TYPES = {"Succeed", "Fail"}


def own(workflow) -> dict:
    """The workflow's own states, as its file holds them."""
    return json.loads((STATEMACHINES / workflow.definition).read_text())


def wrapped(workflow) -> dict:
    """The workflow as the stack deploys it: its file in the kit's protocol, Accept's fields from the declaration."""
    sources = PIPELINE.resolve(list(workflow.accepts.sources), InferbusSettings())
    return wrap(parse((STATEMACHINES / workflow.definition).read_text(), workflow.definition),
                emits=workflow.emits, sources=sources, origin=workflow.definition)


def scopes(machine: dict) -> Iterator[dict]:
    """The machine and every Parallel branch / Map iterator in it: each is its own namespace of states."""
    yield machine
    for state in machine["States"].values():
        for branch in state.get("Branches", []):
            yield from scopes(branch)
        processor = state.get("ItemProcessor") or state.get("Iterator")
        if processor:
            yield from scopes(processor)


def transitions(state: dict) -> list[str]:
    targets = [state[key] for key in ("Next", "Default") if key in state]
    targets += [choice["Next"] for choice in state.get("Choices", [])]
    targets += [catcher["Next"] for catcher in state.get("Catch", [])]
    return targets


def tasks(machine: dict) -> Iterator[tuple[str, dict]]:
    for scope in scopes(machine):
        for name, state in scope["States"].items():
            if state["Type"] == "Task":
                yield name, state


def check_transitions(machine: dict, label: str) -> None:
    for scope in scopes(machine):
        states = scope["States"]
        assert scope["StartAt"] in states
        reached, frontier = set(), [scope["StartAt"]]
        while frontier:
            name = frontier.pop()
            if name in reached:
                continue
            reached.add(name)
            for target in transitions(states[name]):
                assert target in states, f"{label}: {name} -> {target}, which does not exist"
                frontier.append(target)
        assert reached == set(states), f"{label}: unreachable {set(states) - reached}"


def check_ways_out(machine: dict, label: str) -> None:
    for scope in scopes(machine):
        states = scope["States"]
        ends = {name for name, state in states.items() if state["Type"] in TERMINAL_TYPES or state.get("End")}
        finishing = set(ends)
        changed = True
        while changed:
            changed = False
            for name, state in states.items():
                if name not in finishing and any(target in finishing for target in transitions(state)):
                    finishing.add(name)
                    changed = True
        assert finishing == set(states), f"{label}: no way out of {set(states) - finishing}"
        for name, state in states.items():
            if state["Type"] not in TERMINAL_TYPES | {"Choice"}:
                assert ("Next" in state) != bool(state.get("End")), f"{label}: {name} needs exactly one of Next/End"


def check_retries_and_catches(machine: dict, label: str) -> None:
    for name, task in tasks(machine):
        assert task.get("Retry"), f"{label}: {name} has no Retry"
        assert any(catcher["ErrorEquals"] == ["States.ALL"] for catcher in task.get("Catch", [])), f"{label}: {name}"
        retrying = [retrier for retrier in task["Retry"] if retrier.get("MaxAttempts", 3) > 0]
        assert retrying, f"{label}: {name} never retries"
        for retrier in retrying:
            assert retrier["BackoffRate"] > 1 and retrier["JitterStrategy"] == "FULL", f"{label}: {name}"
            assert retrier["MaxAttempts"] <= 5 and retrier["MaxDelaySeconds"] >= retrier["IntervalSeconds"]
        if task["Resource"] == "arn:aws:states:::lambda:invoke":
            assert set(task["Retry"][0]["ErrorEquals"]) == TRANSIENT_LAMBDA_ERRORS, f"{label}: {name}"


def check_failure_path(machine: dict, label: str) -> None:
    emit = machine["States"][EMIT_FAILURE]
    (entry,) = emit["Parameters"]["Entries"]
    # the declaration names the failure type and the workflow: the stack fills them in
    assert entry["DetailType"] == entry["Detail"]["type"] == FAILURE_TYPE
    assert entry["Detail"]["data"]["workflow"] == WORKFLOW_NAME
    assert entry["Detail"]["data"]["error.$"] == "$.error.Error"
    assert entry["Detail"]["correlationid.$"] == "$.accepted.failure.correlationid"
    assert machine["States"][emit["Next"]]["Type"] == "Fail"
    # Every catcher outside a Parallel branch leads to EmitFailure, directly or through one Pass state
    # that names the error, except the review's rejection (an outcome, not a failure).
    for name, state in machine["States"].items():
        for catcher in state.get("Catch", []):
            target = catcher["Next"]
            if machine["States"][target]["Type"] == "Pass":
                target = machine["States"][target]["Next"]
            if catcher["ErrorEquals"] == ["ReviewRejected"]:
                continue
            assert target in {EMIT_FAILURE, "Failed"}, f"{label}: {name} catches to {target}"


MACHINES = {workflow.name: wrapped(workflow) for workflow in PIPELINE.workflows}
CHECKS = [check_transitions, check_ways_out, check_retries_and_catches, check_failure_path]


def test_every_file_is_a_declared_workflows_definition_and_every_definition_exists():
    assert {path.name for path in FILES} == {workflow.definition for workflow in PIPELINE.workflows}


@pytest.mark.parametrize("check", CHECKS, ids=[check.__name__ for check in CHECKS])
@pytest.mark.parametrize("workflow", PIPELINE.workflows, ids=[w.definition for w in PIPELINE.workflows])
def test_every_wrapped_workflow_passes_the_static_checks(workflow, check):
    check(MACHINES[workflow.name], workflow.definition)


@pytest.mark.parametrize("workflow", PIPELINE.workflows, ids=[w.name for w in PIPELINE.workflows])
def test_a_file_holds_only_the_workflows_own_states_and_the_kit_adds_its_protocol(workflow):
    mine, machine = own(workflow), MACHINES[workflow.name]
    assert not set(mine["States"]) & set(KIT_STATES)
    assert machine["StartAt"] == ACCEPT and set(machine["States"]) == {*KIT_STATES, *mine["States"]}
    assert {name: machine["States"][name] for name in mine["States"]} == mine["States"]  # yours, unchanged
    # accepted -> your first state; duplicate -> Succeed; anything else -> the failure path
    accepted, duplicate = machine["States"][ROUTE]["Choices"]
    assert (accepted["StringEquals"], accepted["Next"]) == ("accepted", mine["StartAt"])
    assert machine["States"][duplicate["Next"]]["Type"] == "Succeed"
    rejected = machine["States"][machine["States"][ROUTE]["Default"]]
    assert rejected["Next"] == EMIT_FAILURE


@pytest.mark.parametrize("workflow", PIPELINE.workflows, ids=[w.name for w in PIPELINE.workflows])
def test_the_first_step_accepts_the_event_and_every_event_id_comes_from_it(workflow):
    machine = MACHINES[workflow.name]
    accept = machine["States"][machine["StartAt"]]
    assert accept["Parameters"]["FunctionName"] == "${AcceptFunctionArn}"
    payload = accept["Parameters"]["Payload"]
    assert (payload["workflow"], payload["types"]) == (WORKFLOW_NAME, [TRIGGER_TYPE])
    assert set(payload["emits"]) == set(workflow.emits)  # result ids for what the declaration says it emits
    # it takes input only from the producers its accepts filter names (none named: from any)
    assert set(payload.get("sources", ())) == (PIPELINE.resolved_sources(workflow.accepts) or set())
    published = set()
    for _, task in tasks(machine):
        if task["Resource"] == "arn:aws:states:::events:putEvents":
            for entry in task["Parameters"]["Entries"]:
                detail = entry["Detail"]
                assert detail["source"] == entry["Source"] == "${ResultSource}"
                assert detail["type"] == entry["DetailType"]
                if detail["type"] != FAILURE_TYPE:
                    assert detail["id.$"] == f"$.accepted.result_ids.{detail['type']}"
                    published.add(detail["type"])
    assert published == set(workflow.emits)


@pytest.mark.parametrize("workflow", PIPELINE.workflows, ids=[w.name for w in PIPELINE.workflows])
def test_each_task_placeholder_is_a_declared_task(workflow):
    from inferbus.model.asl import placeholders

    stems = {key.removesuffix("FunctionArn") for key in placeholders(json.dumps(MACHINES[workflow.name]))
             if key.endswith("FunctionArn")}
    assert stems == {"Accept", *workflow.tasks}
    # the kit's placeholders are the kit's: a file uses only its own and the shared ones
    assert "AcceptFunctionArn" not in placeholders(json.dumps(own(workflow))) <= KIT_PLACEHOLDERS | {
        f"{stem}FunctionArn" for stem in workflow.tasks} | set(workflow.substitutions) | {
        workflow.review_queue_output} - {None}


# -- what the protocol refuses, naming the file and the state ------------------------------------------

def minimal() -> dict:
    return {"StartAt": "Work", "States": {
        "Work": {"Type": "Pass", "Next": "Publish"},
        "Publish": {"Type": "Pass", "End": True, "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error",
                                                            "Next": EMIT_FAILURE}]},
    }}


def broken(change) -> dict:
    definition = minimal()
    change(definition)
    return definition


@pytest.mark.parametrize(("definition", "says"), [
    (broken(lambda d: d.pop("StartAt")), "x.asl.json: no StartAt"),
    (broken(lambda d: d.update(StartAt="Nowhere")), "x.asl.json: StartAt 'Nowhere' is not one of its States"),
    (broken(lambda d: d.update(StartAt=ACCEPT)), "still holds the kit's states"),
    (broken(lambda d: d["States"].update(Duplicate={"Type": "Succeed"})), "state 'Duplicate': the name of a kit state"),
    (broken(lambda d: d["States"]["Work"].update(Next="Publsh")), "state 'Work': goes to 'Publsh': no such state"),
    (broken(lambda d: d["States"]["Work"].update(Next="Failed")), "state 'Work': goes to 'Failed': of the kit's"),
    (broken(lambda d: d["States"]["Publish"]["Catch"][0].update(ResultPath="$.oops")),
     "state 'Publish': a Catch to EmitFailure needs \"ResultPath\": \"$.error\""),
    (broken(lambda d: d["States"].update(Orphan={"Type": "Succeed"})), "no transition reaches ['Orphan']"),
    (broken(lambda d: d.update(QueryLanguage="JSONata")), "unexpected top-level fields ['QueryLanguage']"),
    (broken(lambda d: d["States"]["Work"].update(Type="Parallel", Branches=[
        {"StartAt": "Inner", "States": {"Inner": {"Type": "Pass", "Next": EMIT_FAILURE}}}])),
     "state 'Work', branch 0: state 'Inner': goes to 'EmitFailure': a Parallel branch"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_a_definition_the_kit_cannot_wrap_is_refused_naming_the_file_and_the_state(definition, says):
    with pytest.raises(WorkflowDefinitionError) as raised:
        wrap(definition, emits=["Done"], origin="x.asl.json")
    assert says in str(raised.value) and str(raised.value).startswith("x.asl.json: ")


def test_a_file_that_is_not_json_is_refused_naming_it():
    with pytest.raises(WorkflowDefinitionError, match=r"^x\.asl\.json: not JSON"):
        parse("{", "x.asl.json")


def test_wrapping_leaves_the_callers_definition_as_it_was():
    definition = minimal()
    machine = wrap(definition, emits=["Done"], sources=["inferbus.someone"])
    assert definition == minimal() and machine["States"]["Work"] is not definition["States"]["Work"]
    assert machine["States"][ACCEPT]["Parameters"]["Payload"]["sources"] == ["inferbus.someone"]
    assert "sources" not in wrap(definition, emits=["Done"])["States"][ACCEPT]["Parameters"]["Payload"]


def test_the_protocols_docstring_example_runs():
    result = doctest.testmod(inferbus.model.workflow_protocol)
    assert result.failed == 0 and result.attempted >= 1
