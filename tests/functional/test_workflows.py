"""The three orchestration patterns, executed: the real ASL on moto's interpreter, the real handlers in-process.

Each workflow gets a happy path, a step that keeps failing (retried with backoff, then caught
into its ...Failed event) and a bad input. Every event the workflows publish is read back
through the shared contracts, so what the ASL composes is checked against the same models
the consumers use.
"""

from __future__ import annotations

import copy
import json
import time

import numpy as np
import pytest
from inferbus_lambda.consumer import result_event_id
from inferbus_lambda.contracts import (
    Customer,
    ImageSubmitted,
    TextSubmitted,
    TransactionSubmitted,
    from_eventbridge_event,
    new_event,
    to_put_events_entry,
)

from inferbus.chaos import FaultRates, inject_faults
from inferbus.local import LocalPipeline
from inferbus.reviews import decide, list_reviews
from pipeline._held_out import DIGITS as HOLDOUT
from pipeline._held_out import TRANSACTIONS as RISK_HOLDOUT
from tests.declared import RESULT_SOURCES

DIGITS = np.load(HOLDOUT)
RISK = np.load(RISK_HOLDOUT)
ALWAYS_FAIL = FaultRates.only(step_error_rate=1.0)


@pytest.fixture
def pipeline(template):
    with LocalPipeline(template) as running:
        yield running


def published(pipeline, detail_type=None):
    """Every event inferbus itself put on the bus, validated by the contracts (a broken one fails here)."""
    events = []
    for delivered in pipeline.tapped_events():
        if delivered["source"] not in RESULT_SOURCES.values():
            continue  # what the test sent
        event = from_eventbridge_event(delivered)
        if detail_type is None or event.type == detail_type:
            events.append(event)
    return events


def send(pipeline, *events):
    assert pipeline.put_events([to_put_events_entry(event, pipeline.bus_name) for event in events]) == []
    pipeline.drain()


def executions(pipeline, workflow):
    return pipeline.executions(pipeline.state_machine(workflow).logical_id)


def invocations(pipeline, workflow, step):
    return len(pipeline.task_function(workflow, step).invocations)


# -- sequential: the text pipeline ---------------------------------------------------------------

def test_text_pipeline_analyses_sentiment_and_entities(pipeline):
    text = "Ada Lovelace loved the new phone and paid $499 for it on 2 December 2026. Brilliant!"
    submitted = new_event(TextSubmitted(text=text), source="inferbus.test", correlationid="req-text-1")
    send(pipeline, submitted)

    events = published(pipeline)
    (analyzed,) = [e for e in events if e.type == "TextAnalyzed"]
    assert analyzed.source == RESULT_SOURCES["text-pipeline"]
    assert analyzed.id == result_event_id(submitted.id, f"{analyzed.source}:TextAnalyzed", input_source=submitted.source)
    assert (analyzed.correlationid, analyzed.subject, analyzed.data.input_id) == ("req-text-1", submitted.id, submitted.id)
    assert analyzed.data.sentiment.label == "positive"
    assert {(e.type, e.text) for e in analyzed.data.entities} >= {("NAME", "Ada Lovelace"), ("MONEY", "$499"),
                                                                   ("DATE", "2 December 2026")}
    assert analyzed.data.encoder.name == "minilm-l6-int8" and analyzed.data.tokens > 10 and not analyzed.data.truncated
    (execution,) = executions(pipeline, "text-pipeline")
    assert execution.status == "SUCCEEDED"
    assert list(execution.states)[:6] == ["Accept", "Route", "Tokenize", "Embed", "Classify", "ExtractEntities"]


def test_text_pipeline_runs_a_redelivered_event_once(pipeline):
    submitted = new_event(TextSubmitted(text="Terrible service, never again."), source="inferbus.test")
    send(pipeline, submitted)
    send(pipeline, submitted)  # EventBridge delivers at least once
    analyzed = published(pipeline, "TextAnalyzed")
    assert [e.data.input_id for e in analyzed] == [submitted.id]
    assert analyzed[0].data.sentiment.label == "negative"
    runs = executions(pipeline, "text-pipeline")
    assert [e.status for e in runs] == ["SUCCEEDED", "SUCCEEDED"]
    assert sorted("Duplicate" in e.states for e in runs) == [False, True]
    assert invocations(pipeline, "text-pipeline", "Embed") == 1


def test_text_pipeline_retries_a_failing_step_then_reports_it(pipeline):
    inject_faults(pipeline.task_function("text-pipeline", "Embed"), ALWAYS_FAIL)
    submitted = new_event(TextSubmitted(text="The encoder is down."), source="inferbus.test", correlationid="req-text-3")
    send(pipeline, submitted)

    (failed,) = published(pipeline, "TextAnalysisFailed")
    assert (failed.data.input_id, failed.correlationid, failed.data.workflow) == (submitted.id, "req-text-3", "text-pipeline")
    assert failed.data.error == "TransientError" and "injected fault" in failed.data.cause
    assert published(pipeline, "TextAnalyzed") == []
    assert invocations(pipeline, "text-pipeline", "Embed") == 4  # the first try and three retries
    assert invocations(pipeline, "text-pipeline", "Classify") == 0
    (execution,) = executions(pipeline, "text-pipeline")
    assert (execution.status, execution.error) == ("FAILED", "WorkflowFailed")


def test_text_pipeline_reports_a_bad_input_without_running_a_model(pipeline):
    submitted = new_event(TextSubmitted(text="fine"), source="inferbus.test", correlationid="req-text-4")
    entry = to_put_events_entry(submitted, pipeline.bus_name)
    detail = json.loads(entry["Detail"])
    detail["data"]["text"] = "x" * 2001
    assert pipeline.put_events([entry | {"Detail": json.dumps(detail)}]) == []
    pipeline.drain()

    (failed,) = published(pipeline, "TextAnalysisFailed")
    assert failed.data.error == "InvalidEventError"
    assert failed.data.cause == "data.text: String should have at most 2000 characters"
    assert (failed.data.input_id, failed.correlationid) == (submitted.id, "req-text-4")
    assert invocations(pipeline, "text-pipeline", "Tokenize") == 0


# -- parallel: the vision fan-out ----------------------------------------------------------------

def image(index, analysis="full"):
    return new_event(ImageSubmitted(pixels=[int(v) for v in DIGITS["images"][index]], analysis=analysis),
                     source="inferbus.test", correlationid=f"req-image-{index}")


def test_vision_fanout_runs_both_models_and_combines_them(pipeline):
    submitted = image(0)
    send(pipeline, submitted)

    shipped = {RESULT_SOURCES["vision-fanout"], RESULT_SOURCES["image-classifier"]}  # a user's may take it too
    events = [e for e in published(pipeline) if e.source in shipped]
    assert [e.type for e in events] == ["ImageAnalyzed"]  # and not ImageClassified: one path per image
    (analyzed,) = events
    assert analyzed.data.label == int(DIGITS["labels"][0]) and analyzed.data.agreement
    assert [b.model.name for b in analyzed.data.branches] == ["digits-mlp", "digits-svc"]
    mean = np.mean([b.probabilities for b in analyzed.data.branches], axis=0)
    assert analyzed.data.confidence == pytest.approx(mean.max(), abs=1e-5)
    assert analyzed.correlationid == "req-image-0"
    assert len(pipeline.consumer("image-classifier").function.invocations) == 0


def test_vision_fanout_reports_a_branch_that_keeps_failing(pipeline):
    inject_faults(pipeline.task_function("vision-fanout", "ScoreSvc"), ALWAYS_FAIL)
    submitted = image(1)
    send(pipeline, submitted)

    (failed,) = published(pipeline, "ImageAnalysisFailed")
    assert failed.data.error == "ScoreSvcFailed" and failed.data.input_id == submitted.id
    assert json.loads(failed.data.cause)["Error"] == "TransientError"  # the task's own error, kept by the branch
    assert invocations(pipeline, "vision-fanout", "ScoreSvc") == 4 and invocations(pipeline, "vision-fanout", "Merge") == 0
    assert published(pipeline, "ImageAnalyzed") == []


def test_vision_fanout_reports_a_bad_image(pipeline):
    entry = to_put_events_entry(image(2), pipeline.bus_name)
    detail = json.loads(entry["Detail"])
    detail["data"]["pixels"][3] = 99
    assert pipeline.put_events([entry | {"Detail": json.dumps(detail)}]) == []
    pipeline.drain()
    (failed,) = published(pipeline, "ImageAnalysisFailed")
    assert (failed.data.error, failed.data.cause) == ("InvalidEventError", "data.pixels.3: Input should be less than or equal to 16")
    assert invocations(pipeline, "vision-fanout", "ScoreMlp") == invocations(pipeline, "vision-fanout", "ScoreSvc") == 0


# -- conditional routing: risk scoring, automatic approval, manual review --------------------------

def transaction(index, segment="returning"):
    return new_event(TransactionSubmitted(customer=Customer(id=f"customer-{index}", segment=segment),
                                          features=[float(v) for v in RISK["features"][index]]),
                     source="inferbus.test", correlationid=f"req-txn-{index}")


def review_queue_url(pipeline):
    return pipeline.review_queue_url("risk-review")


def offers(events, segment):
    """The transactions the segment's recommender answered, among ``events`` (what :func:`published` read):
    each Recommended names the approval it took, which names the transaction."""
    approvals = {e.id: e.data.input_id for e in events if e.type == "TransactionApproved"}
    return [approvals[e.data.input_id] for e in events
            if e.type == "Recommended" and e.source == RESULT_SOURCES[f"{segment.lower()}-customer-recommender"]]


LOW_RISK, HIGH_RISK = 0, 1  # rows of risk-holdout.npz: benign (risk 0.001) and malignant (risk 1.0)


def test_low_risk_is_approved_automatically_and_routed_by_segment(pipeline):
    submitted = transaction(LOW_RISK, segment="new")
    send(pipeline, submitted)

    events = published(pipeline)
    (scored,) = [e for e in events if e.type == "RiskScored"]
    (approved,) = [e for e in events if e.type == "TransactionApproved"]
    assert scored.source == RESULT_SOURCES["risk-scorer"] and scored.data.customer.segment == "new"
    assert approved.source == RESULT_SOURCES["auto-approve"] and approved.data.decided_by == "auto"
    assert approved.data.risk_score < 0.5 and approved.correlationid == submitted.correlationid
    assert offers(events, "New") == [submitted.id] and offers(events, "Returning") == []
    assert list_reviews(pipeline.sqs, review_queue_url(pipeline)) == []


def test_high_risk_waits_for_a_person_who_approves_it(pipeline):
    submitted = transaction(HIGH_RISK)
    send(pipeline, submitted)

    (scored,) = published(pipeline, "RiskScored")
    assert scored.data.risk_score >= 0.5 and scored.data.input_id == submitted.id
    (review,) = list_reviews(pipeline.sqs, review_queue_url(pipeline))
    assert review.request.case.transaction_id == submitted.id and review.request.case.risk_score == scored.data.risk_score
    (waiting,) = executions(pipeline, "risk-review")
    assert waiting.status == "RUNNING" and waiting.waiting_for_task_token

    decision = decide(pipeline.sqs, pipeline.stepfunctions, review_queue_url(pipeline), submitted.id, approve=True,
                      reviewer="ana", note="known customer")
    assert decision.outcome == "approved"
    pipeline.drain()
    everything = published(pipeline)
    events = {e.type: e for e in everything}
    completed, approved = events["ReviewCompleted"], events["TransactionApproved"]
    assert (completed.data.decision, completed.data.reviewer, completed.data.note) == ("approved", "ana", "known customer")
    assert (approved.data.decided_by, approved.data.reviewer) == ("reviewer", "ana")
    assert offers(everything, "Returning") == [submitted.id]
    assert list_reviews(pipeline.sqs, review_queue_url(pipeline)) == []
    assert executions(pipeline, "risk-review")[0].status == "SUCCEEDED"


def test_high_risk_rejected_by_a_person(pipeline):
    submitted = transaction(HIGH_RISK)
    send(pipeline, submitted)
    assert decide(pipeline.sqs, pipeline.stepfunctions, review_queue_url(pipeline), submitted.id, approve=False,
                  reviewer="ana", note="card reported stolen").outcome == "rejected"
    pipeline.drain()
    events = published(pipeline)
    (completed,) = [e for e in events if e.type == "ReviewCompleted"]
    assert completed.data.decision == "rejected" and completed.data.input_id == submitted.id
    assert not [e for e in events if e.type == "TransactionApproved"]
    assert offers(events, "Returning") == [] and offers(events, "New") == []
    assert decide(pipeline.sqs, pipeline.stepfunctions, review_queue_url(pipeline), submitted.id, approve=True,
                  reviewer="bob").outcome == "not-found"


def test_a_review_nobody_decides_times_out_into_review_failed(template):
    short = copy.deepcopy(template)
    for resource in short["Resources"].values():
        substitutions = resource.get("Properties", {}).get("DefinitionSubstitutions", {})
        if "ReviewTimeoutSeconds" in substitutions:
            substitutions["ReviewTimeoutSeconds"] = "2"  # the real ASL, with a timeout a test can wait for
    with LocalPipeline(short) as pipeline:
        submitted = transaction(HIGH_RISK)
        send(pipeline, submitted)
        (review,) = list_reviews(pipeline.sqs, review_queue_url(pipeline))
        assert review.request.case.timeout_s == 2
        time.sleep(3)
        pipeline.drain()
        events = published(pipeline)
        (scored,) = [e for e in events if e.type == "RiskScored"]
        (failed,) = [e for e in events if e.type == "ReviewFailed"]
        assert failed.data.error == "States.Timeout"
        assert (failed.data.input_id, failed.correlationid) == (scored.id, submitted.correlationid)  # the workflow's input
        assert decide(pipeline.sqs, pipeline.stepfunctions, review_queue_url(pipeline), submitted.id, approve=True,
                      reviewer="late").outcome == "expired"
        assert list_reviews(pipeline.sqs, review_queue_url(pipeline)) == []  # the stale case is gone


def test_a_malformed_transaction_is_kept_aside_with_its_reason_at_once(pipeline):
    entry = to_put_events_entry(transaction(5), pipeline.bus_name)
    detail = json.loads(entry["Detail"])
    detail["data"]["features"][0] = float("nan")
    assert pipeline.put_events([entry | {"Detail": json.dumps(detail)}]) == []
    pipeline.drain()
    source = pipeline.consumer("risk-scorer").source
    assert source.deliveries == 1
    (rejected,) = [kept for kept in pipeline.invalid_events() if kept.get("consumer") == RESULT_SOURCES["risk-scorer"]]
    assert (rejected["event_id"], rejected["reason"]) == (detail["id"], "body: not valid JSON (NaN is not a JSON number)")
    assert all(messages == [] for messages in pipeline.dead_letters().values())
    assert published(pipeline, "RiskScored") == []
