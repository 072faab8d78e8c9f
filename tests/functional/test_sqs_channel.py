"""The local poller's SQS channel and the local pipe: each hands on an SQS record as Lambda (or Pipes)
gives it, message attributes included."""

from __future__ import annotations

import base64
import json

import pytest
from aws_lambda_powertools.utilities.data_classes import SQSEvent

from inferbus.runtime.channels import SqsChannel
from inferbus.runtime.specs import QueueInfo
from tests.functional.test_moto_patches import patched_sqs  # noqa: F401 (the fixture: a patched moto SQS)

ARN = "arn:aws:sqs:us-east-1:123456789012:work"


@pytest.fixture
def channel(patched_sqs):
    sqs, _ = patched_sqs
    url = sqs.create_queue(QueueName="work")["QueueUrl"]
    return SqsChannel(QueueInfo("Work", "work", url, ARN, 30, None, None), sqs), sqs


def test_a_record_carries_its_message_attributes_as_lambda_gives_them(channel):
    channel, sqs = channel
    sqs.send_message(QueueUrl=channel.queue.url, MessageBody='{"n": 1}', MessageAttributes={
        "reason": {"DataType": "String", "StringValue": "late"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}})
    sqs.send_message(QueueUrl=channel.queue.url, MessageBody="plain")
    assert channel.ready()
    messages = channel.receive(10)
    record, plain = SQSEvent(channel.lambda_event(messages)).records
    assert record.message_attributes["reason"].string_value == "late"
    assert record.message_attributes["reason"].data_type == "String"
    assert base64.b64decode(record.message_attributes["blob"].binary_value) == b"\x00\xff"
    assert record.raw_event["messageAttributes"]["reason"] == {"stringValue": "late", "stringListValues": [],
                                                               "binaryListValues": [], "dataType": "String"}
    assert plain.raw_event["messageAttributes"] == {} and plain.body == "plain"
    assert record.attributes.approximate_receive_count == "1" and record.event_source_arn == ARN
    channel.ack(messages)
    assert channel.backlog() == 0 and not channel.ready()


def test_a_pipe_s_source_record_carries_message_attributes_as_pipes_gives_them(patched_sqs):
    from inferbus.runtime.pipes import LocalPipe
    from inferbus.runtime.specs import PipeSpec

    sqs, _ = patched_sqs
    queues = {name: QueueInfo(name, name, sqs.create_queue(QueueName=name)["QueueUrl"],
                              f"arn:aws:sqs:us-east-1:123456789012:{name}", 30, None, None)
              for name in ("source", "target")}
    pipe = LocalPipe(PipeSpec("Pipe", queues["source"].arn, queues["target"].arn, 10, None, None, None),
                     queues["source"], queues["target"], sqs)
    sqs.send_message(QueueUrl=queues["source"].url, MessageBody='{"n": 1}',
                     MessageAttributes={"reason": {"DataType": "String", "StringValue": "late"}})
    assert pipe.dispatch() == 1
    (moved,) = sqs.receive_message(QueueUrl=queues["target"].url)["Messages"]
    record = json.loads(moved["Body"])
    assert record["body"] == {"n": 1} and record["eventSourceARN"] == queues["source"].arn
    assert record["messageAttributes"] == {"reason": {"stringValue": "late", "stringListValues": [],
                                                      "binaryListValues": [], "dataType": "String"}}
