"""Every rule pattern of the template, on events it must match and events it must not.

Each rule is put on a moto bus with a queue of its own as target; an event's route is the
set of rules whose queue received it. moto's matcher is the one the embedded runtime uses.
"""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from infra.settings import InferbusSettings
from infra.stack import RESULT_SOURCES

THRESHOLD = InferbusSettings().review_threshold
PIXELS = [0] * 64
FEATURES = [1.0] * 30


def event(detail_type, data, source="my.producer", specversion="1.0"):
    detail = {"specversion": specversion, "id": "e-1", "source": source, "type": detail_type,
              "time": "2026-12-02T10:00:00Z", "correlationid": "c-1", "data": data}
    return {"Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}


def scored(score, source=RESULT_SOURCES["risk-scorer"]):
    return event("RiskScored", {"input_id": "t-1", "customer": {"id": "c", "segment": "new"}, "risk_score": score}, source)


def approved(segment, source=RESULT_SOURCES["auto-approve"]):
    return event("TransactionApproved", {"input_id": "t-1", "customer": {"id": "c", "segment": segment}}, source)


def failed(error, detail_type="TextAnalysisFailed", source=RESULT_SOURCES["text-pipeline"]):
    return event(detail_type, {"workflow": "w", "input_id": "t-1", "error": error, "execution": "arn"}, source)


CASES = [
    ("image, no analysis field", event("ImageSubmitted", {"pixels": PIXELS}), {"ImageClassifier"}),
    ("image, analysis=classify", event("ImageSubmitted", {"pixels": PIXELS, "analysis": "classify"}), {"ImageClassifier"}),
    ("image, analysis=full", event("ImageSubmitted", {"pixels": PIXELS, "analysis": "full"}), {"VisionFanout"}),
    ("image, unknown analysis", event("ImageSubmitted", {"pixels": PIXELS, "analysis": "deep"}), set()),
    ("image, CloudEvents 0.3", event("ImageSubmitted", {"pixels": PIXELS}, specversion="0.3"), set()),
    ("text", event("TextSubmitted", {"text": "hello"}), {"TextPipeline"}),
    ("transaction", event("TransactionSubmitted", {"features": FEATURES}), {"RiskScorer"}),
    ("risk well below the threshold", scored(0.01), {"AutoApprove"}),
    ("risk just below the threshold", scored(THRESHOLD - 1e-6), {"AutoApprove"}),
    ("risk at the threshold", scored(THRESHOLD), {"RiskReview"}),
    ("risk above the threshold", scored(0.99), {"RiskReview"}),
    ("risk scored by an outsider (forged)", scored(0.99, source="evil.producer"), set()),
    ("risk score as a string", event("RiskScored", {"risk_score": "0.9"}, RESULT_SOURCES["risk-scorer"]), set()),
    ("approved, new customer", approved("new"), {"NewCustomerOffers"}),
    ("approved by a reviewer, returning customer", approved("returning", RESULT_SOURCES["risk-review"]),
     {"ReturningCustomerOffers"}),
    ("approved by an outsider (forged)", approved("new", source="evil.producer"), set()),
    ("approved, unknown segment", approved("vip"), set()),
    ("a workflow rejected its input", failed("InvalidEventError"), {"InvalidEventsRouting"}),
    ("a workflow refused a reused id", failed("IdConflictError", "ReviewFailed", RESULT_SOURCES["risk-review"]),
     {"InvalidEventsRouting"}),
    ("a workflow failed after its retries", failed("TransientError"), set()),
    ("a rejection forged by an outsider", failed("InvalidEventError", source="evil.producer"), set()),
    ("a result nobody consumes", event("ImageClassified", {"label": 3}, RESULT_SOURCES["image-classifier"]), set()),
]


@pytest.fixture(scope="module")
def routes(template):
    """Send every case once; return, per case, the construct ids of the rules that matched it."""
    rules = {k: r["Properties"] for k, r in template["Resources"].items() if r["Type"] == "AWS::Events::Rule"}
    with mock_aws():
        events, sqs = boto3.client("events", region_name="us-east-1"), boto3.client("sqs", region_name="us-east-1")
        events.create_event_bus(Name="patterns")
        queues = {}
        for logical_id, rule in rules.items():
            construct_id = logical_id.removesuffix(logical_id[-8:]).removesuffix("Rule")  # TextPipelineRule1A2B3C4D
            url = sqs.create_queue(QueueName=construct_id)["QueueUrl"]
            queues[construct_id] = url
            events.put_rule(Name=construct_id, EventBusName="patterns", EventPattern=json.dumps(rule["EventPattern"]))
            events.put_targets(Rule=construct_id, EventBusName="patterns",
                               Targets=[{"Id": "q", "Arn": f"arn:aws:sqs:us-east-1:123456789012:{construct_id}"}])
        found = {}
        for name, entry, _ in CASES:
            events.put_events(Entries=[entry | {"EventBusName": "patterns"}])
            matched = set()
            for construct_id, url in queues.items():
                messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
                for message in messages:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                if messages:
                    matched.add(construct_id)
            found[name] = matched
        return found, set(queues)


def test_every_rule_is_exercised_by_a_matching_and_a_non_matching_case(routes):
    found, rules = routes
    matched = set().union(*found.values())
    assert matched == rules  # every rule matched at least one case ...
    for rule in rules:  # ... and missed at least one
        assert any(rule not in hit for hit in found.values())


@pytest.mark.parametrize(("name", "expected"), [(name, expected) for name, _, expected in CASES],
                         ids=[name for name, _, _ in CASES])
def test_route(routes, name, expected):
    found, _ = routes
    assert found[name] == expected
