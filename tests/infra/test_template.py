"""Assertions on the synthesized template (one synth per session, shared)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infra.settings import InferbusSettings
from infra.stack import RESULT_SOURCES

SETTINGS = InferbusSettings()
STATEMACHINES = Path(__file__).resolve().parents[2] / "statemachines"
# Actions that support no resource-level permissions: X-Ray, and CloudWatch Logs delivery for state machines.
WILDCARD_RESOURCE_ACTIONS = {
    "xray:PutTraceSegments", "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets",
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery", "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries", "logs:PutResourcePolicy", "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
}


def of_type(template, resource_type):
    return {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == resource_type}


def logical_id(template, prefix, resource_type):
    (found,) = [k for k in of_type(template, resource_type) if k[:-8] == prefix]  # CDK appends 8 hex digits
    return found


def test_event_source_mappings_read_the_settings(template):
    mappings = of_type(template, "AWS::Lambda::EventSourceMapping").values()
    by_function = {m["FunctionName"]["Ref"].split("Function")[0]: m for m in mappings}
    assert set(by_function) == {"ImageClassifier", "RiskScorer"}
    for name, consumer in (("ImageClassifier", SETTINGS.image_consumer), ("RiskScorer", SETTINGS.risk_consumer)):
        mapping = by_function[name]
        assert mapping["BatchSize"] == consumer.batch_size
        assert mapping["MaximumBatchingWindowInSeconds"] == consumer.max_batching_window_s
        assert mapping["ScalingConfig"] == {"MaximumConcurrency": consumer.max_concurrency}
        assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_every_queue_is_encrypted_and_every_work_queue_redrives_to_a_dlq(template):
    queues = of_type(template, "AWS::SQS::Queue")
    assert all(q.get("SqsManagedSseEnabled") for q in queues.values())
    work = {k: q for k, q in queues.items() if "RedrivePolicy" in q}
    assert {k.split("Queues")[0] for k in work} == {"ImageClassifier", "RiskScorer", "NewCustomerOffers",
                                                    "ReturningCustomerOffers"}
    assert work[logical_id(template, "ImageClassifierQueuesQueue", "AWS::SQS::Queue")]["RedrivePolicy"][
        "maxReceiveCount"] == SETTINGS.image_consumer.max_receive_count
    assert work[logical_id(template, "RiskScorerQueuesQueue", "AWS::SQS::Queue")][
        "VisibilityTimeout"] == SETTINGS.risk_consumer.visibility_timeout_s
    dead_letter_arns = {json.dumps(q["RedrivePolicy"]["deadLetterTargetArn"]) for q in work.values()}
    target_dlqs = {json.dumps(t["DeadLetterConfig"]["Arn"]) for r in of_type(template, "AWS::Events::Rule").values()
                   for t in r["Targets"]}
    others = {k for k in queues if k not in work}
    # Every other queue is a DLQ of a queue or of a rule target, except the people-read review queue
    # and the invalid-events destination (itself a dead-letter destination, with reasons).
    for queue in others - {logical_id(template, "ReviewQueue", "AWS::SQS::Queue"),
                           logical_id(template, "InvalidEvents", "AWS::SQS::Queue")}:
        arn = json.dumps({"Fn::GetAtt": [queue, "Arn"]})
        assert arn in dead_letter_arns | target_dlqs, queue


def test_review_queue_keeps_cases_longer_than_the_review_timeout(template):
    review = of_type(template, "AWS::SQS::Queue")[logical_id(template, "ReviewQueue", "AWS::SQS::Queue")]
    assert review["MessageRetentionPeriod"] > SETTINGS.review_timeout_s


def test_every_queue_denies_requests_without_tls(template):
    queues, policies = of_type(template, "AWS::SQS::Queue"), of_type(template, "AWS::SQS::QueuePolicy")
    covered = {queue["Ref"] for policy in policies.values() for queue in policy["Queues"]}
    assert covered == set(queues)
    for policy in policies.values():
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy["PolicyDocument"]["Statement"]
        )


def test_every_rule_target_has_a_dlq_and_retries(template):
    rules = of_type(template, "AWS::Events::Rule")
    assert len(rules) == 9
    for rule in rules.values():
        assert rule["EventPattern"]["detail"]["specversion"] == ["1.0"]
        (target,) = rule["Targets"]
        assert "DeadLetterConfig" in target
        assert target["RetryPolicy"]["MaximumRetryAttempts"] == SETTINGS.target_retry_attempts


def test_rules_on_results_accept_only_internal_producers(template):
    rules = of_type(template, "AWS::Events::Rule").values()
    for rule in rules:
        if rule["EventPattern"]["detail-type"][0] in {"RiskScored", "TransactionApproved"}:
            assert set(rule["EventPattern"]["source"]) <= set(RESULT_SOURCES.values())


def test_review_threshold_splits_risk_between_the_two_workflows(template):
    patterns = {json.dumps(r["Targets"][0]["Arn"]): r["EventPattern"] for r in of_type(template, "AWS::Events::Rule").values()
                if r["EventPattern"]["detail-type"] == ["RiskScored"]}
    numeric = sorted(p["detail"]["data"]["risk_score"][0]["numeric"] for p in patterns.values())
    assert numeric == [["<", SETTINGS.review_threshold], [">=", SETTINGS.review_threshold]]


def test_bus_is_archived(template):
    (archive,) = of_type(template, "AWS::Events::Archive").values()
    assert archive["RetentionDays"] == SETTINGS.archive_retention_days


def test_idempotency_table_has_ttl_pitr_and_sse(template):
    (table,) = of_type(template, "AWS::DynamoDB::Table").values()
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True


def test_functions_runtime_and_configuration(template):
    functions = of_type(template, "AWS::Lambda::Function")
    assert len(functions) == 10
    for function in functions.values():
        assert function["Runtime"] == f"python{SETTINGS.python_version}"
        assert function["Architectures"] == ["arm64"]
        assert function["TracingConfig"] == {"Mode": "Active"}
    image = functions[logical_id(template, "ImageClassifierFunction", "AWS::Lambda::Function")]
    assert image["Handler"] == "image_classifier.handler.lambda_handler"
    assert set(image["Environment"]["Variables"]) >= {"EVENT_BUS_NAME", "IDEMPOTENCY_TABLE_NAME", "MODEL_PATH"}
    embed = functions[logical_id(template, "TextEmbedFunction", "AWS::Lambda::Function")]
    assert (embed["MemorySize"], embed["Timeout"]) == (SETTINGS.text_encoder.memory_mb, SETTINGS.text_encoder.timeout_s)


def test_state_machines_run_the_asl_files_with_logging_and_tracing(template):
    machines = of_type(template, "AWS::StepFunctions::StateMachine")
    files = {path.read_text(): path.name for path in STATEMACHINES.glob("*.asl.json")}
    expected_types = {"text_pipeline.asl.json": "EXPRESS", "vision_fanout.asl.json": "EXPRESS",
                      "auto_approve.asl.json": "EXPRESS", "risk_review.asl.json": "STANDARD"}
    seen = {}
    for machine in machines.values():
        name = files[machine["DefinitionString"]]  # the file, unchanged: placeholders filled at deploy
        seen[name] = machine["StateMachineType"]
        placeholders = set(re.findall(r"\$\{([A-Za-z0-9]+)\}", machine["DefinitionString"]))
        assert placeholders == set(machine["DefinitionSubstitutions"]), name
        assert machine["TracingConfiguration"] == {"Enabled": True}
        assert machine["LoggingConfiguration"]["Level"] == SETTINGS.workflow_log_level
        assert machine["LoggingConfiguration"]["IncludeExecutionData"] is SETTINGS.workflow_log_execution_data
    assert seen == expected_types


def test_state_machine_roles_invoke_only_their_own_functions(template):
    machines = of_type(template, "AWS::StepFunctions::StateMachine")
    policies = of_type(template, "AWS::IAM::Policy")
    for machine in machines.values():
        role = machine["RoleArn"]["Fn::GetAtt"][0]
        statements = [s for p in policies.values() if {"Ref": role} in p["Roles"] for s in p["PolicyDocument"]["Statement"]]
        invoked = {json.dumps(r) for s in statements if s["Action"] == "lambda:InvokeFunction"
                   for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])}
        named = {json.dumps(v) for k, v in machine["DefinitionSubstitutions"].items() if k.endswith("FunctionArn")}
        assert invoked == named


def test_no_wildcard_actions_and_only_unscopable_actions_on_any_resource(template):
    for policy in of_type(template, "AWS::IAM::Policy").values():
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert not any("*" in action for action in actions), actions
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            assert not any(isinstance(r, str) and r != "*" and "*" in r for r in resources), resources
            if "*" in resources:
                assert set(actions) <= WILDCARD_RESOURCE_ACTIONS, actions


def test_no_managed_policies_on_roles(template):
    for role in of_type(template, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role


def test_cdk_nag_fails_synth_on_an_unacknowledged_finding(tmp_path):
    """The nag gate is live: an unencrypted queue added to the stack must fail synthesis."""
    script = f"""
import os
os.environ["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] = "20"
from aws_cdk import aws_sqs as sqs
from infra.app import build_app
app, stack = build_app(outdir={str(tmp_path)!r}, context={{"aws:cdk:bundling-stacks": []}},
                       builtin_cloud_formation_validation=False)
sqs.Queue(stack, "Unsafe", encryption=sqs.QueueEncryption.UNENCRYPTED)
app.synth()
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "AwsSolutions-SQS" in result.stdout + result.stderr


@pytest.mark.parametrize("variant", ["template", "image_variant_template", "fis_template"])
def test_cfn_lint_passes(variant, request, tmp_path):
    path = tmp_path / "template.json"
    path.write_text(json.dumps(request.getfixturevalue(variant)))
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), "--ignore-checks", "W3005", "--", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_alarms_watch_queues_functions_and_workflows_and_notify_the_encrypted_topic(template):
    alarms = of_type(template, "AWS::CloudWatch::Alarm")
    metrics = {alarm.get("MetricName") for alarm in alarms.values()}
    assert metrics == {"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage", "Errors", "RecordsFailed",
                       "ExecutionsFailed", "ExecutionsTimedOut"}
    assert len(alarms) == 2 * 5 + 4 * 3  # two consumers, four workflows
    (topic_id,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::SNS::Topic"]
    assert all(alarm["AlarmActions"] == [{"Ref": topic_id}] for alarm in alarms.values())
    assert "alias/aws/sns" in json.dumps(template["Resources"][topic_id]["Properties"]["KmsMasterKeyId"])
    ages = [a for a in alarms.values() if a["MetricName"] == "ApproximateAgeOfOldestMessage"]
    assert {a["Threshold"] for a in ages} == {SETTINGS.max_message_age_s}


def test_dashboard_shows_rate_latency_errors_and_dlq_depth(template):
    (dashboard,) = of_type(template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["DashboardBody"])
    for title in ("consumption rate", "latency", "errors", "DLQ depth", "executions", "undelivered events"):
        assert title in body


def test_the_text_encoder_can_be_a_container_image(template, image_variant_template):
    zip_embed = of_type(template, "AWS::Lambda::Function")[logical_id(template, "TextEmbedFunction", "AWS::Lambda::Function")]
    image_id = logical_id(image_variant_template, "TextEmbedFunction", "AWS::Lambda::Function")
    image_embed = of_type(image_variant_template, "AWS::Lambda::Function")[image_id]
    assert "ZipFile" not in json.dumps(zip_embed["Code"]) and "S3Key" in zip_embed["Code"]
    assert image_embed["PackageType"] == "Image" and "ImageUri" in image_embed["Code"]
    assert "Handler" not in image_embed and "Runtime" not in image_embed
    assert image_embed["Environment"]["Variables"]["INFERBUS_LOCAL_HANDLER"] == zip_embed["Handler"]
    dockerfile = (Path(__file__).resolve().parents[2] / "functions" / "text_pipeline" / "Dockerfile").read_text()
    assert f'CMD ["{zip_embed["Handler"]}"]' in dockerfile
    assert "lambda/python:${PYTHON_VERSION}" in dockerfile
    # Only the encoder changes: the other nine functions stay zip functions.
    others = [f for k, f in of_type(image_variant_template, "AWS::Lambda::Function").items() if k != image_id]
    assert len(others) == 9 and all("Handler" in f for f in others)
