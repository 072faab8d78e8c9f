"""Bare stacks holding a RabbitMQ-fed consumer: the stack's own broker, or an existing one by placeholder ARNs."""

from __future__ import annotations

from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from inferbus.model.declarations import Consumer, EventFilter
from inferbus.model.rabbitmq import PLACEHOLDER_BROKER_ARN, PLACEHOLDER_SECRET_ARN, RabbitMqQueue
from inferbus.model.settings import ConsumerSettings, InferbusSettings
from infra.constructs.function import FunctionCode, FunctionSpec
from infra.constructs.rabbitmq_consumer import RabbitMqConsumer
from tests.constructs.ordered_consumer_stack import HANDLER_DIR

OWN_BROKER = Consumer(name="order-scorer", handler="order_scorer.handler.lambda_handler", accepts=EventFilter("OrderPlaced"),
                      emits="OrderScored", channel="rabbitmq", broker=RabbitMqQueue(queue="orders", virtual_host="/shop"),
                      settings=ConsumerSettings(batch_size=200, max_batching_window_s=2, max_receive_count=4))
EXISTING_BROKER = Consumer(name="order-auditor", handler="order_scorer.handler.lambda_handler",
                           accepts=EventFilter("OrderPlaced"), emits="OrderScored", channel="rabbitmq",
                           broker=RabbitMqQueue(queue="audit", broker_arn=PLACEHOLDER_BROKER_ARN,
                                                credentials_secret_arn=PLACEHOLDER_SECRET_ARN))


def add_consumer(stack: Stack, declaration: Consumer = OWN_BROKER) -> RabbitMqConsumer:
    """``declaration``'s RabbitMQ consumer on ``stack`` (code a plain directory: nothing to bundle)."""
    settings = declaration.settings
    code = FunctionCode(declaration.handler, zip_code=lambda_.Code.from_asset(str(HANDLER_DIR)),
                        runtime=lambda_.Runtime(f"python{InferbusSettings().python_version}", lambda_.RuntimeFamily.PYTHON))
    spec = FunctionSpec(code=code, architecture=lambda_.Architecture.ARM_64, memory_mb=settings.memory_mb,
                        timeout_s=settings.timeout_s, environment={}, log_retention=logs.RetentionDays.ONE_MONTH,
                        description=declaration.description)
    return RabbitMqConsumer(stack, declaration.construct_id, queue=declaration.broker, settings=settings, function=spec)


if __name__ == "__main__":  # synthesized with the app's cdk-nag gate by a test (a failing gate ends the process)
    import sys

    from infra.nag import add_nag_checks

    app = App(outdir=sys.argv[1])
    add_nag_checks(app)
    add_consumer(Stack(app, "OwnBroker"))
    add_consumer(Stack(app, "ExistingBroker"), EXISTING_BROKER)
    app.synth()
