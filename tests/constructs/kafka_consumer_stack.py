"""A bare stack holding Kafka-fed consumers (MSK and self-managed) and a Kafka -> bus bridge, built from
test-only declarations against placeholder ARNs (the shipped pipeline has none)."""

from __future__ import annotations

from aws_cdk import App, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from inferbus.model.declarations import Consumer, EventFilter
from inferbus.model.kafka import KafkaBridge, KafkaTopic
from inferbus.model.settings import ConsumerSettings, InferbusSettings
from infra.constructs.function import FunctionCode, FunctionSpec
from infra.constructs.kafka_consumer import KafkaConsumer, KafkaToBus
from tests.constructs.ordered_consumer_stack import HANDLER_DIR

CLUSTER = "arn:aws:kafka:us-east-1:123456789012:cluster/payments/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0-1"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka-scram-AbCdEf"
MSK = Consumer(name="payment-scorer", handler="order_scorer.handler.lambda_handler", accepts=EventFilter("OrderPlaced"),
               emits="OrderScored", channel="kafka", broker=KafkaTopic(topic="payments", cluster_arn=CLUSTER),
               settings=ConsumerSettings(max_concurrency=4, max_receive_count=3))
SELF_MANAGED = Consumer(name="order-scorer", handler="order_scorer.handler.lambda_handler",
                        accepts=EventFilter("OrderPlaced"), emits="OrderScored", channel="kafka",
                        broker=KafkaTopic(topic="orders", bootstrap_servers=("b-1.example.com:9096", "b-2.example.com:9096"),
                                          secret_arn=SECRET, starting_position="LATEST", batch_size=100,
                                          max_batching_window_s=5, consumer_group_id="orders-scoring"))
BRIDGE = KafkaBridge(name="payments-in", broker=KafkaTopic(topic="payments", cluster_arn=CLUSTER))


def add_consumer(stack: Stack, declaration: Consumer = MSK) -> KafkaConsumer:
    """``declaration``'s Kafka consumer on ``stack``, as a stack builds one (code a plain directory: nothing to bundle)."""
    settings = declaration.settings
    code = FunctionCode(declaration.handler, zip_code=lambda_.Code.from_asset(str(HANDLER_DIR)),
                        runtime=lambda_.Runtime(f"python{InferbusSettings().python_version}", lambda_.RuntimeFamily.PYTHON))
    spec = FunctionSpec(code=code, architecture=lambda_.Architecture.ARM_64, memory_mb=settings.memory_mb,
                        timeout_s=settings.timeout_s, environment={"RECORD_SOURCE": "kafka"},
                        log_retention=logs.RetentionDays.ONE_MONTH, description=declaration.description)
    return KafkaConsumer(stack, declaration.construct_id, topic=declaration.broker, settings=settings, function=spec)


def add_bridge(stack: Stack, bridge: KafkaBridge = BRIDGE) -> KafkaToBus:
    return KafkaToBus(stack, "PaymentsIn", bridge=bridge, bus=events.EventBus(stack, "Bus"))


if __name__ == "__main__":  # synthesized with the app's cdk-nag gate by a test (a failing gate ends the process)
    import sys

    from infra.nag import add_nag_checks

    app = App(outdir=sys.argv[1])
    add_nag_checks(app)
    stack = Stack(app, "Kafka")
    add_consumer(stack, MSK)
    add_consumer(stack, SELF_MANAGED)
    add_bridge(stack)
    app.synth()
