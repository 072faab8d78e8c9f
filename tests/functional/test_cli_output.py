"""What people copy from a terminal stays whole: at 80 columns no id, and no word of a reason, is split across lines."""

from __future__ import annotations

import json
import re
import uuid

import boto3
from moto import mock_aws

from inferbus.cli import main
from tests.catalogue import envelope, valid_detail


def unsplit(output: str, token: str) -> bool:
    """``token`` appears whole on one line of ``output`` (a table at 80 columns folds a long one)."""
    return any(re.search(rf"(^|\s){re.escape(token)}($|\s|[,;:)])", line) for line in output.splitlines())


@mock_aws
def test_redrive_verdicts_keep_ids_and_reasons_whole_at_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    sqs = boto3.client("sqs", region_name="us-east-1")
    dlq = sqs.create_queue(QueueName="image-classifier-dead-letters")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sqs.create_queue(QueueName="image-classifier", Attributes={
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 3})})
    ids = [str(uuid.uuid4()) for _ in range(3)]
    for number, event_id in enumerate(ids):
        detail = valid_detail(event_id)
        if number:
            detail["data"]["pixels"][number] = 99  # breaks the contract: a reason naming the field
        sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps(envelope(detail)))
    assert main(["redrive", dlq, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(unsplit(out, event_id) for event_id in ids), out
    for token in ("data.pixels.1:", "data.pixels.2:", "would", "fail", "again"):
        assert unsplit(out, token), (token, out)


@mock_aws
def test_reviews_list_keeps_a_message_id_whole_at_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    sqs = boto3.client("sqs", region_name="us-east-1")
    queue = sqs.create_queue(QueueName="review")["QueueUrl"]
    sent = [sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"not": "a review request"}))["MessageId"]
            for _ in range(2)]
    assert main(["reviews", "list", "--queue-url", queue]) == 0
    out = capsys.readouterr().out
    assert all(unsplit(out, message_id) for message_id in sent), out
    assert "2 cases waiting for review" in out and "not a review request" in out
