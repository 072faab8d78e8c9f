"""Assertions on the synthesized template (one synth per session, shared)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infra.settings import InferbusSettings

SETTINGS = InferbusSettings()


def of_type(template, resource_type):
    return {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == resource_type}


def test_event_source_mapping_reads_the_settings(template):
    (mapping,) = of_type(template, "AWS::Lambda::EventSourceMapping").values()
    consumer = SETTINGS.image_consumer
    assert mapping["BatchSize"] == consumer.batch_size
    assert mapping["MaximumBatchingWindowInSeconds"] == consumer.max_batching_window_s
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": consumer.max_concurrency}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_every_queue_is_encrypted_and_work_queues_redrive_to_a_dlq(template):
    queues = of_type(template, "AWS::SQS::Queue")
    assert len(queues) == 3
    assert all(q.get("SqsManagedSseEnabled") for q in queues.values())
    (work,) = [q for q in queues.values() if "RedrivePolicy" in q]
    assert work["RedrivePolicy"]["maxReceiveCount"] == SETTINGS.image_consumer.max_receive_count
    assert work["VisibilityTimeout"] == SETTINGS.image_consumer.visibility_timeout_s


def test_every_queue_denies_requests_without_tls(template):
    policies = of_type(template, "AWS::SQS::QueuePolicy")
    assert len(policies) == 3
    for policy in policies.values():
        assert any(
            s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            for s in policy["PolicyDocument"]["Statement"]
        )


def test_rule_routes_image_events_with_a_target_dlq_and_retries(template):
    (rule,) = of_type(template, "AWS::Events::Rule").values()
    assert rule["EventPattern"]["detail-type"] == ["ImageSubmitted"]
    (target,) = rule["Targets"]
    assert "DeadLetterConfig" in target
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == SETTINGS.target_retry_attempts


def test_bus_is_archived(template):
    (archive,) = of_type(template, "AWS::Events::Archive").values()
    assert archive["RetentionDays"] == SETTINGS.archive_retention_days


def test_idempotency_table_has_ttl_pitr_and_sse(template):
    (table,) = of_type(template, "AWS::DynamoDB::Table").values()
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True


def test_function_runtime_and_configuration(template):
    (function,) = of_type(template, "AWS::Lambda::Function").values()
    assert function["Runtime"] == f"python{SETTINGS.python_version}"
    assert function["Architectures"] == ["arm64"]
    assert function["TracingConfig"] == {"Mode": "Active"}
    assert function["Handler"] == "image_classifier.handler.lambda_handler"
    assert set(function["Environment"]["Variables"]) >= {"EVENT_BUS_NAME", "IDEMPOTENCY_TABLE_NAME", "MODEL_PATH"}


def test_no_wildcard_actions_and_only_xray_on_any_resource(template):
    for policy in of_type(template, "AWS::IAM::Policy").values():
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert not any("*" in action for action in actions), actions
            if statement["Resource"] == "*":
                assert set(actions) <= {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, actions


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


def test_cfn_lint_passes(template, tmp_path):
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template))
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), "--ignore-checks", "W3005", "--", str(path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_alarms_watch_dlq_depth_latency_and_errors_and_notify_the_encrypted_topic(template):
    alarms = of_type(template, "AWS::CloudWatch::Alarm")
    metrics = {alarm.get("MetricName") for alarm in alarms.values()}
    assert metrics == {"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage", "Errors", "RecordsFailed"}
    assert len(alarms) == 5  # the work queue's DLQ and the rule target's DLQ both watched
    (topic_id,) = [k for k, r in template["Resources"].items() if r["Type"] == "AWS::SNS::Topic"]
    assert all(alarm["AlarmActions"] == [{"Ref": topic_id}] for alarm in alarms.values())
    assert "alias/aws/sns" in json.dumps(template["Resources"][topic_id]["Properties"]["KmsMasterKeyId"])
    age = next(a for a in alarms.values() if a["MetricName"] == "ApproximateAgeOfOldestMessage")
    assert age["Threshold"] == SETTINGS.max_message_age_s


def test_dashboard_shows_rate_latency_errors_and_dlq_depth(template):
    (dashboard,) = of_type(template, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dashboard["DashboardBody"])
    for title in ("consumption rate", "latency", "errors", "DLQ depth"):
        assert title in body
