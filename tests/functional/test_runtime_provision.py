"""Provisioning what CDK emits for state machines, their roles and log groups, and image functions."""

from __future__ import annotations

import copy
import doctest
import json

import pytest

import inferbus.model.asl
import inferbus.runtime.bridge
import inferbus.runtime.lambda_adapter
from inferbus.runtime import UnsupportedTemplateError
from tests.runtime_fixtures import runtime
from tests.runtime_fixtures import templates as t

ACCOUNT = "123456789012"
ASL = """{"StartAt": "Echo", "States": {
  "Echo": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
           "Parameters": {"FunctionName": "${EchoArn}", "Payload": {"queue": "${QueueUrl}", "bus": "${EventBusName}"}},
           "TimeoutSeconds": ${TimeoutSeconds}, "OutputPath": "$.Payload", "End": true}}}"""
SUBSTITUTIONS = t.function_arn("Echo") | {"QueueUrl": {"Ref": "WorkQueue"}, "EventBusName": {"Ref": t.BUS},
                                          "TimeoutSeconds": "30"}


def machine_template(**extra: dict) -> dict:
    return t.template(Echo=t.function("echo", tag="image", image=True), WorkQueue=t.queue(),
                      Machine=t.state_machine(ASL, copy.deepcopy(SUBSTITUTIONS)), **extra)


def test_state_machine_is_created_with_its_substitutions_role_logging_and_tracing():
    # Another function's environment names the machine as CDK does: Ref is the ARN, GetAtt Name the name.
    reader = t.function("echo", MACHINE_ARN={"Ref": "Machine"}, MACHINE_NAME={"Fn::GetAtt": ["Machine", "Name"]},
                        LOGS={"Fn::GetAtt": [t.LOG_GROUP, "Arn"]})
    with runtime(machine_template(Reader=reader), tap=False) as pipeline:
        machine = pipeline.state_machines["Machine"]
        assert machine.type == "STANDARD"  # no StateMachineType
        assert machine.role_arn == f"arn:aws:iam::{ACCOUNT}:role/RuntimeTest-{t.ROLE}"
        described = pipeline.stepfunctions.describe_state_machine(stateMachineArn=machine.arn)
        definition = json.loads(described["definition"])
        parameters = definition["States"]["Echo"]["Parameters"]
        assert parameters["FunctionName"] == pipeline.functions["Echo"].spec.arn
        assert parameters["Payload"] == {"queue": pipeline.deployment.queues["WorkQueue"].url, "bus": pipeline.bus_name}
        assert definition["States"]["Echo"]["TimeoutSeconds"] == 30
        assert definition["States"]["Echo"]["Resource"] == "arn:aws:states:::lambda:invoke"  # Fn::Join with AWS::Partition
        assert described["loggingConfiguration"]["destinations"] == [{"cloudWatchLogsLogGroup": {
            "logGroupArn": f"arn:aws:logs:us-east-1:{ACCOUNT}:log-group:RuntimeTest-{t.LOG_GROUP}:*"}}]
        assert described["tracingConfiguration"] == {"enabled": True}
        environment = pipeline.functions["Reader"].spec.environment
        assert environment["MACHINE_ARN"] == machine.arn and environment["MACHINE_NAME"] == machine.name
        assert environment["LOGS"].startswith("arn:aws:logs:")

        # The image function runs the handler its ImageConfig.Command names.
        pipeline.stepfunctions.start_execution(stateMachineArn=machine.arn, name="one", input="{}")
        pipeline.drain(timeout_s=10)
        (execution,) = pipeline.executions()
        assert execution.output["tag"] == "image"
        assert pipeline.functions["Echo"].spec.package_type == "Image"
        notes = {(lid, why) for lid, _, why in pipeline.deployment.partly_local}
        assert any(lid == "Echo" and "container image not built" in why for lid, why in notes)
        assert any(lid == "Machine" and "X-Ray" in why and "real time" in why for lid, why in notes)
        assert ("Machine", "AWS::StepFunctions::StateMachine") not in {(lid, kind) for lid, kind, _ in pipeline.deployment.cloud_only}


def test_a_placeholder_without_substitution_is_a_clear_error():
    template = machine_template()
    del template["Resources"]["Machine"]["Properties"]["DefinitionSubstitutions"]["QueueUrl"]
    with pytest.raises(UnsupportedTemplateError, match=r"Machine: no DefinitionSubstitutions for \['QueueUrl'\]"):
        runtime(template, tap=False).__enter__()


def test_a_definition_in_s3_is_a_clear_error():
    template = machine_template()
    properties = template["Resources"]["Machine"]["Properties"]
    properties["DefinitionS3Location"] = {"Bucket": "b", "Key": "k"}
    del properties["DefinitionString"]
    with pytest.raises(UnsupportedTemplateError, match="DefinitionS3Location"):
        runtime(template, tap=False).__enter__()


def test_an_image_function_without_a_local_handler_is_a_clear_error():
    template = machine_template()
    del template["Resources"]["Echo"]["Properties"]["ImageConfig"]
    with pytest.raises(UnsupportedTemplateError, match="Echo names no Python handler.*ImageConfig.Command"):
        runtime(template, tap=False).__enter__()


def test_a_lambda_rule_target_is_a_clear_error():
    template = machine_template(EchoRule=t.rule("X", [{"Arn": {"Fn::GetAtt": ["Echo", "Arn"]}, "Id": "Target0"}]))
    with pytest.raises(UnsupportedTemplateError, match="Lambda function"):
        runtime(template, tap=False).__enter__()


def test_input_moto_would_ignore_is_a_clear_error():
    sqs_input_path = machine_template(WorkRule=t.rule("X", [t.queue_target("WorkQueue") | {"InputPath": "$.detail"}]))
    with pytest.raises(UnsupportedTemplateError, match="Input or InputPath, which moto ignores"):
        runtime(sqs_input_path, tap=False).__enter__()
    filtered = machine_template(MachineRule=t.rule("X", [t.state_machine_target("Machine", InputPath="$.detail[0]")]))
    with pytest.raises(UnsupportedTemplateError, match=r"InputPath '\$.detail\[0\]'"):
        runtime(filtered, tap=False).__enter__()


def test_a_failed_start_leaves_no_mock_running():
    template = machine_template()
    template["Resources"]["Machine"]["Properties"]["DefinitionSubstitutions"] = {}
    with pytest.raises(UnsupportedTemplateError):
        runtime(template, tap=False).__enter__()
    with runtime(machine_template(), tap=False) as pipeline:  # the same names again: a fresh moto
        assert pipeline.state_machines["Machine"].name == "RuntimeTest-Machine"


def test_runtime_docstring_examples_run():
    for module in (inferbus.model.asl, inferbus.runtime.bridge, inferbus.runtime.lambda_adapter):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted >= 1, module.__name__


def test_a_table_reports_the_encryption_and_recovery_its_template_asks_for():
    """describe-table and describe-continuous-backups answer as AWS would for the template's tables."""

    template = {"Resources": {
        "Encrypted": {"Type": "AWS::DynamoDB::Table", "Properties": {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST",
            "SSESpecification": {"SSEEnabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}},
        "Plain": {"Type": "AWS::DynamoDB::Table", "Properties": {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST"}}}}
    with runtime(template, tap=False) as pipeline:
        client = pipeline.session.client("dynamodb")
        tables = pipeline.deployment.tables
        encrypted = client.describe_table(TableName=tables["Encrypted"])["Table"]
        plain = client.describe_table(TableName=tables["Plain"])["Table"]
        recovery = {logical_id: client.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
                    ["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] for logical_id, name in tables.items()}
    assert (encrypted["SSEDescription"]["Status"], encrypted["SSEDescription"]["SSEType"]) == ("ENABLED", "KMS")
    assert "SSEDescription" not in plain
    assert recovery == {"Encrypted": "ENABLED", "Plain": "DISABLED"}
