"""SecureQueue and the rule helper: encrypted, TLS-only queues, each with a dead-letter queue."""

from __future__ import annotations

import functools

import pytest
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk.assertions import Match

from infra.constructs.secure_queue import SecureQueue, add_rule_with_dead_letter_queue, build_queue


def test_a_secure_queue_and_its_dlq_are_encrypted_tls_only_and_redriven(synth):
    template = synth(lambda stack: SecureQueue(stack, "Work", visibility_timeout_s=60, max_receive_count=4,
                                               dlq_retention_days=14))
    queues = template.find_resources("AWS::SQS::Queue")
    assert len(queues) == 2 and all(q["Properties"]["SqsManagedSseEnabled"] for q in queues.values())
    template.has_resource_properties("AWS::SQS::Queue", {"VisibilityTimeout": 60,
                                                         "RedrivePolicy": {"maxReceiveCount": 4, "deadLetterTargetArn": Match.any_value()}})
    template.has_resource_properties("AWS::SQS::Queue", {"MessageRetentionPeriod": 14 * 86_400})
    policies = template.find_resources("AWS::SQS::QueuePolicy")
    denies = [s for p in policies.values() for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert len(denies) == 2 and all(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in denies)


def test_a_visibility_timeout_out_of_range_is_refused_naming_it(synth):
    with pytest.raises(ValueError, match=r"visibility_timeout_s must be in \[0, 43200\], got 50000"):
        synth(lambda stack: SecureQueue(stack, "Work", visibility_timeout_s=50_000, max_receive_count=3, dlq_retention_days=1))


def test_a_rule_target_retries_and_keeps_what_it_cannot_deliver(synth):
    def build(stack):
        bus = events.EventBus(stack, "Bus")
        queue = build_queue(stack, "Target")
        add_rule_with_dead_letter_queue(stack, bus=bus, event_pattern=events.EventPattern(detail_type=["X"]),
                                        target=functools.partial(targets.SqsQueue, queue), retry_attempts=5,
                                        max_event_age_s=3600, dlq_retention_days=7)

    template = synth(build)
    (rule,) = template.find_resources("AWS::Events::Rule").values()
    (target,) = rule["Properties"]["Targets"]
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 5, "MaximumEventAgeInSeconds": 3600}
    assert "DeadLetterConfig" in target
    template.has_resource_properties("AWS::SQS::Queue", {"MessageRetentionPeriod": 7 * 86_400, "SqsManagedSseEnabled": True})
