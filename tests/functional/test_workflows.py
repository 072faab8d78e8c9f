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
from collections import Counter

import numpy as np
import pytest
from inferbus_lambda.consumer import result_event_id
from inferbus_lambda.detection import box_iou
from inferbus_lambda.contracts import (
    TEXT_MAX_CHARS,
    Customer,
    ImageSubmitted,
    SceneSubmitted,
    TextSubmitted,
    TransactionSubmitted,
    from_eventbridge_event,
    new_event,
    to_put_events_entry,
)
from inferbus_lambda.tagging import split_words

from inferbus.chaos import FaultRates, inject_faults
from inferbus.local import LocalPipeline
from inferbus.reviews import decide, decide_each, list_reviews
from pipeline._held_out import DIGITS as HOLDOUT
from pipeline._held_out import MODELS
from pipeline._held_out import SCENES as SCENE_HOLDOUT
from pipeline._held_out import TRANSACTIONS as RISK_HOLDOUT
from tests.declared import RESULT_SOURCES

DIGITS = np.load(HOLDOUT)
RISK = np.load(RISK_HOLDOUT)
SCENES = np.load(SCENE_HOLDOUT)
MANIFEST = json.loads((MODELS / "manifest.json").read_text())["models"]
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
    # People, organisations and places from the trained recogniser; the rest from the documented patterns.
    assert {(e.type, e.text) for e in analyzed.data.entities} >= {("PER", "Ada Lovelace"), ("MONEY", "$499"),
                                                                   ("DATE", "2 December 2026")}
    assert all(text[e.start:e.end] == e.text for e in analyzed.data.entities)
    words = analyzed.data.words
    assert all(text[w.start:w.end] == w.text for w in words) and [w.text for w in words][:3] == ["Ada", "Lovelace", "loved"]
    assert [(w.upos, w.ner) for w in words[:3]] == [("PROPN", "B-PER"), ("PROPN", "I-PER"), ("VERB", "O")]
    assert (analyzed.data.tagger.name, analyzed.data.recogniser.name) == ("text-upos", "text-ner")
    assert analyzed.data.encoder.name == "minilm-l6-int8" and analyzed.data.tokens > 10 and not analyzed.data.truncated
    (execution,) = executions(pipeline, "text-pipeline")
    assert execution.status == "SUCCEEDED"
    assert list(execution.states)[:7] == ["Accept", "Route", "Tokenize", "TagPartsOfSpeech", "RecogniseEntities",
                                          "Embed", "Classify"]


@pytest.mark.parametrize("text", ["!" * TEXT_MAX_CHARS, "a " * (TEXT_MAX_CHARS // 2), "Ann " * (TEXT_MAX_CHARS // 4)],
                         ids=["2000 one-character words", "1000 words", "500 names"])
def test_text_pipeline_carries_every_word_of_the_longest_texts(pipeline, text):
    # The most words a text can hold: every word, with its tags, fits the state and the result event.
    submitted = new_event(TextSubmitted(text=text), source="inferbus.test")
    send(pipeline, submitted)
    (analyzed,) = published(pipeline, "TextAnalyzed")
    assert [(w.start, w.end) for w in analyzed.data.words] == [(w.start, w.end) for w in split_words(text)]
    assert all(text[e.start:e.end] == e.text for e in analyzed.data.entities)
    # The twin does not enforce Step Functions' 256 KiB state limit: bound the state here. At its fullest it
    # holds the event, the words twice (as tokenized, then tagged in the result) and the token ids and embedding.
    words = [{"text": w.text, "start": w.start, "end": w.end} for w in analyzed.data.words]
    ids_and_embedding = 256 * 7 + 384 * 12
    state = (len(submitted.model_dump_json()) + len(analyzed.data.model_dump_json()) + len(json.dumps(words))
             + ids_and_embedding)
    assert state < 256 * 1024


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

def scene(index):
    return new_event(SceneSubmitted(width=int(SCENES["images"].shape[2]), height=int(SCENES["images"].shape[1]),
                                    pixels=[int(v) for v in SCENES["images"][index].ravel()]),
                     source="inferbus.test", correlationid=f"req-scene-{index}")


def test_vision_fanout_detects_objects_and_labels_the_scene_in_one_event(pipeline):
    index = int(np.argmax(SCENES["counts"] >= 2))  # a scene of several digits
    submitted = scene(index)
    send(pipeline, submitted)

    shipped = {RESULT_SOURCES["vision-fanout"], RESULT_SOURCES["image-classifier"]}  # a user's may take it too
    events = [e for e in published(pipeline) if e.source in shipped]
    assert [e.type for e in events] == ["ImageAnalyzed"]
    (analyzed,) = events
    data = analyzed.data
    count = int(SCENES["counts"][index])
    assert data.scene == MANIFEST["scene-classifier"]["labels"][int(SCENES["scene"][index])]
    assert (data.detector.name, data.scene_classifier.name) == ("scene-detector", "scene-classifier")
    # Every true digit is found, with its class, by a box overlapping it by at least half; the best-scored
    # boxes are the digits (a low-scored alternative may follow: the detector's threshold is its manifest's).
    true_boxes, true_classes = SCENES["boxes"][index, :count], SCENES["classes"][index, :count]
    overlaps = box_iou(np.array(data.boxes), true_boxes)
    same_class = np.array(data.classes)[:, None] == true_classes[None, :]
    assert ((overlaps >= 0.5) & same_class).any(axis=0).all()
    assert sorted(data.classes[:count]) == sorted(true_classes.tolist())
    assert data.scores == sorted(data.scores, reverse=True)
    assert min(data.scores) >= MANIFEST["scene-detector"]["detection"]["score_threshold"]
    assert analyzed.correlationid == f"req-scene-{index}" and analyzed.data.input_id == submitted.id
    assert len(pipeline.consumer("image-classifier").function.invocations) == 0


def test_an_8x8_image_still_goes_to_the_classifier_and_not_to_the_vision_workflow(pipeline):
    digit = new_event(ImageSubmitted(pixels=[int(v) for v in DIGITS["images"][0]]), source="inferbus.test")
    send(pipeline, digit)
    assert [e.type for e in published(pipeline)
            if e.source in {RESULT_SOURCES["vision-fanout"], RESULT_SOURCES["image-classifier"]}] == ["ImageClassified"]
    assert invocations(pipeline, "vision-fanout", "Detect") == 0


def test_vision_fanout_reports_a_branch_that_keeps_failing(pipeline):
    inject_faults(pipeline.task_function("vision-fanout", "ClassifyScene"), ALWAYS_FAIL)
    submitted = scene(1)
    send(pipeline, submitted)

    (failed,) = published(pipeline, "ImageAnalysisFailed")
    assert failed.data.error == "ClassifySceneFailed" and failed.data.input_id == submitted.id
    assert json.loads(failed.data.cause)["Error"] == "TransientError"  # the task's own error, kept by the branch
    assert invocations(pipeline, "vision-fanout", "ClassifyScene") == 4
    assert invocations(pipeline, "vision-fanout", "Merge") == 0
    assert published(pipeline, "ImageAnalyzed") == []


@pytest.mark.parametrize(("change", "cause"), [
    (lambda d: d["pixels"].__setitem__(3, 99), "data.pixels.3: Input should be less than or equal to 16"),
    (lambda d: d.update(pixels=d["pixels"][:-1]), "data: Value error, pixels must hold width x height = 2304 values, got 2303"),
    (lambda d: d.update(height=4), "data.height: Input should be greater than or equal to 8"),
])
def test_vision_fanout_reports_a_bad_scene(pipeline, change, cause):
    entry = to_put_events_entry(scene(2), pipeline.bus_name)
    detail = json.loads(entry["Detail"])
    change(detail["data"])
    assert pipeline.put_events([entry | {"Detail": json.dumps(detail)}]) == []
    pipeline.drain()
    (failed,) = published(pipeline, "ImageAnalysisFailed")
    assert (failed.data.error, failed.data.cause) == ("InvalidEventError", cause)
    assert invocations(pipeline, "vision-fanout", "Detect") == invocations(pipeline, "vision-fanout", "ClassifyScene") == 0


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


def test_decide_each_answers_every_case_in_one_pass_and_puts_back_what_it_leaves(pipeline):
    submitted = [transaction(HIGH_RISK) for _ in range(12)]  # more cases than one receive takes
    send(pipeline, *submitted)
    queue_url = review_queue_url(pipeline)
    pipeline.sqs.send_message(QueueUrl=queue_url, MessageBody='{"not": "a review request"}')
    left = submitted[0].id
    calls = Counter()
    pipeline.sqs.meta.events.register("before-call.sqs", lambda model, **_: calls.update([model.name]))
    decisions = decide_each(pipeline.sqs, pipeline.stepfunctions, queue_url,
                            lambda case: None if case.transaction_id == left else (True, "one pass"), reviewer="ana")
    assert sorted(d.transaction_id for d in decisions) == sorted(t.id for t in submitted[1:])
    assert {d.outcome for d in decisions} == {"approved"}
    assert calls["ReceiveMessage"] <= 3  # 13 messages, 10 per receive, then an empty answer: not one pass per case
    still = list_reviews(pipeline.sqs, queue_url)
    assert sorted(str(r.transaction_id) for r in still) == sorted([left, "None"])  # visible again at once
    pipeline.drain()
    completed = published(pipeline, "ReviewCompleted")
    assert sorted(e.data.input_id for e in completed) == sorted(t.id for t in submitted[1:])
    assert {(e.data.decision, e.data.reviewer, e.data.note) for e in completed} == {("approved", "ana", "one pass")}


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
    detail["data"]["features"][0] = "0.5"  # JSON, so PutEvents takes it; a string where the contract wants a number
    assert pipeline.put_events([entry | {"Detail": json.dumps(detail)}]) == []
    pipeline.drain()
    source = pipeline.consumer("risk-scorer").source
    assert source.deliveries == 1
    (rejected,) = [kept for kept in pipeline.invalid_events() if kept.get("consumer") == RESULT_SOURCES["risk-scorer"]]
    assert rejected["event_id"] == detail["id"] and rejected["reason"].startswith("data.features.0: "), rejected
    assert all(messages == [] for messages in pipeline.dead_letters().values())
    assert published(pipeline, "RiskScored") == []
