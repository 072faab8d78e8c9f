"""Every malformed input gets its reason and a failure report, and never blocks the valid records beside it."""

from __future__ import annotations

import json

import pytest
from inferbus_lambda.contracts import InvalidEventError, from_eventbridge_event

from inferbus.runtime import EmbeddedPipeline
from tests.catalogue import CASES, envelope, valid_detail


def test_catalogue_is_large_and_names_are_unique():
    assert len(CASES) >= 30
    assert len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("name", "body", "reason"), CASES, ids=[name for name, _, _ in CASES])
def test_each_case_is_rejected_with_its_reason(name, body, reason):
    with pytest.raises(InvalidEventError) as raised:
        from_eventbridge_event(body)
    assert raised.value.reason.startswith(reason), (name, raised.value.reason)


def test_a_batch_of_every_bad_case_beside_valid_records(template):
    """All cases in ONE batch with 10 valid records: no crash, the bad ones fail with reasons, the valid ones publish."""
    with EmbeddedPipeline(template) as pipeline:
        source = pipeline.event_source("ImageClassifier")
        valid_ids = [f"valid-{i}" for i in range(10)]
        bodies = [json.dumps(envelope(valid_detail(event_id))) for event_id in valid_ids] + [body for _, body, _ in CASES]
        message_ids = {}
        for index, body in enumerate(bodies):
            sent = pipeline.sqs.send_message(QueueUrl=source.queue.url, MessageBody=body)
            message_ids[sent["MessageId"]] = index
        assert len(bodies) <= source.spec.batch_size
        invocation = source.pump(wait=True)

        assert invocation.error is None
        assert invocation.records == len(bodies)
        assert sorted(message_ids[m] for m in invocation.failed_ids) == list(range(10, len(bodies)))
        published = [e["detail"]["data"]["input_id"] for e in pipeline.tapped_events() if e["detail-type"] == "ImageClassified"]
        assert sorted(published) == sorted(valid_ids)
        reasons = {line["message_id"]: line["reason"] for line in source.function.logs if line.get("status") == "invalid"}
        for message_id in invocation.failed_ids:
            name, _, expected = CASES[message_ids[message_id] - 10]
            assert reasons[message_id].startswith(expected), (name, reasons[message_id])

        pipeline.drain()  # the bad ones are retried, then all sit in the DLQ: none lost
        dlq = pipeline.deployment.queue_by_arn(source.queue.dead_letter_arn)
        assert len(pipeline.dead_letters()[dlq.logical_id]) == len(CASES)
