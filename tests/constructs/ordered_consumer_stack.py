"""A bare stack holding one consumer built from a test-only ``fifo`` declaration (the shipped pipeline has none)."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import App, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from inferbus.model.declarations import Consumer, EventFilter
from inferbus.model.settings import ConsumerSettings, InferbusSettings
from infra.constructs.function import FunctionCode, FunctionSpec
from infra.constructs.queue_consumer import QueueConsumer

HANDLER_DIR = Path(__file__).parent / "ordered_consumer_code"  # a directory asset: nothing to bundle
ORDERED = Consumer(name="order-scorer", handler="order_scorer.handler.lambda_handler", accepts=EventFilter("OrderPlaced"),
                   emits="OrderScored", channel="fifo", group_by="$.detail.data.customer_id",
                   settings=ConsumerSettings(batch_size=10, max_concurrency=5))


def add_consumer(stack: Stack, declaration: Consumer = ORDERED) -> QueueConsumer:
    """``declaration``'s queue consumer on ``stack``, as the inferbus stack builds one (code a plain directory: nothing to bundle;
    the runtime the settings choose)."""
    settings = declaration.settings
    code = FunctionCode(declaration.handler, zip_code=lambda_.Code.from_asset(str(HANDLER_DIR)),
                        runtime=lambda_.Runtime(f"python{InferbusSettings().python_version}", lambda_.RuntimeFamily.PYTHON))
    spec = FunctionSpec(code=code, architecture=lambda_.Architecture.ARM_64, memory_mb=settings.memory_mb,
                        timeout_s=settings.timeout_s, environment={}, log_retention=logs.RetentionDays.ONE_MONTH,
                        description=declaration.description)
    bus = events.EventBus(stack, "Bus")
    return QueueConsumer(stack, declaration.construct_id, bus=bus,
                         event_pattern=events.EventPattern(detail_type=[declaration.accepts.type]), settings=settings,
                         function=spec, target_retry_attempts=3, target_max_event_age_s=3600, group_by=declaration.group_by)


if __name__ == "__main__":  # synthesized with the app's cdk-nag gate by a test (a failing gate ends the process)
    import sys

    from infra.nag import add_nag_checks

    app = App(outdir=sys.argv[1])
    add_nag_checks(app)
    add_consumer(Stack(app, "Ordered"))
    app.synth()
