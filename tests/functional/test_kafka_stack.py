"""A ``kafka`` consumer through the whole stack, embedded: its declaration synthesizes a Kafka mapping
(not a rule and queue) and the runtime feeds it from the local Kafka cluster; the kit's own consumer
code (the shipped image classifier's) scores what a producer writes to the topic, in either CloudEvents
mode, and the results reach the bus."""

from __future__ import annotations

import dataclasses
import json

import pytest
from inferbus_lambda.contracts import ImageSubmitted, new_event
from inferbus_lambda.sources.kafka import binary_mode

from inferbus.local import LocalPipeline
from inferbus.model.declarations import Pipeline
from inferbus.model.kafka import KafkaTopic
from inferbus.model.settings import ConsumerSettings
from tests.declared import PIPELINE

confluent_kafka = pytest.importorskip("confluent_kafka")
CLUSTER = "arn:aws:kafka:us-east-1:123456789012:cluster/images/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0-1"


def kafka_fed(consumer):
    return dataclasses.replace(consumer, channel="kafka", broker=KafkaTopic(topic="images", cluster_arn=CLUSTER),
                               settings=dataclasses.replace(consumer.settings, batch_size=ConsumerSettings().batch_size,
                                                            max_batching_window_s=ConsumerSettings().max_batching_window_s))


def test_a_kafka_fed_consumer_scores_what_a_producer_writes_and_publishes_on_the_bus():
    consumer = kafka_fed(next(c for c in PIPELINE.consumers if "ImageSubmitted" == c.accepts.type))
    with LocalPipeline(pipeline=Pipeline(consumers=(consumer,))) as pipeline:
        (source,) = [s for s in pipeline.event_sources if s.spec.kafka is not None]
        running = pipeline.consumer(consumer.name)  # found by its function: it has no queue
        assert running.source is source and running.queue_url == ""
        assert source.spec.kafka.topic == "images" and source.spec.kafka.group_id == consumer.name
        producer = confluent_kafka.Producer({"bootstrap.servers": pipeline.kafka_bootstrap_servers, "log_level": 3})
        events = [new_event(ImageSubmitted(pixels=[n % 16] * 64), source="camera", event_id=f"img-{n}") for n in range(6)]
        for n, event in enumerate(events):
            if n % 2:  # binary mode: attributes in ce_* headers, the data as the value
                headers, value = binary_mode(event)
                producer.produce("images", key=str(n), value=value, headers=headers)
            else:
                producer.produce("images", key=str(n), value=event.model_dump_json(exclude_none=True))
        producer.produce("images", key="bad", value=b"not a cloudevent")
        assert producer.flush(10) == 0
        pipeline.drain(timeout_s=120)
        delivered = pipeline.tapped_events()
        invalid = pipeline.invalid_events()
    results = [e for e in delivered if e["detail-type"] == consumer.result_type]
    assert sorted(e["detail"]["subject"] for e in results) == sorted(event.id for event in events)
    assert len(invalid) == 1 and "not JSON" in json.dumps(invalid[0])  # refused with its reason
