"""EventBridge rule -> SQS queue (+ DLQ) -> Lambda consumer with partial batch responses.

Secure defaults
---------------
- Both queues encrypted (SSE-SQS) and TLS-only (see :mod:`secure_queue`); the rule target
  has a DLQ of its own, so an event EventBridge cannot deliver is kept, not dropped.
- The function's role is its own and holds only: writing to its log group, consuming its
  queue, X-Ray segments; callers add grants for what the function calls.
- Tracing active; logs retained ``log_retention_days``.
- The event source reports batch item failures, so one bad record never fails its batch,
  and caps concurrency (``max_concurrency``) for backpressure.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..nag import acknowledge_target_dead_letter_queue, acknowledge_tracing_wildcard
from ..settings import ConsumerSettings
from .secure_queue import SecureQueue, build_queue


class QueueConsumer(Construct):
    """One consumer of one kind of event.

    Parameters
    ----------
    bus
        The bus the rule listens on.
    event_pattern
        Which events this consumer gets.
    settings
        Batch size, window, concurrency, retries, memory, timeout.
    code, handler, runtime, architecture
        The function.
    environment
        Its configuration (the function reads nothing else).
    log_retention
        Log group retention.
    target_retry_attempts, target_max_event_age_s
        EventBridge's delivery retries to the queue before the target DLQ.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bus: events.IEventBus,
        event_pattern: events.EventPattern,
        settings: ConsumerSettings,
        code: lambda_.Code,
        handler: str,
        runtime: lambda_.Runtime,
        architecture: lambda_.Architecture,
        environment: dict[str, str],
        log_retention: logs.RetentionDays,
        target_retry_attempts: int,
        target_max_event_age_s: int,
        description: str = "",
    ) -> None:
        super().__init__(scope, construct_id)
        self.queues = SecureQueue(
            self,
            "Queues",
            visibility_timeout_s=settings.visibility_timeout_s,
            max_receive_count=settings.max_receive_count,
            dlq_retention_days=settings.dlq_retention_days,
        )
        self.queue = self.queues.queue
        self.dead_letter_queue = self.queues.dead_letter_queue
        self.target_dead_letter_queue = build_queue(
            self, "TargetDeadLetterQueue", retention_period=Duration.days(settings.dlq_retention_days)
        )
        acknowledge_target_dead_letter_queue(self.target_dead_letter_queue)
        self.rule = events.Rule(
            self,
            "Rule",
            event_bus=bus,
            event_pattern=event_pattern,
            description=description,
            targets=[
                targets.SqsQueue(
                    self.queue,
                    dead_letter_queue=self.target_dead_letter_queue,
                    retry_attempts=target_retry_attempts,
                    max_event_age=Duration.seconds(target_max_event_age_s),
                )
            ],
        )

        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{construct_id}: its own logs, its queue, X-Ray; nothing else unless granted",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn],
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            code=code,
            handler=handler,
            runtime=runtime,
            architecture=architecture,
            memory_size=settings.memory_mb,
            timeout=Duration.seconds(settings.timeout_s),
            environment=environment,
            role=self.role,
            log_group=self.log_group,
            tracing=lambda_.Tracing.ACTIVE,
            description=description,
        )
        acknowledge_tracing_wildcard(self.role)
        self.function.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=settings.batch_size,
                max_batching_window=Duration.seconds(settings.max_batching_window_s),
                report_batch_item_failures=True,
                max_concurrency=settings.max_concurrency,
            )
        )


def consumer_environment(**values: Any) -> dict[str, str]:
    """Lambda environment values are strings; convert once, here."""
    return {key: str(value) for key, value in values.items()}
