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
