"""Hand-written templates of the shape CDK synthesizes (aws-cdk-lib 2.275), for the runtime's tests.

Logical ids carry CDK's 8-hex suffix; intrinsics are spelled as CDK spells them.
"""

from __future__ import annotations

import json
from typing import Any

BUS = "EventBusEEC924FB"
ROLE = "StateMachineRoleB840431D"
LOG_GROUP = "StateMachineLogsA1B2C3D4"
FIXTURES = "tests.runtime_fixtures"


def bus(name: str = "runtime-test") -> dict[str, Any]:
    return {"Type": "AWS::Events::EventBus", "Properties": {"Name": name}}


def queue(dead_letter: str | None = None, *, max_receive_count: int = 2) -> dict[str, Any]:
    props: dict[str, Any] = {"SqsManagedSseEnabled": True, "VisibilityTimeout": 30}
    if dead_letter:
        props["RedrivePolicy"] = {"deadLetterTargetArn": {"Fn::GetAtt": [dead_letter, "Arn"]}, "maxReceiveCount": max_receive_count}
    return {"Type": "AWS::SQS::Queue", "Properties": props, "UpdateReplacePolicy": "Delete", "DeletionPolicy": "Delete"}


def claims_table() -> dict[str, Any]:
    """A claims table as the kit's consumers use it (``IDEMPOTENCY_TABLE_NAME``): shared by every
    execution environment of a function, as in AWS, so a duplicate is recognised wherever it lands."""
    return {"Type": "AWS::DynamoDB::Table", "Properties": {
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST"}}


def role(service: str = "states.amazonaws.com") -> dict[str, Any]:
    return {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {
        "Statement": [{"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": service}}],
        "Version": "2012-10-17"}}}


def log_group() -> dict[str, Any]:
    return {"Type": "AWS::Logs::LogGroup", "Properties": {"RetentionInDays": 30}, "DeletionPolicy": "Retain"}


def function(module: str, *, tag: str | None = None, image: bool = False, **environment: Any) -> dict[str, Any]:
    """A zip function running ``tests.runtime_fixtures.<module>.handler``, or an image function naming it
    in ``ImageConfig.Command`` (no Handler, no Runtime, as CDK's DockerImageFunction emits)."""
    variables = {"EVENT_BUS_NAME": {"Ref": BUS}, **({"TAG": tag} if tag else {}), **environment}
    props: dict[str, Any] = {
        "Environment": {"Variables": variables},
        "MemorySize": 512,
        "Role": {"Fn::GetAtt": ["FunctionRole", "Arn"]},
        "Timeout": 30,
        "TracingConfig": {"Mode": "Active"},
    }
    if image:
        props |= {"Code": {"ImageUri": {"Fn::Sub": "${AWS::AccountId}.dkr.ecr.${AWS::Region}.amazonaws.com/cdk-hnb659fds:abc"}},
                  "PackageType": "Image", "ImageConfig": {"Command": [f"{FIXTURES}.{module}.handler"]}}
    else:
        props |= {"Code": {"S3Bucket": {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"}, "S3Key": "x.zip"},
                  "Handler": f"{FIXTURES}.{module}.handler", "Runtime": "python3.12"}
    return {"Type": "AWS::Lambda::Function", "Properties": props}


def event_source(function_id: str, queue_id: str, *, batch_size: int = 10,
                 max_concurrency: int | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {
        "BatchSize": batch_size, "EventSourceArn": {"Fn::GetAtt": [queue_id, "Arn"]},
        "FunctionName": {"Ref": function_id}, "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "MaximumBatchingWindowInSeconds": 0}
    if max_concurrency is not None:
        props["ScalingConfig"] = {"MaximumConcurrency": max_concurrency}
    return {"Type": "AWS::Lambda::EventSourceMapping", "Properties": props}


def cdk_join(text: str) -> dict[str, Any]:
    """The definition as CDK emits it when it holds tokens: ``Fn::Join`` with ``Ref AWS::Partition``."""
    pieces: list[Any] = []
    for i, chunk in enumerate(text.split("arn:aws:")):
        if i:
            pieces += ["arn:", {"Ref": "AWS::Partition"}, ":"]
        pieces.append(chunk)
    return {"Fn::Join": ["", pieces]}


def state_machine(definition: str | dict[str, Any], substitutions: dict[str, Any], *, machine_type: str | None = None,
                  join: bool = True, name: str | None = None) -> dict[str, Any]:
    """A state machine with logging to a log group and X-Ray on, as the stack will emit it."""
    text = definition if isinstance(definition, str) else json.dumps(definition)
    props: dict[str, Any] = {
        "DefinitionString": cdk_join(text) if join else text,
        "DefinitionSubstitutions": substitutions,
        "RoleArn": {"Fn::GetAtt": [ROLE, "Arn"]},
        "LoggingConfiguration": {
            "Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": {"Fn::GetAtt": [LOG_GROUP, "Arn"]}}}],
            "IncludeExecutionData": True,
            "Level": "ALL",
        },
        "TracingConfiguration": {"Enabled": True},
    }
    if machine_type:
        props["StateMachineType"] = machine_type
    if name:
        props["StateMachineName"] = name
    return {"Type": "AWS::StepFunctions::StateMachine", "Properties": props,
            "DependsOn": [ROLE], "UpdateReplacePolicy": "Delete", "DeletionPolicy": "Delete"}


def rule(detail_type: str, targets: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Type": "AWS::Events::Rule", "Properties": {
        "EventBusName": {"Ref": BUS}, "EventPattern": {"detail-type": [detail_type]}, "State": "ENABLED", "Targets": targets}}


def state_machine_target(machine_id: str, target_id: str = "Target0", *, dead_letter: str | None = None,
                         **extra: Any) -> dict[str, Any]:
    """A rule target that is a state machine, as ``aws_events_targets.SfnStateMachine`` emits it."""
    target: dict[str, Any] = {"Arn": {"Ref": machine_id}, "Id": target_id,
                              "RoleArn": {"Fn::GetAtt": ["RuleEventsRole", "Arn"]},
                              "RetryPolicy": {"MaximumEventAgeInSeconds": 3600, "MaximumRetryAttempts": 3}, **extra}
    if dead_letter:
        target["DeadLetterConfig"] = {"Arn": {"Fn::GetAtt": [dead_letter, "Arn"]}}
    return target


def queue_target(queue_id: str, target_id: str = "Target0") -> dict[str, Any]:
    return {"Arn": {"Fn::GetAtt": [queue_id, "Arn"]}, "Id": target_id}


def template(**resources: dict[str, Any]) -> dict[str, Any]:
    """A template with the bus, the roles and the log group every test machine names, plus ``resources``."""
    base = {BUS: bus(), ROLE: role(), "FunctionRole": role("lambda.amazonaws.com"), "RuleEventsRole": role("events.amazonaws.com"),
            LOG_GROUP: log_group()}
    return {"Resources": base | resources}


def task(function_id: str, next_state: str | None = None, **fields: Any) -> dict[str, Any]:
    """A ``lambda:invoke`` Task whose output is the handler's result."""
    state: dict[str, Any] = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                             "Parameters": {"FunctionName": "${" + function_id + "Arn}", "Payload.$": "$"},
                             "ResultSelector": {"result.$": "$.Payload"}, "OutputPath": "$.result", **fields}
    state |= {"Next": next_state} if next_state else {"End": True}
    return state


def function_arn(function_id: str) -> dict[str, Any]:
    return {function_id + "Arn": {"Fn::GetAtt": [function_id, "Arn"]}}
