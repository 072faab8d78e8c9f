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

Ordered (``group_by``, a ``fifo`` channel)
------------------------------------------
An EventBridge rule can give an SQS FIFO target only a fixed ``MessageGroupId``
(``SqsParameters``), so per-key groups take one step more: the rule delivers to an *arrivals*
FIFO queue in one group (arrival order, EventBridge's retries deduplicated by content), and an
EventBridge Pipe moves each message, body unchanged, to the consumer's FIFO queue with its
``MessageGroupId`` read from the event (``group_by``) and its ``MessageDeduplicationId`` the
CloudEvent's id (a producer's republished event is dropped within SQS's 5-minute window). The
consumer's queue and DLQ are FIFO in high-throughput mode; Lambda processes each group in
order. The pipe's role may only consume the arrivals queue and send to the consumer's.
"""

from __future__ import annotations

import functools
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as event_sources
from aws_cdk import aws_pipes as pipes
from aws_cdk import aws_sqs as sqs
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
    group_by
        Order per key: FIFO queues, the key a path into the event (see the module). Default
        ``None``: a standard queue, unordered.
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
        group_by: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.group_by = group_by
        self.queues = SecureQueue(
            self,
            "Queues",
            visibility_timeout_s=visibility_timeout_s,
            max_receive_count=max_receive_count,
            dlq_retention_days=dlq_retention_days,
            fifo=group_by is not None,
        )
        self.queue = self.queues.queue
        self.dead_letter_queue = self.queues.dead_letter_queue
        self.arrivals: SecureQueue | None = None
        target = functools.partial(targets.SqsQueue, self.queue)
        if group_by is not None:
            self.arrivals = SecureQueue(self, "Arrivals", visibility_timeout_s=ARRIVALS_VISIBILITY_S,
                                        max_receive_count=max_receive_count, dlq_retention_days=dlq_retention_days, fifo=True)
            # One fixed group: the rule's target can set no other, and one group keeps the order events arrived in.
            target = functools.partial(targets.SqsQueue, self.arrivals.queue, message_group_id=construct_id)
            self.pipe = add_ordering_pipe(self, source=self.arrivals.queue, target=self.queue, group_by=group_by)
        self.rule, self.target_dead_letter_queue = add_rule_with_dead_letter_queue(
            self,
            bus=bus,
            event_pattern=event_pattern,
            target=target,
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
    group_by
        See :class:`RoutedQueue`: ordered per key, and Lambda processes each group in order.
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
        group_by: str | None = None,
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
            group_by=group_by,
        )
        if (function.memory_mb, function.timeout_s) != (settings.memory_mb, settings.timeout_s):
            raise ValueError(f"{construct_id}: memory and timeout come from ConsumerSettings, not the FunctionSpec")
        self.function, self.role, self.log_group = add_function(self, function)
        self.function.add_event_source(
            event_sources.SqsEventSource(
                self.queue,
                batch_size=settings.batch_size,
                # Lambda takes no batching window from a FIFO queue
                max_batching_window=None if group_by else Duration.seconds(settings.max_batching_window_s),
                report_batch_item_failures=True,
                max_concurrency=settings.max_concurrency,
            )
        )


ARRIVALS_VISIBILITY_S = 60  # the pipe holds a batch only for its SendMessage calls
CLOUDEVENT_ID = "$.body.detail.id"  # in the pipe's event, the SQS record, whose body the rule wrote


def pipe_path(group_by: str) -> str:
    """``group_by`` (a path into the EventBridge event) as the pipe reads it: inside the record's body.

    >>> pipe_path("$.detail.data.customer_id")
    '$.body.detail.data.customer_id'
    """
    return "$.body" + group_by.removeprefix("$")


def add_ordering_pipe(scope: Construct, *, source: sqs.IQueue, target: sqs.IQueue, group_by: str) -> pipes.CfnPipe:
    """Add ``PipeRole`` and ``Pipe`` to ``scope``: each message of ``source`` to ``target``, body unchanged,
    in the message group ``group_by`` reads and deduplicated by the CloudEvent's id."""
    role = iam.Role(scope, "PipeRole", assumed_by=iam.ServicePrincipal("pipes.amazonaws.com"))
    source.grant_consume_messages(role)
    target.grant_send_messages(role)
    return pipes.CfnPipe(
        scope, "Pipe", role_arn=role.role_arn, source=source.queue_arn, target=target.queue_arn,
        description=f"Orders by {group_by}: arrivals to the consumer's FIFO queue",
        source_parameters=pipes.CfnPipe.PipeSourceParametersProperty(
            sqs_queue_parameters=pipes.CfnPipe.PipeSourceSqsQueueParametersProperty(batch_size=10)),
        target_parameters=pipes.CfnPipe.PipeTargetParametersProperty(
            input_template="<$.body>",  # the message the rule wrote, as it was
            sqs_queue_parameters=pipes.CfnPipe.PipeTargetSqsQueueParametersProperty(
                message_group_id=pipe_path(group_by), message_deduplication_id=CLOUDEVENT_ID)))


def consumer_environment(**values: Any) -> dict[str, str]:
    """Lambda environment values are strings; convert once, here."""
    return {key: str(value) for key, value in values.items()}
