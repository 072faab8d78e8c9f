"""The Amazon MQ (RabbitMQ) record source on AWS's documented event shape: the CloudEvent in each message
(structured, binary, or an EventBridge event) read for the consumer, the attempt, and an answer that
sends the whole batch back when a record must come back."""

from __future__ import annotations

import base64
import json

import pytest
from inferbus_lambda.consumer import expect_type
from inferbus_lambda.contracts import ImageSubmitted, new_event
from inferbus_lambda.environment import ConsumerEnvironment
from inferbus_lambda.errors import InvalidEventError
from inferbus_lambda.sources import AmazonMqRecordSource, record_source
from inferbus_lambda.sources.amazon_mq import RedeliverBatch

# AWS's documented sample (Lambda developer guide, "Using Lambda with Amazon MQ"; the same in
# aws-lambda-java-events and aws_lambda_events): a text message, string headers as bytes.
AWS_SAMPLE = {
    "eventSource": "aws:rmq",
    "eventSourceArn": "arn:aws:mq:us-west-2:111122223333:broker:test:b-9bcfa592-423a-4942-879d-eb284b418fc8",
    "rmqMessagesByQueue": {"pizzaQueue::/": [{
        "basicProperties": {
            "contentType": "text/plain", "contentEncoding": None,
            "headers": {"header1": {"bytes": [118, 97, 108, 117, 101, 49]}, "numberInHeader": 10},
            "deliveryMode": 1, "priority": 34, "correlationId": None, "replyTo": None, "expiration": "60000",
            "messageId": None, "timestamp": "Jan 1, 1970, 12:33:41 AM", "type": None, "userId": "AIDACKCEVSQ6C2EXAMPLE",
            "appId": None, "clusterId": None, "bodySize": 80},
        "redelivered": False,
        "data": "eyJ0aW1lb3V0IjowLCJkYXRhIjoiQ1pybWYwR3c4T3Y0YnFMUXhENEUifQ=="}]},
}
PARSE = expect_type("ImageSubmitted")


def message(body: bytes, *, headers: dict | None = None, content_type: str | None = None, redelivered: bool = False,
            message_id: str | None = None) -> dict:
    sample = json.loads(json.dumps(AWS_SAMPLE["rmqMessagesByQueue"]["pizzaQueue::/"][0]))
    sample["basicProperties"] |= {"headers": headers or {}, "contentType": content_type, "messageId": message_id}
    return sample | {"data": base64.b64encode(body).decode(), "redelivered": redelivered}


def text(value: str) -> dict:
    return {"bytes": list(value.encode())}


def event_of(*messages: dict, queue: str = "orders::/") -> dict:
    return {**AWS_SAMPLE, "rmqMessagesByQueue": {queue: list(messages)}}


CLOUDEVENT = new_event(ImageSubmitted(pixels=[3] * 64), source="shop", event_id="ord-1").model_dump(mode="json")


def test_a_structured_a_binary_and_an_eventbridge_cloudevent_are_the_same_event_to_the_consumer():
    structured = message(json.dumps(CLOUDEVENT).encode(), content_type="application/cloudevents+json")
    binary = message(json.dumps(CLOUDEVENT["data"]).encode(), content_type="application/json",
                     headers={f"cloudEvents_{k}": text(v) for k, v in CLOUDEVENT.items() if k != "data" and v is not None})
    wrapped = message(json.dumps({"source": "shop", "detail-type": "ImageSubmitted", "detail": CLOUDEVENT}).encode())
    records = AmazonMqRecordSource(consumer="c").records(event_of(structured, binary, wrapped))
    events = [PARSE(record.body) for record in records]
    assert {(e.source, e.id, e.type, tuple(e.data.pixels)) for e in events} == {("shop", "ord-1", "ImageSubmitted", (3,) * 64)}
    assert [record.record_id for record in records] == ["orders::/#0", "orders::/#1", "orders::/#2"]


def test_awss_sample_is_read_and_its_body_which_holds_no_cloudevent_is_refused_with_a_reason():
    (record,) = AmazonMqRecordSource(consumer="c").records(AWS_SAMPLE)
    assert (record.record_id, record.attempt, record.attributes["queue"]) == ("pizzaQueue::/#0", 1, "pizzaQueue::/")
    assert json.loads(record.body) == {"timeout": 0, "data": "CZrmf0Gw8Ov4bqLQxD4E"}  # handed on as it came
    with pytest.raises(InvalidEventError, match="not an EventBridge event"):
        PARSE(record.body)


def test_bodies_that_are_not_json_or_not_base64_reach_the_consumer_to_be_rejected():
    broken = message(b"\xff\xfe not utf-8")
    not_base64 = message(b"") | {"data": "%%%"}
    records = AmazonMqRecordSource(consumer="c").records(event_of(broken, not_base64))
    for record in records:
        with pytest.raises(InvalidEventError):
            PARSE(record.body)


def test_the_attempt_is_the_quorum_queues_delivery_count_plus_one_else_two_once_redelivered():
    counted = message(b"{}", headers={"x-delivery-count": 4}, redelivered=True)
    records = AmazonMqRecordSource(consumer="c", dead_letter_queue_url="dlq", max_receive_count=5, sqs=lambda: None).records(
        event_of(counted, message(b"{}", redelivered=True), message(b"{}"), message(b"{}", message_id="m-9")))
    assert [record.attempt for record in records] == [5, 2, 1, 1]
    assert records[3].record_id == "orders::/#3:m-9"
    source = AmazonMqRecordSource(consumer="c", dead_letter_queue_url="dlq", max_receive_count=5, sqs=lambda: None)
    assert [source.is_last_attempt(record) for record in records] == [True, False, False, False]


def test_a_record_that_must_come_back_sends_the_whole_batch_back_by_failing_the_invocation():
    source = AmazonMqRecordSource(consumer="c")
    assert source.batch_response([]) == {}
    with pytest.raises(RedeliverBatch, match=r"2 record\(s\) must come back.*orders::/#0, orders::/#4") as raised:
        source.batch_response(["orders::/#0", "orders::/#4"])
    assert raised.value.failed == ["orders::/#0", "orders::/#4"]


def test_the_environment_selects_it_by_name():
    environment = ConsumerEnvironment.from_environ({
        "POWERTOOLS_SERVICE_NAME": "c", "POWERTOOLS_METRICS_NAMESPACE": "N", "IDEMPOTENCY_TABLE_NAME": "t",
        "IDEMPOTENCY_TTL_SECONDS": "60", "EVENT_BUS_NAME": "b", "RESULT_SOURCE": "inferbus.c", "CONSUMES": "A",
        "PRODUCES": "B", "RECORD_SOURCE": "amazon-mq", "DEAD_LETTER_QUEUE_URL": "dlq", "MAX_RECEIVE_COUNT": "3"})
    source = record_source(environment, lambda service: None)
    assert isinstance(source, AmazonMqRecordSource) and source.dead_letters and source.max_receive_count == 3
