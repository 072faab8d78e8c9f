"""Every rule pattern of the template, on events it must match and events it must not.

Each rule is put on a moto bus with a queue of its own as target; an event's route is the
set of components whose rule's queue received it. moto is patched as the embedded runtime
patches it (:mod:`inferbus.runtime.moto_patches`): patterns match with AWS's semantics. ``CASES`` are documented cases
for the shipped components, each checked among the rules of the components it names (a component a user adds on the same
event type may take the same events); every component with demo samples is also checked on its own samples, expected
where its declaration and every other declaration on the bus say (``tests.declared``), so a new one is covered unedited.
"""

from __future__ import annotations

import contextlib
import json

import boto3
import pytest
from inferbus_lambda.contracts import to_put_events_entry
from moto import mock_aws

from inferbus.demo.inputs import demo_components, sample_events
from inferbus.model.names import UNROUTED_CHECK_ID
from inferbus.model.settings import InferbusSettings
from inferbus.runtime import moto_patches
from tests.declared import DECLARED_PATTERNS, ON_THE_BUS, PIPELINE, RESULT_SOURCES, declared_takers

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
    ("image, no analysis field", event("ImageSubmitted", {"pixels": PIXELS}), {"image-classifier"}),
    ("image, analysis=classify", event("ImageSubmitted", {"pixels": PIXELS, "analysis": "classify"}), {"image-classifier"}),
    ("image, analysis=full (no longer a path)", event("ImageSubmitted", {"pixels": PIXELS, "analysis": "full"}), set()),
    ("scene", event("SceneSubmitted", {"width": 8, "height": 8, "pixels": PIXELS}), {"vision-fanout"}),
    # AWS: an empty array or object has no leaf, so "exists: false" holds and the classifier takes it (and rejects
    # it, with the reason); moto's own matcher matched no rule, and the event was silently lost.
    ("image, analysis=[]", event("ImageSubmitted", {"pixels": PIXELS, "analysis": []}), {"image-classifier"}),
    ("image, analysis={}", event("ImageSubmitted", {"pixels": PIXELS, "analysis": {}}), {"image-classifier"}),
    ("image, unknown analysis", event("ImageSubmitted", {"pixels": PIXELS, "analysis": "deep"}), set()),
    ("image, CloudEvents 0.3", event("ImageSubmitted", {"pixels": PIXELS}, specversion="0.3"), set()),
    ("text", event("TextSubmitted", {"text": "hello"}), {"text-pipeline"}),
    ("transaction", event("TransactionSubmitted", {"features": FEATURES}), {"risk-scorer"}),
    ("risk well below the threshold", scored(0.01), {"auto-approve"}),
    ("risk just below the threshold", scored(THRESHOLD - 1e-6), {"auto-approve"}),
    ("risk at the threshold", scored(THRESHOLD), {"risk-review"}),
    ("risk above the threshold", scored(0.99), {"risk-review"}),
    ("risk scored by an outsider (forged)", scored(0.99, source="evil.producer"), set()),
    ("risk score as a string", event("RiskScored", {"risk_score": "0.9"}, RESULT_SOURCES["risk-scorer"]), set()),
    ("approved, new customer", approved("new"), {"new-customer-recommender"}),
    ("approved by a reviewer, returning customer", approved("returning", RESULT_SOURCES["risk-review"]),
     {"returning-customer-recommender"}),
    ("approved by an outsider (forged)", approved("new", source="evil.producer"), set()),
    ("approved, unknown segment", approved("vip"), set()),
    ("a workflow rejected its input", failed("InvalidEventError"), {"invalid-events"}),
    ("a workflow refused a reused id", failed("IdConflictError", "ReviewFailed", RESULT_SOURCES["risk-review"]),
     {"invalid-events"}),
    ("a workflow failed after its retries", failed("TransientError"), set()),
    ("a rejection forged by an outsider", failed("InvalidEventError", source="evil.producer"), set()),
    ("a result nobody consumes", event("ImageClassified", {"label": 3}, RESULT_SOURCES["image-classifier"]), set()),
]


SAMPLE_CASES = [  # of the components a rule of the bus feeds: a kafka or rabbitmq consumer reads its broker
    (f"a demo sample of {component.name}", entry, declared_takers(entry))
    for component in demo_components(PIPELINE) if component in ON_THE_BUS for event, _ in sample_events(component, 1)
    for entry in [to_put_events_entry(event, "patterns")]
]
CASE_COMPONENTS = set().union(*(expected for _, _, expected in CASES))  # the rules the documented cases speak of
INVALID_EVENTS = "invalid-events"  # the rule that brings workflows' rejections to the invalid-events queue
RESULTS_ARCHIVE = "results-archive"  # the rule that delivers every producer's events to the cold tier


def component_of_rule(logical_id: str) -> str:
    """The declared component whose construct made this rule (logical ids start with its construct id)."""
    for component in PIPELINE.components:
        if logical_id.startswith(f"{component.construct_id}Rule"):
            return component.name
    if logical_id.startswith("ResultsArchiveRule"):
        return RESULTS_ARCHIVE
    assert logical_id.startswith("InvalidEventsRouting"), logical_id
    return INVALID_EVENTS


@contextlib.contextmanager
def patched_moto():
    moto_patches.install()
    try:
        yield
    finally:
        moto_patches.uninstall()


@pytest.fixture(scope="module")
def routes(template):
    """Send every case once; return, per case, the components whose rules matched it."""
    rules = {k: r["Properties"] for k, r in template["Resources"].items()
             if r["Type"] == "AWS::Events::Rule" and not k.startswith(UNROUTED_CHECK_ID)  # not the catch-all
             and r["Properties"].get("EventBusName") != "default"}  # nor the workflows' nets, on the default bus
    with mock_aws(), patched_moto():
        events, sqs = boto3.client("events", region_name="us-east-1"), boto3.client("sqs", region_name="us-east-1")
        events.create_event_bus(Name="patterns")
        queues = {}
        for logical_id, rule in rules.items():
            name = component_of_rule(logical_id)
            url = sqs.create_queue(QueueName=name)["QueueUrl"]
            queues[name] = url
            events.put_rule(Name=name, EventBusName="patterns", EventPattern=json.dumps(rule["EventPattern"]))
            events.put_targets(Rule=name, EventBusName="patterns",
                               Targets=[{"Id": "q", "Arn": f"arn:aws:sqs:us-east-1:123456789012:{name}"}])
        found = {}
        for name, entry, _ in CASES + SAMPLE_CASES:
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


def test_every_rule_of_a_documented_or_sampled_component_is_exercised_both_ways(routes):
    found, rules = routes
    covered = set().union(*(expected for _, _, expected in CASES + SAMPLE_CASES))
    assert covered <= rules
    matched = set().union(*found.values())
    assert covered <= matched  # every such rule matched at least one case ...
    for rule in covered:  # ... and missed at least one
        assert any(rule not in hit for hit in found.values())


@pytest.mark.parametrize(("name", "expected"), [(name, expected) for name, _, expected in CASES],
                         ids=[name for name, _, _ in CASES])
def test_route(routes, name, expected):
    """Among the rules the documented cases speak of (a component a user adds may take the same events)."""
    found, _ = routes
    assert found[name] & CASE_COMPONENTS == expected


@pytest.mark.parametrize(("name", "expected"), [(name, expected) for name, _, expected in SAMPLE_CASES],
                         ids=[name for name, _, _ in SAMPLE_CASES])
def test_a_demo_sample_reaches_every_component_whose_declaration_takes_it(routes, name, expected):
    found, _ = routes
    assert name.removeprefix("a demo sample of ") in expected  # its own component, at least
    assert found[name] & set(DECLARED_PATTERNS) == expected


def test_the_results_archive_takes_every_producers_events_and_nothing_from_outside(routes):
    found, rules = routes
    assert RESULTS_ARCHIVE in rules
    for name, entry, _ in CASES + SAMPLE_CASES:
        internal = entry["Source"] in RESULT_SOURCES.values()
        assert (RESULTS_ARCHIVE in found[name]) == internal, name
