"""A pipeline that runs without end (``inferbus serve``) keeps a window of what happened: each function's
last invocations and their logs, each state machine's running executions and its last finished ones."""

from __future__ import annotations

import json
import time

import pytest

from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

ECHO_MACHINE = {"StartAt": "Echo", "States": {"Echo": t.task("Echo")}}
WAITING = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": True}}}


def template() -> dict:
    return t.template(Echo=t.function("echo", tag="step"),
                      Machine=t.state_machine(ECHO_MACHINE, t.function_arn("Echo"), machine_type="STANDARD"),
                      Waiting=t.state_machine(WAITING, {}, machine_type="STANDARD"))


def run(pipeline, machine: str, count: int, prefix: str) -> None:
    """One execution after the other, each to its end (not drain: an execution parked in a Wait state never settles)."""
    for n in range(count):
        arn = pipeline.stepfunctions.start_execution(stateMachineArn=pipeline.state_machines[machine].arn,
                                                     name=f"{prefix}-{n}", input=json.dumps({"n": n}))["executionArn"]
        deadline = time.monotonic() + 30
        while pipeline.stepfunctions.describe_execution(executionArn=arn)["status"] == "RUNNING":
            assert time.monotonic() < deadline, f"{prefix}-{n} did not end"
            time.sleep(0.01)


def listed(pipeline, machine: str) -> list[dict]:
    pages = pipeline.stepfunctions.get_paginator("list_executions").paginate(
        stateMachineArn=pipeline.state_machines[machine].arn)
    return [item for page in pages for item in page["executions"]]


@pytest.mark.parametrize("retain", [3, 12])
def test_a_function_keeps_its_last_invocations_and_only_their_logs(retain):
    with runtime(template(), tap=False, retain=retain) as pipeline:
        run(pipeline, "Machine", retain + 5, "echo")
        echo = pipeline.functions["Echo"]
        inputs = [invocation for invocation in echo.invocations]
        assert len(inputs) == retain
        # the window is the LAST ones: the logs left are of the last executions' tasks, one line and one metric each
        assert len(echo.logs) == retain and echo.metrics == {"Echoes": [1] * retain}


def test_without_a_window_everything_is_kept():
    with runtime(template(), tap=False) as pipeline:
        run(pipeline, "Machine", 8, "echo")
        assert len(pipeline.functions["Echo"].invocations) == 8 and len(pipeline.executions("Machine")) == 8


def test_finished_executions_beyond_the_window_are_forgotten_and_running_ones_kept():
    retain = 4
    with runtime(template(), tap=False, retain=retain) as pipeline:
        pipeline.stepfunctions.start_execution(stateMachineArn=pipeline.state_machines["Waiting"].arn, name="parked")
        run(pipeline, "Machine", 3 * retain, "echo")
        names = [item["name"] for item in listed(pipeline, "Machine")]
        assert len(names) <= retain + 1  # trimmed every retain // 10 (here: every) ends
        assert f"echo-{3 * retain - 1}" in names and "echo-0" not in names  # the newest kept, the oldest gone
        assert [item["status"] for item in listed(pipeline, "Waiting")] == ["RUNNING"]  # never a running one
        kept = pipeline.stepfunctions.describe_execution(executionArn=listed(pipeline, "Machine")[0]["executionArn"])
        assert kept["status"] == "SUCCEEDED"  # what is kept still reads as before
        pipeline.stepfunctions.stop_execution(executionArn=listed(pipeline, "Waiting")[0]["executionArn"])


def test_a_window_must_hold_something():
    with pytest.raises(ValueError, match="retain must be at least 1"):
        runtime(template(), retain=0)
