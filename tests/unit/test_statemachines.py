"""Every ASL file, statically: valid JSON, no dangling or dead state, every Task retried and caught."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from inferbus_lambda.errors import TransientError

from tests.declared import PIPELINE

STATEMACHINES = Path(__file__).resolve().parents[2] / "statemachines"
# What the stack fills in from each workflow's declaration.
WORKFLOW_NAME, FAILURE_TYPE, TRIGGER_TYPE = "${WorkflowName}", "${FailureType}", "${TriggerType}"
FILES = sorted(STATEMACHINES.glob("*.asl.json"))
# Errors a Lambda task retries: Lambda's service errors, timeouts, and the handlers' own TransientError.
TRANSIENT_LAMBDA_ERRORS = {
    "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException", "Lambda.Unknown", "Sandbox.Timedout", "States.Timeout", TransientError.__name__,
}
TERMINAL_TYPES = {"Succeed", "Fail"}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


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


def test_every_file_is_a_declared_workflows_definition_and_every_definition_exists():
    assert {path.name for path in FILES} == {workflow.definition for workflow in PIPELINE.workflows}


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_every_transition_targets_a_state_and_every_state_is_reached(path):
    for scope in scopes(load(path)):
        states = scope["States"]
        assert scope["StartAt"] in states
        reached, frontier = set(), [scope["StartAt"]]
        while frontier:
            name = frontier.pop()
            if name in reached:
                continue
            reached.add(name)
            for target in transitions(states[name]):
                assert target in states, f"{path.name}: {name} -> {target}, which does not exist"
                frontier.append(target)
        assert reached == set(states), f"{path.name}: unreachable {set(states) - reached}"


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_every_state_has_a_path_to_success_or_failure(path):
    for scope in scopes(load(path)):
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
        assert finishing == set(states), f"{path.name}: no way out of {set(states) - finishing}"
        for name, state in states.items():
            if state["Type"] not in TERMINAL_TYPES | {"Choice"}:
                assert ("Next" in state) != bool(state.get("End")), f"{path.name}: {name} needs exactly one of Next/End"


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_every_task_has_retry_with_backoff_and_jitter_and_a_catch_all(path):
    for name, task in tasks(load(path)):
        assert task.get("Retry"), f"{path.name}: {name} has no Retry"
        assert any(catcher["ErrorEquals"] == ["States.ALL"] for catcher in task.get("Catch", [])), f"{path.name}: {name}"
        retrying = [retrier for retrier in task["Retry"] if retrier.get("MaxAttempts", 3) > 0]
        assert retrying, f"{path.name}: {name} never retries"
        for retrier in retrying:
            assert retrier["BackoffRate"] > 1 and retrier["JitterStrategy"] == "FULL", f"{path.name}: {name}"
            assert retrier["MaxAttempts"] <= 5 and retrier["MaxDelaySeconds"] >= retrier["IntervalSeconds"]
        if task["Resource"] == "arn:aws:states:::lambda:invoke":
            assert set(task["Retry"][0]["ErrorEquals"]) == TRANSIENT_LAMBDA_ERRORS, f"{path.name}: {name}"


@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_failures_end_in_one_failure_event_then_a_fail_state(path):
    machine = load(path)
    emit = machine["States"]["EmitFailure"]
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
            assert target in {"EmitFailure", "Failed"}, f"{path.name}: {name} catches to {target}"


@pytest.mark.parametrize("workflow", PIPELINE.workflows, ids=[w.name for w in PIPELINE.workflows])
def test_the_first_step_accepts_the_event_and_every_event_id_comes_from_it(workflow):
    machine = load(STATEMACHINES / workflow.definition)
    accept = machine["States"][machine["StartAt"]]
    assert accept["Parameters"]["FunctionName"] == "${AcceptFunctionArn}"
    payload = accept["Parameters"]["Payload"]
    assert (payload["workflow"], payload["types"]) == (WORKFLOW_NAME, [TRIGGER_TYPE])
    assert set(payload["emits"]) == set(workflow.emits)  # result ids for what the declaration says it produces
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

    stems = {key.removesuffix("FunctionArn") for key in placeholders((STATEMACHINES / workflow.definition).read_text())
             if key.endswith("FunctionArn")}
    assert stems == {"Accept", *workflow.tasks}
