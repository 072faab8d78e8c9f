"""The same consumer on two channels, embedded: its SQS queue (the baseline) and a Kafka topic.

Declares the shipped image classifier twice, once as shipped (``sqs``: rule -> queue -> Lambda)
and once on a Kafka topic (``kafka``: librdkafka's mock cluster, read as Lambda's Kafka mapping
reads it), sends the same N events through each (PutEvents; a producer writing structured
CloudEvents), drains, and prints each channel's events per second end to end (sent to results on
the bus) and the ratio. Both run in this process on the same machine in the same run; the figures
are the local runtime's, not AWS's.

Usage::

    .venv/bin/python bench/kafka_channel.py [--events 300]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from confluent_kafka import Producer
from inferbus_lambda.contracts import ImageSubmitted, new_event, to_put_events_entry

from inferbus.local import LocalPipeline
from inferbus.model.declarations import Pipeline
from inferbus.model.kafka import KafkaTopic
from inferbus.model.settings import ConsumerSettings
from pipeline import load_pipeline

CLUSTER = "arn:aws:kafka:us-east-1:123456789012:cluster/bench/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0-1"
PUT_EVENTS_LIMIT = 10


def events(count: int, prefix: str) -> list:
    return [new_event(ImageSubmitted(pixels=[n % 16] * 64), source="bench", event_id=f"{prefix}-{n}") for n in range(count)]


def results(pipeline: LocalPipeline, result_type: str) -> int:
    return sum(1 for event in pipeline.tapped_events() if event["detail-type"] == result_type)


def over_sqs(consumer, count: int) -> tuple[float, int]:
    with LocalPipeline(pipeline=Pipeline(consumers=(consumer,))) as pipeline:
        sent = events(count, "sqs")
        started = time.perf_counter()
        for start in range(0, count, PUT_EVENTS_LIMIT):
            pipeline.put_events([to_put_events_entry(e, pipeline.bus_name) for e in sent[start:start + PUT_EVENTS_LIMIT]])
        pipeline.drain(timeout_s=600)
        elapsed = time.perf_counter() - started
        return elapsed, results(pipeline, consumer.result_type)


def over_kafka(consumer, count: int) -> tuple[float, int]:
    kafka = dataclasses.replace(consumer, channel="kafka", broker=KafkaTopic(topic="bench", cluster_arn=CLUSTER),
                                settings=dataclasses.replace(consumer.settings, batch_size=ConsumerSettings().batch_size,
                                                             max_batching_window_s=ConsumerSettings().max_batching_window_s))
    with LocalPipeline(pipeline=Pipeline(consumers=(kafka,))) as pipeline:
        producer = Producer({"bootstrap.servers": pipeline.kafka_bootstrap_servers, "log_level": 3})
        sent = events(count, "kafka")
        started = time.perf_counter()
        for n, event in enumerate(sent):
            producer.produce("bench", key=str(n % 8), value=event.model_dump_json(exclude_none=True))
        producer.flush(30)
        pipeline.drain(timeout_s=600)
        elapsed = time.perf_counter() - started
        return elapsed, results(pipeline, kafka.result_type)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300, help="events per channel (default 300)")
    args = parser.parse_args()
    consumer = next(c for c in load_pipeline().consumers if c.accepts.type == "ImageSubmitted")
    sqs_s, sqs_n = over_sqs(consumer, args.events)
    kafka_s, kafka_n = over_kafka(consumer, args.events)
    print(f"{consumer.name}, {args.events} events per channel, sent -> results on the bus, embedded")
    print(f"{'channel':8} {'results':>8} {'seconds':>8} {'events/s':>9}")
    for name, seconds, found in (("sqs", sqs_s, sqs_n), ("kafka", kafka_s, kafka_n)):
        print(f"{name:8} {found:>8} {seconds:>8.2f} {found / seconds:>9.1f}")
    print(f"kafka / sqs throughput: {(kafka_n / kafka_s) / (sqs_n / sqs_s):.2f}")


if __name__ == "__main__":
    main()
