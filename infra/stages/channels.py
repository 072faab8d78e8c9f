"""The ``channels`` stage (``-c stage=channels``): every channel a consumer can be fed by, in one template to
inspect and test without a broker. Nothing here is deployed by any other stage.

The claims in Redis (ElastiCache Serverless Valkey, its VPC, IAM auth), one FIFO consumer (the risk scorer, in
order per customer), one Kafka-fed and one RabbitMQ-fed image classifier against the placeholder brokers (see
docs/channels.md): an ARN in the account's partition that no one owns, so the template synthesizes, passes cdk-nag and can be read, and a deploy of it fails at the event source
mapping, never by reaching someone else's broker.
"""

from __future__ import annotations

import dataclasses

from inferbus.model.declarations import Channel
from inferbus.model.kafka import KafkaTopic
from inferbus.model.rabbitmq import RabbitMqQueue
from inferbus.model.settings import ConsumerSettings
from pipeline.image_classifier import COMPONENTS as IMAGE_CLASSIFIER
from pipeline.risk_scorer import COMPONENTS as RISK_SCORER

__all__ = ["COMPONENTS", "PLACEHOLDER_KAFKA_BOOTSTRAP_SERVERS", "PLACEHOLDER_MQ_BROKER_ARN", "PLACEHOLDER_MQ_SECRET_ARN",
           "PLACEHOLDER_MSK_CLUSTER_ARN",
           "SETTINGS"]

# Setting defaults for this stage; `-c key=value` still overrides each.
SETTINGS = {"claims_store": "redis"}

# Placeholder brokers for the Kafka- and RabbitMQ-fed consumers (reserved example account 123456789012).
PLACEHOLDER_MSK_CLUSTER_ARN = "arn:aws:kafka:us-east-1:123456789012:cluster/inferbus-channels/00000000-0000-0000-0000-000000000000-1"
PLACEHOLDER_KAFKA_BOOTSTRAP_SERVERS = ("b-1.inferbus-channels.example.internal:9096",)
PLACEHOLDER_MQ_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:inferbus-channels-rabbitmq-AbCdEf"
PLACEHOLDER_MQ_BROKER_ARN = "arn:aws:mq:us-east-1:123456789012:broker:inferbus-channels:b-00000000-0000-0000-0000-000000000000"

_SCORER = next(iter(RISK_SCORER))
_CLASSIFIER = next(iter(IMAGE_CLASSIFIER))

COMPONENTS = (
    # In order per customer: one FIFO message group per customer id.
    dataclasses.replace(_SCORER, channel=Channel.FIFO, group_by="$.detail.data.customer.id",
                        settings=dataclasses.replace(_SCORER.settings, batch_size=10, max_batching_window_s=0)),
    # ImageSubmitted from an MSK topic, in order per partition (the topic holds the batch settings).
    dataclasses.replace(_CLASSIFIER, name="image-classifier-kafka",
                        description="ImageSubmitted from a Kafka topic (MSK), in order per partition",
                        channel=Channel.KAFKA, broker=KafkaTopic(topic="images", cluster_arn=PLACEHOLDER_MSK_CLUSTER_ARN),
                        settings=ConsumerSettings(max_concurrency=4, max_receive_count=3)),
    # ImageSubmitted from a RabbitMQ queue on the placeholder Amazon MQ broker, its credential made by the stack.
    dataclasses.replace(_CLASSIFIER, name="image-classifier-rabbitmq",
                        description="ImageSubmitted from a RabbitMQ queue (Amazon MQ)",
                        channel=Channel.RABBITMQ, broker=RabbitMqQueue(queue="images", broker_arn=PLACEHOLDER_MQ_BROKER_ARN,
                                                                      credentials_secret_arn=PLACEHOLDER_MQ_SECRET_ARN),
                        settings=dataclasses.replace(_CLASSIFIER.settings, max_receive_count=5)),
)
