"""The Kafka channel locally: librdkafka's mock cluster (real Kafka protocol, partitions, offsets, a
consumer group) read as Lambda's Kafka event source mapping reads it, into the kit's consumer.

The ledger (what the consumer published, in order) proves each key's events come out in the order
they were produced (a key is one partition), every event once, through injected failures and
duplicate deliveries; a record that can never succeed is given up after the retries, to the
on-failure destination, and its partition moves on."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections import defaultdict
from typing import Any

import pytest
from inferbus_lambda.contracts import ImageSubmitted, new_event
from inferbus_lambda.sources.kafka import binary_mode

from inferbus.chaos.faults import inject_faults
from inferbus.chaos.rates import FaultRates
from inferbus.runtime.event_source import LocalEventSource
from inferbus.runtime.kafka import KafkaChannel
from inferbus.runtime.lambda_host import LocalFunction, install_routing, uninstall_routing
from inferbus.runtime.specs import EventSourceSpec, FunctionSpec
from tests import runtime_fixtures
from tests.runtime_fixtures import HOST
from tests.runtime_fixtures.kafka_consumer import POISON
from tests.unit.test_kafka_source import AWS_SAMPLE

confluent_kafka = pytest.importorskip("confluent_kafka")
KEYS = ("customer-a", "customer-b", "customer-c", "customer-d", "customer-e", "customer-f")


@pytest.fixture(autouse=True)
def local_lambda():
    """Each test its own claims table; invocations routed as the embedded runtime routes them."""
    runtime_fixtures.__dict__.pop("KAFKA_CLAIMS", None)
    install_routing()
    yield
    uninstall_routing()


def channel(topic: str, **options: Any) -> KafkaChannel:
    return KafkaChannel(topic, group_id=f"group-{topic}", **options)


def produce(target: KafkaChannel, events: list[tuple[str, str, int]]) -> None:
    """(key, event id, pixel value): the key picks the partition, as a Kafka producer's does; odd events
    in binary mode (``ce_*`` headers, the value the data), even ones structured (the value the CloudEvent)."""
    producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap_servers, "log_level": 3})
    for n, (key, event_id, pixel) in enumerate(events):
        event = new_event(ImageSubmitted(pixels=[pixel] * 64), source="test", event_id=event_id)
        if n % 2:
            headers, value = binary_mode(event)
            producer.produce(target.topic, key=key, value=value, headers=headers)
        else:
            producer.produce(target.topic, key=key, value=event.model_dump_json(exclude_none=True))
    assert producer.flush(10) == 0


def interleaved(per_key: int) -> list[tuple[str, str, int]]:
    return [(key, f"{key}-{n:03d}", n % POISON) for n in range(per_key) for key in KEYS]


def by_key(ids: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for event_id in ids:
        grouped[event_id.rsplit("-", 1)[0]].append(event_id)
    return dict(grouped)


def mapping(target: KafkaChannel, *, batch_size: int = 20, max_concurrency: int = 4) -> LocalEventSource:
    spec = FunctionSpec(logical_id="Consumer", name="kafka-consumer", handler="tests.runtime_fixtures.kafka_consumer.handler",
                        arn="arn:aws:lambda:us-east-1:123456789012:function:kafka-consumer", environment={},
                        timeout_s=30, memory_mb=512)
    source_spec = EventSourceSpec(logical_id="Mapping", function_logical_id="Consumer", queue_arn=target.name,
                                  batch_size=batch_size, max_batching_window_s=0, report_batch_item_failures=True,
                                  max_concurrency=max_concurrency)
    return LocalEventSource(source_spec, target, LocalFunction(spec, HOST))


def drain(source: LocalEventSource, timeout_s: float = 60.0) -> None:
    """Run the poller until the topic is consumed and no batch is running or waiting to be retried."""
    deadline = time.monotonic() + timeout_s
    source.start()
    try:
        while source.backlog() or source.busy:
            assert time.monotonic() < deadline, f"still {source.backlog()} records behind"
            time.sleep(0.05)
    finally:
        source.stop()


def ledger(source: LocalEventSource, message: str = "published", field: str = "subject") -> list[Any]:
    return [line[field] for line in source.function.logs if line.get("message") == message]


def test_each_partitions_order_holds_and_every_event_is_published_once_through_failures_and_duplicates():
    target = channel(f"images-{uuid.uuid4().hex[:8]}", max_retry_attempts=50)
    sent = interleaved(per_key=12)
    produce(target, sent)
    source = mapping(target)
    injector = inject_faults(source.function, FaultRates.only(record_error_rate=0.25, put_events_throttle_rate=0.3), seed=11)
    source.redeliver(0.3, seed=5)
    drain(source)
    published = ledger(source)
    assert by_key(published) == by_key([event_id for _, event_id, _ in sent])  # in order per key, none lost or repeated
    assert injector.counts.record_errors > 0 and source.duplicates_delivered > 0  # both happened on the way
    received = [record_id for ids in ledger(source, "received", "record_ids") for record_id in ids]
    assert len(received) > len(set(received))  # records came back after failures (with those behind them)
    partitions = {record_id.rsplit("-", 1)[0] for record_id in received}
    assert len(partitions) > 1  # the keys spread over several partitions, read side by side
    assert target.backlog() == 0 and target.given_up == 0


def test_a_record_that_never_succeeds_goes_to_the_on_failure_destination_and_its_partition_moves_on(caplog):
    failures: list[dict[str, Any]] = []
    target = channel(f"images-{uuid.uuid4().hex[:8]}", max_retry_attempts=2, on_failure=failures.append)
    sent = [("customer-a", "customer-a-000", 1), ("customer-a", "customer-a-001", POISON),
            ("customer-a", "customer-a-002", 3), ("customer-b", "customer-b-000", 4)]
    produce(target, sent)
    source = mapping(target)
    drain(source)
    assert by_key(ledger(source)) == {"customer-a": ["customer-a-000", "customer-a-002"], "customer-b": ["customer-b-000"]}
    [failure] = failures
    info = failure["KafkaBatchInfo"]
    assert failure["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert failure["requestContext"]["approximateInvokeCount"] == 3  # the first delivery and 2 retries
    received = [i for ids in ledger(source, "received", "record_ids") for i in ids]
    poisoned = f"{target.topic}-{info['partition']}-{info['firstOffset']}"
    assert received.count(poisoned) == 3
    reasons = {(r.status, r.reason) for r in caplog.records if getattr(r, "record_id", None) == poisoned}
    assert reasons == {("failed", "inference: model refused the image")}  # why, each time, in the function's log
    behind = f"{target.topic}-{info['partition']}-{info['firstOffset'] + 1}"
    last = {record_id: n for n, record_id in enumerate(received)}
    assert last[behind] > last[poisoned]  # the record behind it waited for the retries to end, then went through


def test_a_record_holding_no_cloudevent_is_refused_with_its_reason_without_holding_its_partition():
    target = channel(f"images-{uuid.uuid4().hex[:8]}")
    produce(target, [("customer-a", "customer-a-000", 1)])
    producer = confluent_kafka.Producer({"bootstrap.servers": target.bootstrap_servers, "log_level": 3})
    producer.produce(target.topic, key="customer-a", value=b"\xff\xfe not text")
    producer.produce(target.topic, key="customer-a", value=b'{"order": 7}')
    assert producer.flush(10) == 0
    produce(target, [("customer-a", "customer-a-001", 2)])
    source = mapping(target)
    drain(source)
    assert ledger(source) == ["customer-a-000", "customer-a-001"]
    reasons = ledger(source, "rejected", "reason")
    assert len(reasons) == 2 and "not base64-encoded UTF-8" in reasons[0] and "type" in reasons[1]


def test_the_group_resumes_at_its_committed_offsets_and_another_group_reads_from_the_start():
    topic = f"images-{uuid.uuid4().hex[:8]}"
    first = channel(topic)
    sent = interleaved(per_key=2)
    produce(first, sent)
    drain(mapping(first))
    again = KafkaChannel(topic, group_id=f"group-{topic}", bootstrap_servers=first.bootstrap_servers)
    assert again.backlog() == 0 and not again.ready()  # the group's offsets were committed
    produce(first, [("customer-a", "customer-a-late", 5)])
    runtime_fixtures.__dict__.pop("KAFKA_CLAIMS", None)
    resumed = mapping(again)
    drain(resumed)
    assert ledger(resumed) == ["customer-a-late"]
    other = KafkaChannel(topic, group_id="another-group", bootstrap_servers=first.bootstrap_servers)
    assert other.backlog() == len(sent) + 1


def test_the_function_gets_the_event_shape_aws_documents():
    target = channel(f"images-{uuid.uuid4().hex[:8]}",
                     event_source_arn="arn:aws:kafka:us-east-1:123456789012:cluster/c/751d2973-a626-431c-9d4e-d7975eb44dd7-2")
    produce(target, [("customer-a", "customer-a-000", 1), ("customer-a", "customer-a-001", 2)])
    deadline = time.monotonic() + 10
    while not target.ready() and time.monotonic() < deadline:
        time.sleep(0.05)
    event = target.lambda_event(target.receive(10))
    assert set(event) == set(AWS_SAMPLE)
    [(group, records)] = event["records"].items()
    assert [set(record) for record in records] == [set(AWS_SAMPLE["records"]["mytopic-0"][0])] * 2
    assert group == f"{target.topic}-{records[0]['partition']}" and [r["offset"] for r in records] == [0, 1]
    assert json.loads(base64.b64decode(records[0]["value"]))["id"] == "customer-a-000"
    assert {name for header in records[1]["headers"] for name in header} >= {"ce_id", "ce_type", "ce_source"}


def kafka_template(**mapping: Any) -> dict:
    """A function fed by a Kafka mapping as ``KafkaConsumer`` synthesizes it (self-managed), with its on-failure queue."""
    from tests.runtime_fixtures import templates as t

    template = t.template(Failures=t.queue(), Consumer=t.function("kafka_consumer"))
    template["Resources"]["Mapping"] = {"Type": "AWS::Lambda::EventSourceMapping", "Properties": {
        "FunctionName": {"Ref": "Consumer"}, "Topics": ["payments"], "StartingPosition": "TRIM_HORIZON",
        "BatchSize": 50, "MaximumBatchingWindowInSeconds": 0, "MaximumRetryAttempts": 1,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "SelfManagedEventSource": {"Endpoints": {"KafkaBootstrapServers": ["b-1.example.com:9096"]}},
        "SelfManagedKafkaEventSourceConfig": {"ConsumerGroupId": "payment-scorer"},
        "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": ["Failures", "Arn"]}}}, **mapping}}
    return template


def test_the_embedded_runtime_reads_a_templates_kafka_mapping_into_its_function():
    from tests.runtime_fixtures import runtime

    uninstall_routing()  # the pipeline routes invocations itself
    try:
        with runtime(kafka_template(), tap=False) as pipeline:
            (source,) = pipeline.event_sources
            produce(source.channel, [("customer-a", "customer-a-000", 1), ("customer-a", "customer-a-001", POISON),
                                     ("customer-b", "customer-b-000", 2)])
            pipeline.drain(timeout_s=60)
            failures = pipeline.sqs.receive_message(QueueUrl=pipeline.deployment.queues["Failures"].url).get("Messages", [])
            published = ledger(source)
            events = {line["event_source"] for line in source.function.logs if line.get("message") == "received"}
            received = [i for ids in ledger(source, "received", "record_ids") for i in ids]
            counted = sum(invocation.records for invocation in source.function.invocations)
    finally:
        install_routing()
    assert sorted(published) == ["customer-a-000", "customer-b-000"] and events == {"SelfManagedKafka"}
    assert counted == len(received)  # an invocation counts a Kafka event's records (grouped by partition)
    [failure] = [json.loads(message["Body"]) for message in failures]
    assert failure["requestContext"]["approximateInvokeCount"] == 2  # MaximumRetryAttempts 1: two deliveries
    assert failure["KafkaBatchInfo"]["topic"] == "payments"
