"""Declarations: checked as a whole, names derived from one name, settings overridden from context."""

from __future__ import annotations

import pytest

from inferbus.model.declarations import (
    DEFAULT_GROUP_BY,
    Channel,
    Consumer,
    DeclarationError,
    EventFilter,
    Pipeline,
    Producer,
    Route,
    Setting,
    Task,
    Workflow,
)
from inferbus.model.kafka import KafkaBridge, KafkaTopic
from inferbus.model.rabbitmq import PLACEHOLDER_BROKER_ARN, PLACEHOLDER_SECRET_ARN, RabbitMqQueue
from inferbus.model.settings import ConsumerSettings, InferbusSettings, SettingsError
from inferbus.reference import update_readme
from infra.configuration import parse_context
from tests.declared import PIPELINE

CLUSTER = "arn:aws:kafka:us-east-1:123456789012:cluster/payments/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0-1"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka-scram-AbCdEf"
TOPIC = KafkaTopic(topic="orders", cluster_arn=CLUSTER)


def consumer(name="iris-classifier", **changes):
    fields = {"handler": "iris.handler.lambda_handler", "accepts": EventFilter("IrisSubmitted"),
              "emits": "IrisClassified", "models": ("iris",)}
    return Consumer(name=name, **fields | changes)


def test_every_name_derives_from_the_components_name():
    declared = consumer()
    assert declared.construct_id == "IrisClassifier"
    assert declared.result_source == "inferbus.iris-classifier"
    assert declared.output_key("QueueUrl") == "IrisClassifierQueueUrl"
    flow = Workflow(name="fraud-check", definition="f.asl.json", accepts=EventFilter("X"), emits=("Y",), failure="Z",
                    tasks={"ScoreMlp": Task("f.score.lambda_handler")}, review_queue="fraud-review")
    assert (flow.task_construct_id("ScoreMlp"), flow.task_service("ScoreMlp")) == ("FraudCheckScoreMlp", "fraud-check-score-mlp")
    assert flow.review_queue_output == "FraudReviewQueueUrl"


@pytest.mark.parametrize(("make", "message"), [
    (lambda: consumer(name="IrisClassifier"), "must be kebab-case"),
    (lambda: consumer(name="x" * 41), "at most 40"),
    (lambda: Pipeline((consumer(), consumer())), r"declared more than once: \['iris-classifier'\]"),
    (lambda: Pipeline((consumer(accepts=EventFilter("IrisSubmitted", sources=(Producer("nobody"),))),)),
     r"Producer\('nobody'\) names no component"),
    (lambda: Workflow(name="w", definition="w.asl.json", accepts=EventFilter("X"), emits=("Done",), failure="F",
                      tasks={"Accept": Task("h.lambda_handler")}), "not 'Accept'"),
    (lambda: Workflow(name="w", definition="w.asl.json", accepts=EventFilter("X"), emits=(), failure="F"),
     "^w: emits must name at least one result type"),
    (lambda: consumer(emits=("A", "B")), r"^iris-classifier: a consumer emits one result type"),
    (lambda: Route(name="offers", accepts="TransactionApproved"), "^offers: accepts must be an EventFilter"),
    (lambda: consumer(channel="kafka"), r"^iris-classifier: a 'kafka' channel needs broker=KafkaTopic\("),
    (lambda: consumer(channel="kafka", broker=TOPIC, settings=ConsumerSettings(batch_size=50)),
     r"batch is its topic's: declare KafkaTopic\(batch_size=..."),
    (lambda: consumer(broker=TOPIC), "broker connects a broker channel; this consumer's channel is 'sqs'"),
    (lambda: KafkaTopic(topic="orders"), r"^KafkaTopic\('orders'\): give exactly one of cluster_arn"),
    (lambda: KafkaTopic(topic="orders", cluster_arn="arn:aws:kafka:us-east-1:123456789012:cluster/x"), "must be an MSK cluster ARN"),
    (lambda: KafkaTopic(topic="orders", bootstrap_servers=("b-1:9092",)), "needs secret_arn"),
    (lambda: KafkaTopic(topic="orders", bootstrap_servers=("b-1",), secret_arn=SECRET), "'host:port' each, got 'b-1'"),
    (lambda: KafkaTopic(topic="or ders", cluster_arn=CLUSTER), "topic must be"),
    (lambda: KafkaTopic(topic="orders", cluster_arn=CLUSTER, batch_size=10_001), "batch_size must be 1-10,000"),
    (lambda: KafkaTopic(topic="orders", cluster_arn=CLUSTER, starting_position="AT_TIMESTAMP"), "starting_position must be"),
    (lambda: KafkaTopic(topic="orders", cluster_arn=CLUSTER, consumer_group_id="a b"), "consumer_group_id must be"),
    (lambda: KafkaBridge(name="Orders", broker=TOPIC), "kebab-case"),
    (lambda: consumer(channel="pigeon"), r"unknown channel 'pigeon' \(available: sqs, fifo"),
    (lambda: consumer(channel="rabbitmq"), r"^iris-classifier: a 'rabbitmq' channel reads a queue: declare "
                                           r"broker=RabbitMqQueue\(queue=...\), got broker=None"),
    (lambda: consumer(broker=RabbitMqQueue(queue="orders")), "is a 'rabbitmq' channel's queue; this consumer's channel "
                                                            "is 'sqs': declare channel='rabbitmq'"),
    (lambda: consumer(channel="rabbitmq", broker=RabbitMqQueue(queue="o"), group_by="$.detail.subject"),
     "group_by orders a 'fifo' channel; this consumer's channel is 'rabbitmq'"),
    (lambda: RabbitMqQueue(queue=""), "^RabbitMqQueue: queue must be a name of 1-255 bytes"),
    (lambda: RabbitMqQueue(queue="q" * 256), "1-255 bytes"),
    (lambda: RabbitMqQueue(queue="amq.gen-1"), "reserved to the broker"),
    (lambda: RabbitMqQueue(queue="a::b"), "may not hold '::'"),
    (lambda: RabbitMqQueue(queue="o", virtual_host=""), "virtual_host must be"),
    (lambda: RabbitMqQueue(queue="o", broker_arn="arn:aws:sqs:us-east-1:111122223333:orders",
                           credentials_secret_arn=PLACEHOLDER_SECRET_ARN), "broker_arn must be an Amazon MQ broker ARN"),
    (lambda: RabbitMqQueue(queue="o", credentials_secret_arn="my-secret"), "credentials_secret_arn must be a Secrets"),
    (lambda: RabbitMqQueue(queue="o", broker_arn=PLACEHOLDER_BROKER_ARN), "an existing broker .* needs credentials_secret_arn"),
    (lambda: consumer(group_by="$.detail.data.customer_id"), "group_by orders a 'fifo' channel"),
    (lambda: consumer(channel="fifo", group_by="$.data.customer_id"), "starting '\\$.detail.'"),
    (lambda: consumer(channel="fifo", group_by="$.detail.data[0]"), "group_by must be a path of fields"),
    (lambda: consumer(channel="fifo", settings=ConsumerSettings(batch_size=11)), r"batches of at most 10 .*batch_size=11"),
])
def test_a_declaration_that_cannot_work_fails_at_once_naming_it_and_why(make, message):
    with pytest.raises(DeclarationError, match=message):
        make()


def test_a_consumers_channel_is_sqs_unless_declared_and_fifo_is_ordered_by_a_key():
    assert (consumer().channel, consumer().ordered, consumer().group_by) == (Channel.SQS, False, None)
    by_source = consumer(channel="fifo", settings=ConsumerSettings(batch_size=10))
    assert (by_source.channel, by_source.ordered, by_source.group_by) == (Channel.FIFO, True, DEFAULT_GROUP_BY)
    by_customer = consumer(channel=Channel.FIFO, group_by="$.detail.data.customer-id", settings=ConsumerSettings(batch_size=1))
    assert by_customer.group_by == "$.detail.data.customer-id"


def test_an_unknown_channel_names_every_channel_there_is():
    available = ", ".join(channel.value for channel in Channel)
    for name in ("pigeon", "redis-streams"):
        with pytest.raises(DeclarationError, match=rf"\(available: {available}\)$"):
            consumer(channel=name)


def test_a_rabbitmq_consumer_names_its_queue_on_the_stacks_broker_or_an_existing_one():
    own = consumer(channel="rabbitmq", broker=RabbitMqQueue(queue="orders"))
    assert (own.channel, own.ordered, own.broker.stack_broker, own.broker.queue_key) == (
        Channel.RABBITMQ, False, True, "orders::/")
    existing = RabbitMqQueue(queue="orders", virtual_host="/shop", broker_arn=PLACEHOLDER_BROKER_ARN,
                             credentials_secret_arn=PLACEHOLDER_SECRET_ARN)
    assert (existing.stack_broker, existing.queue_key) == (False, "orders::/shop")
    assert consumer(channel=Channel.RABBITMQ, broker=existing).broker is existing


def test_patterns_resolve_settings_and_producers():
    flow = Workflow(name="w", definition="w.asl.json", emits=("Done",), failure="F",
                    accepts=EventFilter("Scored", sources=(Producer("iris-classifier"),),
                                        data={"score": [{"numeric": [">=", Setting("review_threshold")]}]}))
    pipeline = Pipeline((consumer(),), (flow,))
    assert pipeline.pattern(flow.accepts, InferbusSettings(review_threshold=0.7)) == {
        "detail-type": ["Scored"], "source": ["inferbus.iris-classifier"],
        "detail": {"specversion": ["1.0"], "data": {"score": [{"numeric": [">=", 0.7]}]}}}


def test_overrides_reach_a_consumer_a_task_and_a_route_and_name_a_bad_key():
    flow = Workflow(name="w", definition="w.asl.json", accepts=EventFilter("X"), emits=("Done",), failure="F",
                    tasks={"Score": Task("h.lambda_handler")})
    pipeline = Pipeline((consumer(),), (flow,), (Route(name="offers", accepts=EventFilter("Y")),))
    settings, overrides = parse_context({"stage": "prod", "iris-classifier.batch_size": "20", "w.Score.memory_mb": "2048",
                                         "offers.max_receive_count": "5", "iris-classifier.package": "image",
                                         "@aws-cdk/core:newStyleStackSynthesis": True}, pipeline)
    changed = pipeline.with_overrides(overrides)
    assert settings.staged("Inferbus") == "Inferbus-prod"
    assert changed.component("iris-classifier").settings == ConsumerSettings(batch_size=20, package="image")
    assert changed.component("w").tasks["Score"].settings.memory_mb == 2048
    assert changed.component("offers").settings.max_receive_count == 5
    for context, message in (({"w.memory_mb": "1"}, "write w.<Task>.<setting>"),
                             ({"iris-classifier.batchsize": "1"}, "has no 'batchsize'"),
                             ({"iris-classifier.package": "wheel"}, "must be one of zip, image")):
        with pytest.raises(SettingsError, match=message):
            pipeline.with_overrides(parse_context(context, pipeline)[1])


def test_the_readme_event_table_is_generated_from_the_contracts_and_declarations():
    assert update_readme(PIPELINE, check=True), "README.md's event table is out of date: run `inferbus docs`"


def test_a_kafka_consumer_reads_its_topic_as_its_own_group_unless_one_is_declared():
    kafka = consumer(channel="kafka", broker=TOPIC)
    assert (kafka.channel, kafka.broker.consumer_group_id, kafka.broker.batch_size) == (Channel.KAFKA, "iris-classifier", 500)
    assert kafka.broker.topic_arn == CLUSTER.replace(":cluster/", ":topic/") + "/orders"
    assert kafka.broker.group_arn("iris-classifier") == CLUSTER.replace(":cluster/", ":group/") + "/iris-classifier"
    named = consumer(channel="kafka", broker=KafkaTopic(topic="orders", cluster_arn=CLUSTER, consumer_group_id="risk"))
    assert named.broker.consumer_group_id == "risk"
    self_managed = KafkaTopic(topic="orders", bootstrap_servers="b-1.example.com:9096", secret_arn=SECRET)
    assert (self_managed.managed, self_managed.bootstrap_servers, self_managed.topic_arn) == (False, ("b-1.example.com:9096",), None)
    assert KafkaBridge(name="orders-in", broker=TOPIC).broker.consumer_group_id == "orders-in"
