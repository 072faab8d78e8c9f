"""An SQS queue with its own dead-letter queue.

Secure defaults
---------------
- Server-side encryption with SQS-managed keys (SSE-SQS) on both queues: EventBridge can
  deliver to it without a customer key policy, and there is no key to rotate or pay for.
- ``enforce_ssl``: a queue policy denies every request not made over TLS.
- The DLQ keeps messages for ``dlq_retention_days`` (default 14, the maximum).
- ``fifo``: both queues FIFO (a FIFO queue's DLQ must be one), the work queue deduplicating
  by content and in high-throughput mode (deduplication and throughput per message group).
"""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ..nag import acknowledge_target_dead_letter_queue


def build_queue(scope: Construct, construct_id: str, **props: object) -> sqs.Queue:
    """The one place queues get their encryption and TLS policy."""
    return sqs.Queue(scope, construct_id, encryption=sqs.QueueEncryption.SQS_MANAGED, enforce_ssl=True, **props)


class SecureQueue(Construct):
    """A work queue plus its DLQ.

    Parameters
    ----------
    visibility_timeout_s
        Visibility timeout of the work queue, 0-43,200 s.
    max_receive_count
        Deliveries before a message moves to the DLQ, 1-1,000.
    dlq_retention_days
        DLQ retention, 1-14 days.
    fifo
        FIFO queues (see the module), for a channel ordered per message group. Default False.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, visibility_timeout_s: int, max_receive_count: int, dlq_retention_days: int,
        fifo: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        if not 0 <= visibility_timeout_s <= 43_200:
            raise ValueError(f"visibility_timeout_s must be in [0, 43200], got {visibility_timeout_s}")
        ordering: dict[str, object] = {"fifo": True} if fifo else {}
        self.dead_letter_queue = build_queue(self, "DeadLetterQueue", retention_period=Duration.days(dlq_retention_days),
                                             **ordering)
        if fifo:
            ordering |= {"content_based_deduplication": True, "deduplication_scope": sqs.DeduplicationScope.MESSAGE_GROUP,
                         "fifo_throughput_limit": sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID}
        self.queue = build_queue(
            self,
            "Queue",
            visibility_timeout=Duration.seconds(visibility_timeout_s),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=max_receive_count),
            **ordering,
        )


def add_rule_with_dead_letter_queue(
    scope: Construct,
    *,
    bus: events.IEventBus,
    event_pattern: events.EventPattern,
    target: Callable[..., events.IRuleTarget],
    retry_attempts: int,
    max_event_age_s: int,
    dlq_retention_days: int,
    description: str = "",
) -> tuple[events.Rule, sqs.Queue]:
    """Add ``TargetDeadLetterQueue`` and ``Rule`` to ``scope``: a rule whose one target retries
    ``retry_attempts`` times for up to ``max_event_age_s`` and keeps what it cannot deliver.

    ``target`` is a target class (or a ``functools.partial`` of one with its resource), called
    with ``dead_letter_queue``, ``retry_attempts`` and ``max_event_age``.
    """
    dead_letter_queue = build_queue(scope, "TargetDeadLetterQueue", retention_period=Duration.days(dlq_retention_days))
    acknowledge_target_dead_letter_queue(dead_letter_queue)
    rule = events.Rule(scope, "Rule", event_bus=bus, event_pattern=event_pattern, description=description,
                       targets=[target(dead_letter_queue=dead_letter_queue, retry_attempts=retry_attempts,
                                       max_event_age=Duration.seconds(max_event_age_s))])
    return rule, dead_letter_queue
