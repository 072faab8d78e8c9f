"""cdk-nag: the AwsSolutions pack, and every finding inferbus accepts, with its reason.

Acknowledgments name the exact finding (``Rule[Finding]``) and sit on the construct that
causes it, so the same rule elsewhere still fails the gate.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Validations
from aws_cdk import aws_iam as iam
from cdk_nag import AwsSolutionsChecks

XRAY_WILDCARD = "AwsSolutions::AwsSolutions-IAM5[Resource::*]"


def add_nag_checks(app: App) -> None:
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def acknowledge_tracing_wildcard(role: iam.IRole) -> None:
    """Active tracing grants ``xray:PutTraceSegments``/``PutTelemetryRecords`` on ``*``."""
    Validations.of(role).acknowledge(
        Acknowledgment(
            id=XRAY_WILDCARD,
            reason="X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions: "
            "Resource '*' is the only form AWS accepts for them, and the actions are write-only telemetry.",
        )
    )


def acknowledge_target_dead_letter_queue(queue: object) -> None:
    """cdk-nag sees only SQS redrive policies, not an EventBridge target's DeadLetterConfig."""
    Validations.of(queue).acknowledge(  # type: ignore[arg-type]
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-SQS3",
            reason="This queue IS a dead-letter queue: the DeadLetterConfig of the EventBridge rule target, "
            "which cdk-nag does not recognise as DLQ use. A DLQ of a DLQ would only move the problem.",
        )
    )


def acknowledge_review_queue(queue: object) -> None:
    """The manual-review queue has no redrive policy, on purpose."""
    Validations.of(queue).acknowledge(  # type: ignore[arg-type]
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-SQS3",
            reason="People read the manual-review queue: every listing is a receive, so a redrive policy would move "
            "cases still waiting for a decision to a DLQ after a few looks. A case nobody decides is not lost: its "
            "workflow times out and emits ReviewFailed; the queue keeps messages 14 days, longer than that timeout.",
        )
    )


def acknowledge_state_machine_role(role: iam.IRole) -> None:
    """Tracing and log delivery: what a state machine needs on ``*`` because nothing narrower exists."""
    Validations.of(role).acknowledge(
        Acknowledgment(
            id=XRAY_WILDCARD,
            reason="A state machine with tracing and logging needs xray:PutTraceSegments, PutTelemetryRecords, "
            "GetSamplingRules, GetSamplingTargets and the CloudWatch Logs delivery actions (logs:CreateLogDelivery, "
            "GetLogDelivery, UpdateLogDelivery, DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, "
            "DescribeResourcePolicies, DescribeLogGroups); none of them supports resource-level permissions.",
        )
    )
