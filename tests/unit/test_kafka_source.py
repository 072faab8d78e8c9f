"""The Kafka record source on AWS's documented MSK event: ids, partitions as ordering groups, both
CloudEvents modes, claims keyed by the CloudEvent, and bad records refused with their reason."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from aws_lambda_powertools import Logger
from inferbus_lambda.claims import InMemoryClaimStore
from inferbus_lambda.consumer import InferenceConsumer, RecordStatus, expect_type
from inferbus_lambda.contracts import ImageSubmitted, from_put_events_entry, new_event
from inferbus_lambda.environment import ConsumerEnvironment
from inferbus_lambda.sources import RECORD_SOURCES, KafkaRecordSource
from inferbus_lambda.sources.kafka import binary_mode, kafka_body

# AWS's sample MSK event (Lambda developer guide, "Using Lambda with Amazon MSK"), as published.
AWS_SAMPLE = {
    "eventSource": "aws:kafka",
    "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/vpc-2priv-2pub/751d2973-a626-431c-9d4e-d7975eb44dd7-2",
    "bootstrapServers": "b-2.demo-cluster-1.a1bcde.c1.kafka.us-east-1.amazonaws.com:9092,"
                        "b-1.demo-cluster-1.a1bcde.c1.kafka.us-east-1.amazonaws.com:9092",
    "records": {"mytopic-0": [{
        "topic": "mytopic", "partition": 0, "offset": 15, "timestamp": 1545084650987, "timestampType": "CREATE_TIME",
        "key": "abcDEFghiJKLmnoPQRstuVWXyz1234==", "value": "SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==",
        "headers": [{"headerKey": [104, 101, 97, 100, 101, 114, 86, 97, 108, 117, 101]}]}]},
}


class Metrics:
    def add_metric(self, **_: object) -> None:
        """Outcomes are read from the report."""


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def image(event_id: str, pixels: int = 1) -> Any:
    return new_event(ImageSubmitted(pixels=[pixels] * 64), source="camera", event_id=event_id)


def structured(event_id: str, pixels: int = 1) -> dict[str, Any]:
    event = image(event_id, pixels)
    return {"value": b64(event.model_dump_json(exclude_none=True)), "headers": []}


def binary(event_id: str, pixels: int = 1) -> dict[str, Any]:
    headers, value = binary_mode(image(event_id, pixels))
    return {"value": base64.b64encode(value).decode(), "headers": [{name: list(data)} for name, data in headers]}


def kafka_event(*partitions: tuple[int, list[dict[str, Any]]], topic: str = "images") -> dict[str, Any]:
    """AWS's event shape, records grouped by "<topic>-<partition>", offsets counting from 0."""
    return {"eventSource": "SelfManagedKafka", "bootstrapServers": "b-1:9092", "records": {
        f"{topic}-{partition}": [{"topic": topic, "partition": partition, "offset": offset, "timestamp": 0,
                                  "timestampType": "CREATE_TIME", "key": None, **record}
                                 for offset, record in enumerate(records)]
        for partition, records in partitions}}


def test_aws_sample_reads_as_one_record_of_its_partition():
    [record] = KafkaRecordSource().records(AWS_SAMPLE)
    assert (record.record_id, record.group) == ("mytopic-0-15", "mytopic-0")
    assert record.attributes["offset"] == "15" and record.attributes["key"] == "abcDEFghiJKLmnoPQRstuVWXyz1234=="
    assert record.body == "Hello, this is a test." and "not JSON" in record.problem  # no CloudEvent in it


@pytest.mark.parametrize("mode", [structured, binary])
def test_both_modes_give_the_consumer_an_eventbridge_event_holding_the_cloudevent(mode):
    text, problem = kafka_body({"topic": "t", "partition": 0, "offset": 0, **mode("e-1")})
    body = json.loads(text)
    assert problem is None
    event = expect_type("ImageSubmitted")(json.dumps(body))
    assert (event.id, event.source, body["detail-type"], body["source"]) == ("e-1", "camera", "ImageSubmitted", "camera")


def test_the_batch_response_names_failed_records_by_topic_partition_offset():
    assert KafkaRecordSource().batch_response(["images-1-7"]) == {"batchItemFailures": [{"itemIdentifier": "images-1-7"}]}


def test_the_environment_selects_it():
    environment = ConsumerEnvironment(POWERTOOLS_SERVICE_NAME="t", POWERTOOLS_METRICS_NAMESPACE="n", EVENT_BUS_NAME="b",
                                      RESULT_SOURCE="inferbus.t", CONSUMES="In", PRODUCES="Out", IDEMPOTENCY_TABLE_NAME="c",
                                      IDEMPOTENCY_TTL_SECONDS=60, RECORD_SOURCE="kafka")
    assert isinstance(RECORD_SOURCES["kafka"](environment, lambda service: None), KafkaRecordSource)


def consumer(failing: set[str], published: list[str], rejected: list[tuple[str, str]],
             claims: InMemoryClaimStore | None = None) -> InferenceConsumer:
    def infer(events):
        return [RuntimeError("model refused") if event.id in failing else ImageSubmitted(pixels=event.data.pixels)
                for event in events]

    def publish(entries):
        published.extend(str(from_put_events_entry(entry).subject) for entry in entries)
        return []

    def reject(rejections):
        rejected.extend((rejection.message_id, rejection.reason) for rejection in rejections)
        return set()

    return InferenceConsumer(source=KafkaRecordSource(), parse=expect_type("ImageSubmitted"), infer=infer,
                             claims=claims or InMemoryClaimStore(scope="t", expires_after_seconds=60), publish=publish,
                             result_source="inferbus.t", bus_name="bus", metrics=Metrics(), logger=Logger(service="t"),
                             reject=reject)


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def test_a_failure_holds_back_its_partition_and_a_bad_record_is_refused_with_its_reason():
    published: list[str] = []
    rejected: list[tuple[str, str]] = []
    event = kafka_event((0, [structured("a1"), structured("a2"), binary("a3")]),
                        (1, [binary("b1"), {"value": "not base64!", "headers": []}, structured("b3")]))
    response = consumer({"a2"}, published, rejected).handle(event, Context())
    assert response == {"batchItemFailures": [{"itemIdentifier": "images-0-1"}, {"itemIdentifier": "images-0-2"}]}
    assert published == ["a1", "b1", "b3"]  # a3 waits behind a2; partition 1 goes on past its bad record
    [(record_id, reason)] = rejected
    assert record_id == "images-1-1" and "not base64" in reason


def test_claims_are_keyed_by_the_cloudevent_not_the_offset():
    """The same CloudEvent at two offsets (a producer's retry), in either mode, is scored once; the same id
    with other data is a conflict, refused."""
    published: list[str] = []
    claims = InMemoryClaimStore(scope="t", expires_after_seconds=60)
    first = consumer(set(), published, [], claims).process(
        KafkaRecordSource().records(kafka_event((0, [structured("e-1"), binary("e-1")]))), remaining_ms=None)
    later = consumer(set(), published, [], claims).process(
        KafkaRecordSource().records(kafka_event((3, [structured("e-1"), binary("e-1", pixels=9)]))), remaining_ms=None)
    assert published == ["e-1"]
    assert [o.status for o in (*first.outcomes.values(), *later.outcomes.values())] == [
        RecordStatus.PUBLISHED, RecordStatus.DUPLICATE, RecordStatus.DUPLICATE, RecordStatus.REJECTED]
