"""The Workflow construct on a bare Stack: it deploys the file's own states wrapped in the kit's
protocol, and refuses at synth a file the kit cannot wrap, naming the file and the state."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Template

from inferbus.model.workflow_protocol import ACCEPT, EMIT_FAILURE, KIT_STATES, ROUTE, WorkflowDefinitionError
from infra.constructs.workflow import Workflow

OWN = {
    "Comment": "check: one Pass, then done",
    "StartAt": "Check",
    "States": {
        "Check": {"Type": "Pass", "Next": "Done"},
        "Done": {"Type": "Succeed"},
    },
}


def build(tmp_path, definition: dict, **options) -> Stack:
    path = tmp_path / "check.asl.json"
    path.write_text(json.dumps(definition))
    stack = Stack(App(), "Bare")
    accept = lambda_.Function(stack, "Accept", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler",
                              code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"))
    Workflow(stack, "Check", bus=events.EventBus(stack, "Bus"), event_pattern=events.EventPattern(detail_type=["X"]),
             definition_file=path, result_source="inferbus.check", functions={"Accept": accept}, express=True,
             log_level="ALL", log_execution_data=False, log_retention=logs.RetentionDays.ONE_WEEK,
             target_retry_attempts=2, target_max_event_age_s=3600, dlq_retention_days=14,
             substitutions={"WorkflowName": "check", "FailureType": "CheckFailed", "TriggerType": "X"}, **options)
    return stack


def test_the_template_holds_the_files_states_wrapped_in_the_protocol(tmp_path):
    stack = build(tmp_path, OWN, emits=["Checked"], accepts_from=["inferbus.upstream"])
    (machine,) = Template.from_stack(stack).find_resources("AWS::StepFunctions::StateMachine").values()
    deployed = json.loads(machine["Properties"]["DefinitionString"])
    assert deployed["StartAt"] == ACCEPT and set(deployed["States"]) == {*KIT_STATES, *OWN["States"]}
    assert deployed["States"][ROUTE]["Choices"][0]["Next"] == OWN["StartAt"]
    payload = deployed["States"][ACCEPT]["Parameters"]["Payload"]
    assert (payload["emits"], payload["sources"]) == (["Checked"], ["inferbus.upstream"])


def test_a_file_the_kit_cannot_wrap_fails_the_synth_naming_the_file_and_the_state(tmp_path):
    bad = {"StartAt": "Check", "States": {"Check": {"Type": "Pass", "Next": "Failed"}}}
    with pytest.raises(WorkflowDefinitionError,
                       match=rf"^statemachines/check\.asl\.json: state 'Check': goes to 'Failed': .*{EMIT_FAILURE}"):
        build(tmp_path, bad, emits=["Checked"])
