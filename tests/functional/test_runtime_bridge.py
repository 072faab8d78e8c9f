"""A rule whose target is a state machine: moto cannot deliver it, the runtime's in-process bridge does."""

from __future__ import annotations

import json

import pytest

from inferbus.runtime import EmbeddedPipeline, UnsupportedTemplateError
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

PASS_ASL = {"StartAt": "Keep", "States": {"Keep": {"Type": "Pass", "End": True}}}


def bridged_template(*targets: dict) -> dict:
    return t.template(
        Machine=t.state_machine(PASS_ASL, {}),
        TargetDeadLetterQueue=t.queue(),
        MachineRule=t.rule("TextSubmitted", list(targets) or [t.state_machine_target("Machine", dead_letter="TargetDeadLetterQueue")]),
    )


def entry(pipeline: EmbeddedPipeline, detail: dict) -> dict:
    return {"EventBusName": pipeline.bus_name, "Source": "runtime.test", "DetailType": "TextSubmitted", "Detail": json.dumps(detail)}


def test_an_event_on_the_bus_starts_exactly_one_execution_with_the_event_as_input():
    with runtime(bridged_template()) as pipeline:
        assert pipeline.put_events([entry(pipeline, {"text": "hello"})]) == []
        pipeline.drain(timeout_s=10)
        (delivered,) = pipeline.tapped_events()
        (execution,) = pipeline.executions("Machine")
        assert execution.status == "SUCCEEDED"
        assert execution.input == delivered and delivered["account"] == "123456789012"  # delivered whole, as AWS does
        assert list(execution.input) == ["version", "id", "detail-type", "source", "account", "time", "region",
                                         "resources", "detail"]
        assert execution.input["detail"] == {"text": "hello"}
        assert execution.name.startswith(delivered["id"] + "_")
        assert execution.output == execution.input  # Pass
        (bridge,) = pipeline.bridges
        assert bridge.counts.started == 1


def test_a_redelivered_event_starts_nothing_new():
    with runtime(bridged_template()) as pipeline:
        pipeline.put_events([entry(pipeline, {"text": "once"})])
        (bridge,) = pipeline.bridges
        (delivered,) = pipeline.tapped_events()
        bridge.offer(delivered)  # EventBridge delivers at least once: the same event again
        pipeline.drain(timeout_s=10)
        assert len(pipeline.executions()) == 1
        assert (bridge.counts.started, bridge.counts.duplicates) == (1, 1)


def test_input_and_input_path_are_applied():
    template = bridged_template(
        t.state_machine_target("Machine", "Detail", InputPath="$.detail"),
        t.state_machine_target("Machine", "Constant", Input=json.dumps({"fixed": True})),
    )
    with runtime(template, tap=False) as pipeline:
        pipeline.put_events([entry(pipeline, {"text": "x"})])
        pipeline.drain(timeout_s=10)
        assert sorted(json.dumps(e.input) for e in pipeline.executions()) == ['{"fixed": true}', '{"text": "x"}']


def test_an_input_transformer_on_a_state_machine_target_is_refused_not_ignored():
    template = bridged_template(t.state_machine_target(
        "Machine", InputTransformer={"InputPathsMap": {"t": "$.detail.text"}, "InputTemplate": '{"text": <t>}'}))
    with pytest.raises(UnsupportedTemplateError, match="InputTransformer"), runtime(template, tap=False):
        pass


def test_a_failed_start_goes_to_the_targets_dead_letter_queue():
    with runtime(bridged_template(), tap=False) as pipeline:
        pipeline.stepfunctions.delete_state_machine(stateMachineArn=pipeline.state_machines["Machine"].arn)
        pipeline.put_events([entry(pipeline, {"text": "lost?"})])
        pipeline.drain(timeout_s=10)
        (dead,) = pipeline.dead_letters()["TargetDeadLetterQueue"]
        assert json.loads(dead["Body"])["detail"] == {"text": "lost?"}
        assert pipeline.bridges[0].counts.dead_lettered == 1


def test_the_rule_targets_the_state_machine_itself():
    with runtime(bridged_template(), tap=False) as pipeline:
        (rule,) = pipeline.deployment.rules.values()
        (target,) = pipeline.events.list_targets_by_rule(Rule=rule, EventBusName=pipeline.bus_name)["Targets"]
        assert target["Arn"] == pipeline.state_machines["Machine"].arn


def test_the_bridge_is_listed_as_partly_local():
    with runtime(bridged_template(), tap=False) as pipeline:
        notes = [why for logical_id, _, why in pipeline.deployment.partly_local if logical_id == "MachineRule"]
        assert any("in-process bridge" in why and "state machine Machine" in why for why in notes)
