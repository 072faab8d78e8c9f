"""Redrive: a dry run tells why each DLQ message failed; a redrive moves back the ones that can now succeed."""

from __future__ import annotations

import json

from inferbus.cli import main
from inferbus.redrive import inspect_dead_letters, redrive
from inferbus.local import LocalPipeline
from tests.catalogue import envelope, valid_detail


class QueuesDown:
    """SendMessageBatch fails every entry: the invalid-events destination is unreachable too."""

    def send_message_batch(self, QueueUrl, Entries):  # noqa: N803
        return {"Failed": [{"Id": e["Id"], "Code": "ServiceUnavailable", "SenderFault": False} for e in Entries]}


class BusDown:
    """PutEvents fails every entry with a transient error, as during an EventBridge outage."""

    def put_events(self, Entries):  # noqa: N803
        return {"FailedEntryCount": len(Entries), "Entries": [{"ErrorCode": "InternalFailure"} for _ in Entries]}


def test_redrive_moves_back_what_can_succeed_and_keeps_what_cannot(template, monkeypatch, capsys):
    with LocalPipeline(template) as pipeline:
        source = pipeline.consumer("image-classifier").source
        runtime = pipeline.consumer("image-classifier").function.handler.runtime
        monkeypatch.setattr(runtime, "events", BusDown())  # an outage: results cannot be published ...
        monkeypatch.setattr(runtime, "sqs", QueuesDown())  # ... nor invalid records kept aside
        bad = valid_detail("bad-pixels")
        bad["data"]["pixels"][0] = 99
        for detail in (valid_detail("good-1"), bad):
            pipeline.sqs.send_message(QueueUrl=source.queue.url, MessageBody=json.dumps(envelope(detail)))
        pipeline.drain()
        dlq_url = pipeline.deployment.queue_by_arn(source.queue.dead_letter_arn).url

        letters = {letter.event_id: letter for letter in inspect_dead_letters(pipeline.sqs, dlq_url)}
        assert set(letters) == {"good-1", "bad-pixels"}
        assert letters["good-1"].valid and letters["good-1"].receive_count >= source.queue.max_receive_count
        assert letters["bad-pixels"].verdict == "would fail again: data.pixels.0: Input should be less than or equal to 16"

        assert main(["redrive", dlq_url, "--dry-run"]) == 0  # the source queue is found from its redrive policy
        assert f"would move 1 of 2 to {source.queue.url}" in capsys.readouterr().out

        monkeypatch.undo()  # the bus is back
        assert redrive(pipeline.sqs, dlq_url, source.queue.url) == 1
        pipeline.drain()
        published = [e["detail"]["data"]["input_id"] for e in pipeline.tapped_events() if e["detail-type"] == "ImageClassified"]
        assert published == ["good-1"]
        assert [letter.event_id for letter in inspect_dead_letters(pipeline.sqs, dlq_url)] == ["bad-pixels"]


def test_redrive_all_falls_back_to_moving_one_by_one_without_the_move_api(template):
    with LocalPipeline(template) as pipeline:
        source = pipeline.consumer("image-classifier").source
        dlq_url = pipeline.deployment.queue_by_arn(source.queue.dead_letter_arn).url
        pipeline.sqs.send_message(QueueUrl=dlq_url, MessageBody="{not json")
        assert redrive(pipeline.sqs, dlq_url, source.queue.url, only_valid=False) == 1
        attributes = pipeline.sqs.get_queue_attributes(QueueUrl=source.queue.url, AttributeNames=["ApproximateNumberOfMessages"])
        assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "1"


def test_redrive_names_the_problem_when_the_source_queue_cannot_be_told(template, capsys):
    with LocalPipeline(template) as pipeline:
        lonely = pipeline.review_queue_url("risk-review")  # no queue dead-letters into it
        assert main(["redrive", lonely, "--dry-run"]) == 2
        assert "no queue dead-letters into it" in (err := capsys.readouterr().err) and "with --source-url" in err


def test_a_record_failing_on_its_last_receive_reaches_the_dlq_with_its_reason(template, capsys):
    """The consumer dead-letters it itself, so the reason travels with it; a whole-invocation failure has none."""
    with LocalPipeline(template) as pipeline:
        consumer = pipeline.consumer("image-classifier")
        runtime = consumer.function.handler.runtime
        runtime.events = BusDown()  # every publish fails, so the record fails on every receive
        pipeline.sqs.send_message(QueueUrl=consumer.queue_url, MessageBody=json.dumps(envelope(valid_detail("bus-down-1"))))
        pipeline.drain()
        runtime.events = pipeline.session.client("events")

        (letter,) = inspect_dead_letters(pipeline.sqs, consumer.dead_letter_queue_url)
        max_receives = consumer.source.queue.max_receive_count
        assert letter.event_id == "bus-down-1" and letter.valid
        assert letter.last_reason == f"failed: publish: InternalFailure (after {max_receives} receives)"
        assert consumer.source.deliveries == max_receives  # delivered as often as SQS would, then moved aside
        assert sum(consumer.function.metrics["RecordsDeadLettered"]) == 1

        assert main(["redrive", consumer.dead_letter_queue_url, "--dry-run"]) == 0
        assert "InternalFailure" in capsys.readouterr().out  # the table shows the last reason
