"""The split: a core stack and one nested stack per declared component, each within CloudFormation's
limits, read back as one template; the cost table in docs/operations.md is the templates'."""

from __future__ import annotations

import pytest

from inferbus.costs import stack_costs, update_operations
from inferbus.model.declarations import Pipeline
from inferbus.runtime import UnsupportedTemplateError
from inferbus.runtime.nested_stacks import flatten
from infra.limits import MAX_RESOURCES, CloudFormationLimitError, TemplateSize, check_templates
from tests.declared import PIPELINE


def test_each_component_is_a_nested_stack_of_its_own(stacks):
    assert len(stacks.nested) == len(PIPELINE.components)
    for component in PIPELINE.components:
        (stack_id,) = [k for k in stacks.nested if k.startswith(f"{component.construct_id}StackNestedStack")]
        outputs = stacks.nested[stack_id].get("Outputs", {})
        assert any(key.startswith(component.construct_id) for key in outputs), component.name


def test_the_flattened_template_is_every_stacks_resources_with_parameters_resolved(stacks, template):
    counted = len(stacks.root["Resources"]) - len(stacks.nested) + sum(len(t["Resources"]) for t in stacks.nested.values())
    assert len(template["Resources"]) == counted
    assert not [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudFormation::Stack"]
    parameters = {name for t in stacks.nested.values() for name in t.get("Parameters", {})}
    text = repr(template)
    assert not [name for name in parameters if f"'Ref': '{name}'" in text]
    assert "Outputs." not in text  # every read of a nested output became the output's value


def test_flatten_inlines_parameters_and_nested_outputs():
    root = {"Resources": {
        "Bus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": "b"}},
        "Child": {"Type": "AWS::CloudFormation::Stack", "Properties": {"Parameters": {"BusName": {"Ref": "Bus"}}}},
        "Watch": {"Type": "AWS::CloudWatch::Alarm", "DependsOn": ["Child"],
                  "Properties": {"Dimensions": [{"Value": {"Fn::GetAtt": ["Child", "Outputs.QueueName"]}}]}},
    }, "Outputs": {"BusName": {"Value": {"Ref": "Bus"}}}}
    child = {"Parameters": {"BusName": {"Type": "String"}}, "Resources": {
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"Tags": [{"Key": "bus", "Value": {"Ref": "BusName"}}]}}},
        "Outputs": {"QueueName": {"Value": {"Fn::GetAtt": ["Queue", "QueueName"]}}, "QueueUrl": {"Value": {"Ref": "Queue"}}}}
    flat = flatten(root, {"Child": child})
    assert set(flat["Resources"]) == {"Bus", "Queue", "Watch"}
    assert flat["Resources"]["Queue"]["Properties"]["Tags"][0]["Value"] == {"Ref": "Bus"}
    assert flat["Resources"]["Watch"]["Properties"]["Dimensions"][0]["Value"] == {"Fn::GetAtt": ["Queue", "QueueName"]}
    assert "DependsOn" not in flat["Resources"]["Watch"]
    assert set(flat["Outputs"]) == {"BusName", "QueueUrl"}  # QueueName only fed the parent
    with pytest.raises(UnsupportedTemplateError, match="in two stacks"):
        flatten(root, {"Child": {**child, "Resources": {"Bus": child["Resources"]["Queue"]}}})
    with pytest.raises(UnsupportedTemplateError, match="does not pass"):
        flatten({**root, "Resources": {**root["Resources"], "Child": {"Type": "AWS::CloudFormation::Stack"}}},
                {"Child": child})


def test_a_template_past_a_limit_is_named_with_what_to_do():
    crowded = {"Resources": {f"Queue{n}": {"Type": "AWS::SQS::Queue"} for n in range(MAX_RESOURCES + 1)}}
    with pytest.raises(CloudFormationLimitError) as raised:
        check_templates({"InferbusCrowdedStack.nested.template": crowded})
    error = raised.value
    assert (error.stack, error.limit, error.value, error.maximum) == (
        "InferbusCrowdedStack.nested.template", "resources", MAX_RESOURCES + 1, MAX_RESOURCES)
    assert "CloudFormation allows at most 500" in str(error) and "bug" not in str(error)


def test_every_synthesized_template_is_within_the_limits(stacks):
    from infra.limits import assembly_templates

    sizes = check_templates(assembly_templates(stacks.directory))
    assert len(sizes) == 1 + len(PIPELINE.components)
    assert all(isinstance(size, TemplateSize) for size in sizes)


def test_the_cost_table_in_the_operations_guide_is_the_templates(stacks):
    assert update_operations(stacks.root, stacks.nested, PIPELINE, check=True), \
        "docs/operations.md's cost table is out of date: run `inferbus docs`"


def test_each_rows_alarms_are_its_stacks(stacks):
    costs = {cost.name: cost for cost in stack_costs(stacks.root, stacks.nested, PIPELINE)}
    assert set(costs) == {"core", *(c.name for c in PIPELINE.components)}
    alarms = sum(1 for t in [stacks.root, *stacks.nested.values()] for r in t["Resources"].values()
                 if r["Type"] == "AWS::CloudWatch::Alarm")
    assert sum(cost.alarms for cost in costs.values()) == alarms
    for cost in costs.values():
        assert cost.alarm_metrics >= cost.alarms
        assert cost.alarms_monthly_usd == pytest.approx(0.10 * cost.alarm_metrics + 0.50 * cost.composite_alarms)


def test_a_pipeline_without_components_has_only_the_core():
    assert [cost.name for cost in stack_costs({"Resources": {}}, {}, Pipeline())] == ["core"]


def test_cdks_own_resource_count_is_reported_as_cloudformations_limit():
    from infra.limits import limit_error_of

    error = limit_error_of(RuntimeError("ValidationError: Number of resources in stack 'Inferbus/IrisStack': 512 is "
                                        "greater than allowed maximum of 500: AWS::SQS::Queue (300), ..."))
    assert (error.stack, error.limit, error.value, error.maximum) == ("Inferbus/IrisStack", "resources", 512, 500)
    assert limit_error_of(RuntimeError("something else")) is None


def test_a_synth_past_a_limit_stops_with_one_line_naming_the_stack(monkeypatch, tmp_path):
    """With the limit lowered below the largest component's stack, the synth stops on that stack, and the CLI
    says so in one line that is not a bug report."""
    import infra.limits
    from inferbus.cli_support import explain
    from inferbus.template import synthesize_stacks

    monkeypatch.setattr(infra.limits, "MAX_RESOURCES", 25)
    with pytest.raises(CloudFormationLimitError) as raised:
        synthesize_stacks(outdir=str(tmp_path))
    assert raised.value.limit == "resources" and raised.value.value > 25
    assert (tmp_path / f"{raised.value.stack}.json").is_file()
    code, message = explain(raised.value)
    assert code != 0 and message.startswith(f"stack {raised.value.stack}: ") and "bug" not in message


def test_a_root_template_file_is_read_with_its_nested_stacks(stacks, tmp_path):
    """What `inferbus serve --template cdk.out/Inferbus.template.json` reads: the same flattened view."""
    from pathlib import Path

    from inferbus.runtime.nested_stacks import read_flattened

    (root_file,) = [p for p in Path(stacks.directory).glob("*.template.json") if ".nested." not in p.name]
    assert read_flattened(root_file) == stacks.flattened()
    alone = tmp_path / root_file.name
    alone.write_text(root_file.read_text())
    with pytest.raises(UnsupportedTemplateError, match="its template is not in"):
        read_flattened(alone)
