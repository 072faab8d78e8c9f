"""The real image classifier handler, on real SQS deliveries from the real rule, all on moto."""

from __future__ import annotations

import json

import numpy as np
import pytest
from inferbus_lambda.contracts import ImageSubmitted, new_event, to_put_events_entry

from inferbus.local import LocalPipeline
from pipeline._held_out import DIGITS as HOLDOUT
from tests.declared import PIPELINE

HOLDOUT_DATA = np.load(HOLDOUT)
CLASSIFIER = PIPELINE.component("image-classifier")


@pytest.fixture
def pipeline(template):
    with LocalPipeline(template) as running:
        yield running


def consumer_runtime(pipeline):
    """What the running handler holds (its clients, its consumer): what a test may break on purpose."""
    return pipeline.consumer("image-classifier").function.handler.runtime


def image_entries(pipeline, count, start=0):
    events = [
        new_event(ImageSubmitted(pixels=[int(v) for v in HOLDOUT_DATA["images"][i]]), source="inferbus.test")
        for i in range(start, start + count)
    ]
    return events, [to_put_events_entry(event, pipeline.bus_name) for event in events]


def results(pipeline):
    return [e for e in pipeline.tapped_events() if e["detail-type"] == "ImageClassified"]


def dead_letter_queue(pipeline) -> str:
    """The image classifier's DLQ, by logical id (``pipeline.dead_letters()`` holds every DLQ's messages)."""
    source = pipeline.consumer("image-classifier").source
    return pipeline.deployment.queue_by_arn(source.queue.dead_letter_arn).logical_id


def kept(pipeline):
    """What the image classifier kept in the invalid-events queue (other consumers of ImageSubmitted keep theirs)."""
    bodies = [json.loads(m["Body"]) for m in pipeline.peek(pipeline.invalid_events_url)]
    return [body for body in bodies if body.get("consumer") == CLASSIFIER.result_source]


def test_one_batch_one_inference_and_bad_records_reported(pipeline):
    events, entries = image_entries(pipeline, 20)
    bad = json.loads(entries[0]["Detail"]) | {"id": "bad-1"}
    bad["data"] = {"pixels": [99] * 64}
    assert pipeline.put_events(entries + [entries[0] | {"Detail": json.dumps(bad)}]) == []
    source = pipeline.consumer("image-classifier").source
    invocation = source.pump(wait=True)

    assert invocation.records == 21 and invocation.error is None
    assert invocation.failed_ids == []  # the bad record was handled: sent where invalid events wait
    function = source.function
    assert function.metrics["BatchSize"] == [21]
    assert len(function.metrics["InferenceMs"]) == 1  # ONE session.run for the whole batch
    published = results(pipeline)
    assert sorted(r["detail"]["data"]["input_id"] for r in published) == sorted(e.id for e in events)
    assert {r["detail"]["correlationid"] for r in published} == {e.correlationid for e in events}
    warning = next(line for line in function.logs if line.get("message") == "record rejected")
    assert warning["event_id"] == "bad-1" and warning["reason"].startswith("data.pixels.0:")
    (rejected,) = kept(pipeline)
    assert (rejected["event_id"], rejected["error"], rejected["consumer"]) == ("bad-1", "InvalidEventError",
                                                                              "inferbus.image-classifier")
    assert rejected["reason"].startswith("data.pixels.0:") and json.loads(rejected["body"])["detail"]["id"] == "bad-1"


def test_an_invalid_record_is_delivered_once_and_kept_with_its_reason(pipeline):
    _, entries = image_entries(pipeline, 1)
    bad = json.loads(entries[0]["Detail"]) | {"id": "bad-2"}
    bad["data"] = {"pixels": [1] * 10}
    pipeline.put_events([entries[0] | {"Detail": json.dumps(bad)}])
    pipeline.drain()
    source = pipeline.consumer("image-classifier").source
    assert source.deliveries == 1  # a retry would fail the same way
    assert pipeline.dead_letters()[dead_letter_queue(pipeline)] == []
    (rejected,) = kept(pipeline)
    assert rejected["event_id"] == "bad-2"
    assert rejected["reason"] == "data.pixels: List should have at least 64 items after validation, not 10"


class DestinationDown:
    """The invalid-events queue cannot be reached: SendMessageBatch fails every entry."""

    def send_message_batch(self, QueueUrl, Entries):  # noqa: N803
        return {"Successful": [], "Failed": [{"Id": e["Id"], "Code": "ServiceUnavailable", "SenderFault": False}
                                             for e in Entries]}


def test_an_invalid_record_that_cannot_be_kept_is_retried_then_dead_lettered(pipeline, monkeypatch):
    monkeypatch.setattr(consumer_runtime(pipeline), "sqs", DestinationDown())
    _, entries = image_entries(pipeline, 1)
    bad = json.loads(entries[0]["Detail"]) | {"id": "bad-3"}
    bad["data"] = {"pixels": [1] * 10}
    pipeline.put_events([entries[0] | {"Detail": json.dumps(bad)}])
    pipeline.drain()
    source = pipeline.consumer("image-classifier").source
    assert source.deliveries == source.queue.max_receive_count
    dead_lettered = pipeline.dead_letters()[dead_letter_queue(pipeline)]
    assert [json.loads(m["Body"])["detail"]["id"] for m in dead_lettered] == ["bad-3"]
    assert kept(pipeline) == []


def test_duplicate_delivery_is_processed_once(pipeline):
    events, entries = image_entries(pipeline, 3)
    pipeline.put_events(entries)
    pipeline.drain()
    pipeline.put_events(entries[:2])  # SQS/EventBridge at-least-once: the same events again
    pipeline.drain()
    published = results(pipeline)
    assert sorted(r["detail"]["data"]["input_id"] for r in published) == sorted(e.id for e in events)
    function = pipeline.consumer("image-classifier").function
    assert sum(function.metrics["DuplicatesSkipped"]) == 2
    assert sum(function.metrics["RecordsPublished"]) == 3


def test_same_id_with_different_data_is_rejected_as_a_conflict(pipeline):
    _, entries = image_entries(pipeline, 1)
    pipeline.put_events(entries)
    pipeline.drain()
    forged = json.loads(entries[0]["Detail"])
    forged["data"]["pixels"] = [0] * 64
    pipeline.put_events([entries[0] | {"Detail": json.dumps(forged)}])
    pipeline.drain()
    (rejected,) = kept(pipeline)
    assert (rejected["error"], rejected["reason"]) == ("IdConflictError", "id already used by an event with different data")
    assert len(results(pipeline)) == 1


class FailingPutEvents:
    """Wraps the handler's EventBridge client: PutEvents reports the chosen entries as failed."""

    def __init__(self, client, fail_ids, code):
        self.client, self.fail_ids, self.code = client, fail_ids, code

    def put_events(self, Entries):  # noqa: N803
        keep = [e for e in Entries if json.loads(e["Detail"])["subject"] not in self.fail_ids]
        response = self.client.put_events(Entries=keep) if keep else {"Entries": []}
        sent = iter(response["Entries"])
        out = [
            {"ErrorCode": self.code, "ErrorMessage": "injected"} if json.loads(e["Detail"])["subject"] in self.fail_ids else next(sent)
            for e in Entries
        ]
        return {"FailedEntryCount": sum("ErrorCode" in r for r in out), "Entries": out}


def test_put_events_partial_failure_is_reported_and_retried_never_dropped(pipeline, monkeypatch):
    events, entries = image_entries(pipeline, 5)
    runtime = consumer_runtime(pipeline)
    monkeypatch.setattr(runtime, "events", FailingPutEvents(runtime.events, {events[1].id}, "InvalidArgument"))
    pipeline.put_events(entries)
    source = pipeline.consumer("image-classifier").source
    first = source.pump(wait=True)
    assert len(first.failed_ids) == 1
    assert len(results(pipeline)) == 4
    monkeypatch.undo()  # the bus recovers: the redelivered record is claimed again and published
    pipeline.drain()
    assert [r["detail"]["data"]["input_id"] for r in results(pipeline)] == [events[1].id]
    assert all(len(messages) == 0 for messages in pipeline.dead_letters().values())


def test_a_crashing_handler_fails_the_whole_batch_and_nothing_is_lost(pipeline, monkeypatch):
    events, entries = image_entries(pipeline, 4)
    runtime = consumer_runtime(pipeline)

    def crash(_events, _runtime):
        raise MemoryError("model could not allocate")

    monkeypatch.setattr(runtime, "infer", crash)
    pipeline.put_events(entries)
    source = pipeline.consumer("image-classifier").source
    invocation = source.pump(wait=True)
    assert invocation.error is None and len(invocation.failed_ids) == 4  # inference failure fails its records
    monkeypatch.setattr(runtime.consumer, "process", lambda *a, **k: 1 / 0)
    crashed = source.pump(wait=True)
    assert crashed.error.startswith("ZeroDivisionError")
    assert any(line.get("errorType") == "ZeroDivisionError" for line in source.function.logs)
    monkeypatch.undo()
    pipeline.drain()
    assert sorted(r["detail"]["data"]["input_id"] for r in results(pipeline)) == sorted(e.id for e in events)
