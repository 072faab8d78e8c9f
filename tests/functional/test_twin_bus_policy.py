"""The bus's resource policy, enforced by the local twin (inferbus/runtime/resource_policy.py) on the synthesized stack.

Reserved sources are read from the template's bus policy and producer roles from the template's role tags
(the one place the stack builds them from), never listed here.
"""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
from inferbus_lambda.contracts import to_put_events_entry

from inferbus.demo.inputs import sample_event
from inferbus.local import LocalPipeline
from infra.constructs.event_bus import SOURCE_TAG
from tests.declared import DEMO, PIPELINE, declared_takers


def work(bus: str) -> dict:
    return {"EventBusName": bus, "Source": "my.app", "DetailType": "Work", "Detail": "{}"}


def reserved_sources(template) -> list[str]:
    """The sources the template's bus policy reserves (what ``ForAnyValue:StringEquals`` lists on ``events:source``)."""
    (bus,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Events::EventBus"]
    return sorted({source for statement in bus["Properties"]["Policy"]["Statement"]
                   for operator, keys in statement.get("Condition", {}).items() if operator == "ForAnyValue:StringEquals"
                   for source in keys.get("events:source", [])})


@pytest.fixture(scope="module")
def twin(template):
    """The stack, after one demo sample per declared component: genuine results, one per producer that made one."""
    with LocalPipeline(template) as pipeline:
        samples = [sample_event(component, 0)[0] for component in PIPELINE.components if component.name in DEMO]
        assert pipeline.put_events([to_put_events_entry(event, pipeline.bus_name) for event in samples]) == []
        pipeline.drain()
        reserved = reserved_sources(template)
        genuine = {}
        for event in pipeline.tapped_events():
            if event["source"] in reserved:
                genuine.setdefault(event["source"], event)
        assert genuine, "no producer published a result"
        yield pipeline, reserved, genuine


def forged(pipeline, event: dict, source: str | None = None) -> dict:
    """A copy of a genuine result with a new id, as someone else would put it on the bus."""
    detail = event["detail"] | {"id": f"forged-{uuid.uuid4()}"}
    return {"EventBusName": pipeline.bus_name, "Source": source or event["source"], "DetailType": event["detail-type"],
            "Detail": json.dumps(detail)}


def test_an_outside_client_cannot_put_a_reserved_source_and_nothing_downstream_starts(twin):
    """The issue's case: a forged result (a RiskScored that auto-approves) is refused at PutEvents, as the bus policy does."""
    pipeline, _, genuine = twin
    entries = [forged(pipeline, event) for event in genuine.values()]
    assert any(declared_takers(entry) for entry in entries)  # some forgery would start a component
    answer = pipeline.events.put_events(Entries=entries)
    assert {result.get("ErrorCode") for result in answer["Entries"]} == {"NotAuthorizedForSourceException"}
    assert all("explicit deny in a resource-based policy" in result["ErrorMessage"] for result in answer["Entries"])
    pipeline.drain()
    ids = {json.loads(entry["Detail"])["id"] for entry in entries}
    assert not [e for e in pipeline.tapped_events() if e["detail"].get("id") in ids or e["detail"].get("subject") in ids]


def test_a_forged_entry_fails_every_entry_of_its_request_on_that_bus(twin):
    """``ForAnyValue`` over the request's sources (the bus construct's reading): one forged entry is enough."""
    pipeline, _, genuine = twin
    event = next(iter(genuine.values()))
    answer = pipeline.events.put_events(Entries=[work(pipeline.bus_name), forged(pipeline, event)])
    assert [result.get("ErrorCode") for result in answer["Entries"]] == ["NotAuthorizedForSourceException"] * 2


def test_each_producer_role_may_put_its_own_source_and_no_other(twin, template):
    pipeline, reserved, _ = twin
    tagged = {tags[SOURCE_TAG]: role for role, tags in pipeline.deployment.role_tags.items() if SOURCE_TAG in tags}
    assert sorted(tagged) == reserved  # every reserved source has its producer role in the template, and only those
    entry = {"EventBusName": pipeline.bus_name, "DetailType": "Probe", "Detail": "{}"}
    for source, role in tagged.items():
        assert pipeline.put_events([entry | {"Source": source}], as_role=role) == [], source
        assert pipeline.put_events([entry | {"Source": "my.app"}], as_role=role) == []  # unreserved: anyone
        others = [other for other in reserved if other != source][:2]
        assert len(pipeline.put_events([entry | {"Source": other} for other in others], as_role=role)) == len(others)


def test_a_handler_publishes_as_its_role_and_a_state_machine_as_its_own(twin):
    """The genuine results reached the bus under the policy: functions and workflows act as their template roles."""
    _, _, genuine = twin
    assert {c.result_source for c in PIPELINE.consumers if c.name in DEMO} <= set(genuine)  # each function's
    assert {w.result_source for w in PIPELINE.workflows if w.name in DEMO} & set(genuine)  # a state machine's


def test_the_bus_policy_compares_sources_case_sensitively_as_iam_does_and_no_rule_takes_the_variant(twin):
    """IAM's ``StringEquals`` is case-sensitive: the bus takes ``INFERBUS.…`` from anyone, as AWS would, and no
    component's rule matches it (rules match exactly), so the variant starts nothing. Ingest refuses it on its own rule."""
    pipeline, _, genuine = twin
    for event in genuine.values():
        entry = forged(pipeline, event, source=event["source"].upper())
        assert pipeline.events.put_events(Entries=[entry])["FailedEntryCount"] == 0
        assert declared_takers(entry) == set()


def test_an_sts_session_of_a_producer_role_puts_as_that_role(twin):
    """A client of the twin (``sts assume-role`` against ``inferbus serve``) acts as the role its session belongs to."""
    pipeline, _, genuine = twin
    source = next(iter(genuine))
    credentials = pipeline.session.client("sts").assume_role(RoleArn=pipeline.producer_role(source),
                                                             RoleSessionName="producer-session")["Credentials"]
    events = boto3.session.Session(aws_access_key_id=credentials["AccessKeyId"],
                                   aws_secret_access_key=credentials["SecretAccessKey"],
                                   aws_session_token=credentials["SessionToken"], region_name="us-east-1").client("events")
    answer = events.put_events(Entries=[forged(pipeline, genuine[source])])
    assert answer["FailedEntryCount"] == 0, answer


