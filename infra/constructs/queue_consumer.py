"""EventBridge rule -> SQS queue (+ DLQ), and the Lambda consumer that drains it.

Secure defaults
---------------
- Both queues encrypted (SSE-SQS) and TLS-only (see :mod:`secure_queue`); the rule target
  has a DLQ of its own, so an event EventBridge cannot deliver is kept, not dropped.
- The function's role is its own and holds only: writing to its log group, consuming its
  queue, X-Ray segments; callers add grants for what the function calls (see :mod:`function`).
- Tracing active; logs retained ``log_retention``.
- The event source reports batch item failures, so one bad record never fails its batch,
  and caps concurrency (``max_concurrency``) for backpressure.
"""

from __future__ import annotations

import functools
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda_event_sources as event_sources
from constructs import Construct

from inferbus.model.settings import ConsumerSettings

from .function import FunctionSpec, add_function
from .secure_queue import SecureQueue, add_rule_with_dead_letter_queue


class RoutedQueue(Construct):
    """A rule that routes matching events to a queue with a DLQ: a consumer's inbox.

    Parameters
    ----------
    bus
        The bus the rule listens on.
    event_pattern
        Which events the queue gets.
    visibility_timeout_s, max_receive_count, dlq_retention_days
        The queue (see :class:`SecureQueue`).
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
        visibility_timeout_s: int,
        max_receive_count: int,
        dlq_retention_days: int,
        target_retry_attempts: int,
        target_max_event_age_s: int,
        description: str = "",
    ) -> None:
        super().__init__(scope, construct_id)
        self.queues = SecureQueue(
            self,
            "Queues",
            visibility_timeout_s=visibility_timeout_s,
            max_receive_count=max_receive_count,
            dlq_retention_days=dlq_retention_days,
        )
        self.queue = self.queues.queue
        self.dead_letter_queue = self.queues.dead_letter_queue
        self.rule, self.target_dead_letter_queue = add_rule_with_dead_letter_queue(
            self,
            bus=bus,
            event_pattern=event_pattern,
            target=functools.partial(targets.SqsQueue, self.queue),
            retry_attempts=target_retry_attempts,
            max_event_age_s=target_max_event_age_s,
            dlq_retention_days=dlq_retention_days,
            description=description,
        )


class QueueConsumer(RoutedQueue):
    """One consumer of one kind of event: its routed queue and the function that drains it.

    Parameters
    ----------
    bus, event_pattern, target_retry_attempts, target_max_event_age_s
        See :class:`RoutedQueue`.
    settings
        Batch size, window, concurrency, retries, memory, timeout.
    function
        The function (code, environment, logs); memory and timeout come from ``settings``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bus: events.IEventBus,
        event_pattern: events.EventPattern,
        settings: ConsumerSettings,
        function: FunctionSpec,
        target_retry_attempts: int,
        target_max_event_age_s: int,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            bus=bus,
            event_pattern=event_pattern,
            visibility_timeout_s=settings.visibility_timeout_s,
            max_receive_count=settings.max_receive_count,
            dlq_retention_days=settings.dlq_retention_days,
            target_retry_attempts=target_retry_attempts,
            target_max_event_age_s=target_max_event_age_s,
            description=function.description,
        )
        if (function.memory_mb, function.timeout_s) != (settings.memory_mb, settings.timeout_s):
            raise ValueError(f"{construct_id}: memory and timeout come from ConsumerSettings, not the FunctionSpec")
        self.function, self.role, self.log_group = add_function(self, function)
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
