"""Every malformed input of every kind gets its reason, lands where invalid events wait, and never
blocks the valid events beside it.

Queue consumers send a bad record to the invalid-events queue at once, with the reason and the
body, and report it handled (a retry would fail the same way). A workflow rejects it in its
first step: its ...Failed event carries the reason, and a rule brings that event to the same
queue. Nothing is retried in vain, nothing reaches a DLQ, nothing is lost.
"""

from __future__ import annotations

import json

import pytest
from inferbus_lambda.contracts import (
    InvalidEventError,
    TextSubmitted,
    from_eventbridge_event,
    new_event,
    to_put_events_entry,
)

from inferbus.local import LocalPipeline
from tests.catalogue import SCENE_CASES, CASES, TEXT_CASES, TRANSACTION_CASES, envelope, valid_detail
from tests.declared import PIPELINE

ALL_CASES = CASES + TRANSACTION_CASES + TEXT_CASES + SCENE_CASES


def test_catalogue_is_large_covers_every_input_type_and_names_are_unique():
    assert len(ALL_CASES) >= 30 and all(len(cases) >= 2 for cases in (CASES, TRANSACTION_CASES, TEXT_CASES, SCENE_CASES))
    assert len({name for name, _, _ in ALL_CASES}) == len(ALL_CASES)


@pytest.mark.parametrize(("name", "body", "reason"), ALL_CASES, ids=[name for name, _, _ in ALL_CASES])
def test_each_case_is_rejected_with_its_reason(name, body, reason):
    with pytest.raises(InvalidEventError) as raised:
        from_eventbridge_event(body)
    assert raised.value.reason.startswith(reason), (name, raised.value.reason)


def rejections(pipeline):
    return [json.loads(message["Body"]) for message in pipeline.peek(pipeline.invalid_events_url)]


def workflow_rejections(pipeline):
    """The workflows' rejections (their ...Failed events, which a rule brings to the invalid-events queue); a consumer
    that takes the same events keeps its own, in its own format."""
    workflows = {workflow.result_source for workflow in PIPELINE.workflows}
    return [body for body in rejections(pipeline) if body.get("source") in workflows]


@pytest.mark.parametrize(("consumer", "event_type", "cases"),
                         [("image-classifier", "ImageSubmitted", CASES), ("risk-scorer", "TransactionSubmitted", TRANSACTION_CASES)])
def test_a_batch_of_every_bad_case_beside_valid_records(template, consumer, event_type, cases):
    """All cases in ONE batch with 10 valid records: no crash, no retry, the valid ones publish."""
    with LocalPipeline(template) as pipeline:
        source = pipeline.consumer(consumer).source
        valid_ids = [f"valid-{i}" for i in range(10)]
        bodies = [json.dumps(envelope(valid_detail(event_id, event_type))) for event_id in valid_ids]
        bodies += [body for _, body, _ in cases]
        message_ids = {}
        for index, body in enumerate(bodies):
            message_ids[pipeline.sqs.send_message(QueueUrl=source.queue.url, MessageBody=body)["MessageId"]] = index
        assert len(bodies) <= source.spec.batch_size
        invocation = source.pump(wait=True)

        assert invocation.error is None and invocation.records == len(bodies)
        assert invocation.failed_ids == []  # every bad record handled: kept aside with its reason
        result_type = PIPELINE.component(consumer).result_type
        published = [e["detail"]["data"]["input_id"] for e in pipeline.tapped_events() if e["detail-type"] == result_type]
        assert sorted(published) == sorted(valid_ids)
        kept = {rejection["message_id"]: rejection for rejection in rejections(pipeline)}
        assert set(kept) == {m for m, index in message_ids.items() if index >= 10}
        for message_id, rejection in kept.items():
            name, body, expected = cases[message_ids[message_id] - 10]
            assert rejection["reason"].startswith(expected), (name, rejection["reason"])
            assert rejection["consumer"] == source.function.spec.environment["RESULT_SOURCE"]
            assert rejection["body"] == body[:len(rejection["body"])]  # the record itself, cut at 64 KiB
            assert rejection["body_truncated"] == (len(body.encode()) > 64 * 1024)

        pipeline.drain()
        assert source.deliveries == len(bodies)  # nothing delivered twice
        assert all(messages == [] for messages in pipeline.dead_letters().values())


def test_every_bad_case_sent_to_a_workflow_is_rejected_and_kept_with_its_reason(template):
    with LocalPipeline(template) as pipeline:
        good = new_event(TextSubmitted(text="Lovely, quick and friendly."), source="catalogue.producer")
        entries = [to_put_events_entry(good, pipeline.bus_name)]
        expected = {}
        for name, body, reason in TEXT_CASES + SCENE_CASES:
            delivered = json.loads(body)
            detail = delivered["detail"]
            expected[detail["id"]] = (name, reason)
            entries.append({"EventBusName": pipeline.bus_name, "Source": delivered["source"],
                            "DetailType": delivered["detail-type"], "Detail": json.dumps(detail)})
        for start in range(0, len(entries), 10):
            assert pipeline.put_events(entries[start:start + 10]) == []
        pipeline.drain()

        events = pipeline.tapped_events()
        assert [e["detail"]["data"]["input_id"] for e in events if e["detail-type"] == "TextAnalyzed"] == [good.id]
        failed = {e["detail"]["data"]["input_id"]: e["detail"]["data"] for e in events if e["detail-type"].endswith("Failed")}
        assert set(failed) == set(expected)
        for event_id, data in failed.items():
            name, reason = expected[event_id]
            assert data["error"] == "InvalidEventError" and data["cause"].startswith(reason), (name, data)
        kept = [rejection["detail"]["data"]["input_id"] for rejection in workflow_rejections(pipeline)]
        assert sorted(kept) == sorted(expected)  # the rule brought every rejection to the invalid-events queue
        assert not pipeline.task_function("vision-fanout", "Detect").invocations
        assert not pipeline.task_function("vision-fanout", "ClassifyScene").invocations
        assert len(pipeline.task_function("text-pipeline", "Tokenize").invocations) == 1  # only the good text reached a model


def test_a_forged_result_that_reaches_a_workflow_is_rejected(template):
    """The bus rules and policy keep a forged RiskScored away; if one got through, Accept refuses it."""
    with LocalPipeline(template) as pipeline:
        forged = valid_detail("forged-1", "TransactionSubmitted") | {
            "type": "RiskScored", "source": "evil.producer",
            "data": {"input_id": "t-1", "customer": {"id": "c", "segment": "new"}, "risk_score": 0.01,
                     "model": {"name": "m", "version": "1"}, "inference_ms": 1.0, "batch_size": 1}}
        machine = pipeline.state_machine("auto-approve")
        pipeline.stepfunctions.start_execution(stateMachineArn=machine.arn, name="forged",
                                               input=json.dumps(envelope(forged)))
        pipeline.drain()
        events = pipeline.tapped_events()
        assert not [e for e in events if e["detail-type"] == "TransactionApproved"]
        (failed,) = [e["detail"]["data"] for e in events if e["detail-type"] == "ApprovalFailed"]
        assert failed["error"] == "InvalidEventError"
        assert failed["cause"] == "source: RiskScored is accepted only from inferbus.risk-scorer, not 'evil.producer'"


def test_an_event_over_256_kb_is_refused_before_it_is_sent(template):
    from inferbus_lambda.publishing import publish_events

    with LocalPipeline(template) as pipeline:
        huge = new_event(TextSubmitted(text="ok"), source="catalogue.producer")
        entry = to_put_events_entry(huge, pipeline.bus_name)
        entry["Detail"] = entry["Detail"].replace('"ok"', json.dumps("x" * 300_000))
        (failure,) = publish_events(pipeline.events, [entry], max_attempts=1)  # never put on the bus
        assert failure.error_code == "EntryTooLarge"
        pipeline.drain()
        assert pipeline.tapped_events() == [] and pipeline.executions() == []
