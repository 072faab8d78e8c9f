"""Nothing vanishes at the bus: an event PutEvents accepts and no rule takes is kept with its reason.

The catch-all rule sends every event to the unrouted-events check, which keeps in the
invalid-events queue each event that is no producer's result and that no other rule of the bus
takes, with the contract's reason (or, for a valid event, which type from which source).
"""

from __future__ import annotations

import json

import pytest

from inferbus.local import LocalPipeline
from inferbus.model.names import FUNCTION_NAME, UNROUTED_CHECK_ID, UNROUTED_CHECK_SOURCE
from tests.catalogue import valid_detail
from tests.declared import PIPELINE, RESULT_SOURCES, declared_takers

# (name, change to a valid ImageSubmitted detail, the start of the reason it must be kept with)
UNROUTED = [
    ("specversion 0.3", lambda d: d.update(specversion="0.3"), "specversion: Input should be '1.0'"),
    ("no specversion", lambda d: d.pop("specversion"), "specversion: Field required"),
    ("specversion as the number 1.0", lambda d: d.update(specversion=1.0), "specversion: Input should be '1.0'"),
    ("analysis 'Full'", lambda d: d["data"].update(analysis="Full"), "data.analysis: Input should be 'classify'"),
    ("analysis null", lambda d: d["data"].update(analysis=None), "data.analysis: Input should be 'classify'"),
    ("a type with a zero-width space", lambda d: d.update(type="Image\u200bSubmitted"), "type: unknown event type"),
    ("a valid RiskScored from an outsider", lambda d: d.update(
        type="RiskScored", source="evil.producer",
        data={"input_id": "t-1", "customer": {"id": "c", "segment": "new"}, "risk_score": 0.9,
              "model": {"name": "m", "version": "1"}, "inference_ms": 1.0, "batch_size": 1}),
     "no rule of the bus takes a valid RiskScored event from 'evil.producer'"),
]


def keeper_and_event(kept: dict) -> tuple[str, str | None]:
    """Who kept a message of the invalid-events queue, and which event: a consumer's or the check's rejection, or a
    workflow's ...Failed event (which a rule brings there)."""
    if "detail" in kept:
        return kept["source"], kept["detail"]["data"].get("input_id")
    return kept["consumer"], kept["event_id"]


def entry(detail, bus):
    return {"EventBusName": bus, "Source": detail.get("source", "x"), "DetailType": detail.get("type", "x"),
            "Detail": json.dumps(detail)}


@pytest.fixture(scope="module")
def outcome(template):
    """Every case, a valid event and a result nobody takes, through the embedded pipeline."""
    with LocalPipeline(template) as pipeline:
        add_foreign_rules(pipeline)
        entries, expected, taken = [], {}, {}
        for index, (name, change, reason) in enumerate(UNROUTED):
            detail = valid_detail(f"unrouted-{index}")
            change(detail)
            entries.append(entry(detail, pipeline.bus_name))
            takers = declared_takers(entries[-1])  # no shipped component takes these; one a user adds may
            (taken if takers else expected)[detail["id"]] = (name, takers or reason)
        valid = valid_detail("routed-1")
        result = valid_detail("result-1") | {"type": "ImageClassified", "source": RESULT_SOURCES["image-classifier"]}
        entries += [entry(valid, pipeline.bus_name)]
        # A result is reserved to its producer's role by the bus policy: put it as that role.
        assert pipeline.put_events([entry(result, pipeline.bus_name)], as_role=pipeline.producer_role(result["source"])) == []
        entries += [{"EventBusName": pipeline.bus_name, "Source": "shipping.app", "DetailType": "ShipmentDelayed",
                     "Detail": json.dumps({"parcel": f"p-{n}"})} for n in range(FOREIGN_EVENTS)]
        lost = [{"EventBusName": pipeline.bus_name, "Source": "shipping.app", "DetailType": detail_type,
                 "Detail": json.dumps({"parcel": "p-lost"})} for detail_type in ("ShipmentLost", "ShipmentLate")]
        entries += lost
        not_objects = [{"EventBusName": pipeline.bus_name, "Source": "s", "DetailType": "t", "Detail": detail}
                       for detail in ("[]", "42", '"text"', "null")]
        refused = pipeline.put_events(entries + not_objects)
        pipeline.drain()
        yield pipeline, expected, refused, pipeline.invalid_events(), pipeline.tapped_events(), taken


FOREIGN_EVENTS = 30


def add_foreign_rules(pipeline) -> None:
    """Rules of another application on the same bus, added by a client outside the stack: one that
    delivers to its own queue, one with no target and one disabled (those two take nothing)."""
    events, sqs = pipeline.events, pipeline.sqs
    arn = sqs.get_queue_attributes(QueueUrl=sqs.create_queue(QueueName="shipping-delays")["QueueUrl"],
                                   AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    for name, detail_type, state in (("shipping-delays", "ShipmentDelayed", "ENABLED"),
                                     ("shipping-lost", "ShipmentLost", "ENABLED"),
                                     ("shipping-late", "ShipmentLate", "DISABLED")):
        events.put_rule(Name=name, EventBusName=pipeline.bus_name, State=state,
                        EventPattern=json.dumps({"source": ["shipping.app"], "detail-type": [detail_type]}))
        if name != "shipping-lost":
            events.put_targets(Rule=name, EventBusName=pipeline.bus_name, Targets=[{"Id": "q", "Arn": arn}])


def test_every_unrouted_event_is_kept_with_its_reason(outcome):
    pipeline, expected, refused, kept, _, taken = outcome
    unrouted = {k["event_id"]: k for k in kept if keeper_and_event(k)[0] == UNROUTED_CHECK_SOURCE
                and "shipping.app" not in k["body"]}
    assert set(unrouted) == set(expected)
    for event_id, (name, reason) in expected.items():
        assert unrouted[event_id]["reason"].startswith(reason), (name, unrouted[event_id]["reason"])
        assert json.loads(unrouted[event_id]["body"])["detail"]["id"] == event_id  # the event itself is kept
    # A case a declared component takes after all (one added on the same event type) is that component's to keep.
    for event_id, (name, takers) in taken.items():
        keepers = {keeper for keeper, kept_id in map(keeper_and_event, kept) if kept_id == event_id}
        assert keepers == {RESULT_SOURCES[t] for t in takers}, (name, keepers)


def test_a_routed_event_and_a_result_nobody_takes_are_not_kept(outcome):
    pipeline, _, _, kept, events, _ = outcome
    assert not [k for k in kept if keeper_and_event(k)[1] in ("routed-1", "result-1")]
    assert [e["detail"]["subject"] for e in events if e["detail-type"] == "ImageClassified"
            and e["source"] == RESULT_SOURCES["image-classifier"] and e["detail"]["id"] != "result-1"] == ["routed-1"]
    assert all(messages == [] for messages in pipeline.dead_letters().values())


def test_a_detail_that_is_not_a_json_object_is_refused_at_put_events(outcome):
    """As AWS answers it (``MalformedDetail``): the embedded runtime's moto patch, see test_moto_patches.py."""
    _, _, refused, _, _, _ = outcome
    assert sorted(r["Detail"] for r in refused) == sorted(["[]", "42", '"text"', "null"])


def test_events_only_a_foreign_rule_takes_are_delivered_and_not_kept(outcome):
    pipeline, _, _, kept, _, _ = outcome
    url = pipeline.sqs.get_queue_url(QueueName="shipping-delays")["QueueUrl"]
    delivered = []
    while messages := pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        delivered += [json.loads(m["Body"])["detail"]["parcel"] for m in messages]
    assert sorted(delivered) == sorted(f"p-{n}" for n in range(FOREIGN_EVENTS))
    foreign = [json.loads(k["body"])["detail-type"] for k in kept if "shipping.app" in k["body"]]
    # the rule with no target and the disabled one took nothing: their events are kept, and only theirs
    assert sorted(foreign) == ["ShipmentLate", "ShipmentLost"]


def test_the_check_reads_every_rule_of_the_bus_that_delivers_but_not_its_own(outcome):
    pipeline, *_ = outcome
    from inferbus_lambda.unrouted import read_rules

    function = pipeline.function(pipeline.outputs[f"{UNROUTED_CHECK_ID}{FUNCTION_NAME}"])
    rules = read_rules(pipeline.events, bus=pipeline.bus_name, exclude=[function.spec.environment["CATCH_ALL_RULE_NAME"]])
    # Locally a rule whose only target is a Firehose stream (the results archive's) has none: moto cannot deliver there.
    resources = pipeline.template["Resources"]
    def cloud_only(target: dict) -> bool:
        (reference,) = target["Arn"].values()  # a Ref (its logical id) or a Fn::GetAtt ([logical id, "Arn"])
        logical_id = reference[0] if isinstance(reference, list) else reference
        return resources[logical_id]["Type"] == "AWS::KinesisFirehose::DeliveryStream"

    # Rules on the stack's bus (the workflows' nets listen on the default bus, for Step Functions' status changes).
    delivering = [r for r in resources.values() if r["Type"] == "AWS::Events::Rule" and r["Properties"].get("EventBusName", "default") != "default"
                  and not all(map(cloud_only, r["Properties"]["Targets"]))]
    # every delivering rule of the stack but the catch-all, and the foreign rule that delivers; not the local tap
    assert len(rules) == len(delivering) - 1 + 1 and "shipping-delays" in rules
    assert not {"shipping-lost", "shipping-late"} & set(rules)
    assert len(PIPELINE.filters()) < len(rules)  # the components' rules and the rejections' rule


def test_no_window_on_rule_changes_every_event_is_delivered_or_kept_once(outcome):
    """A rule disabled, narrowed or stripped of its target between two events, and set back, through the
    embedded pipeline (the check's container stays warm, with what it read): every event is delivered by
    the rule or kept by the check, never neither (lost) and never both (a delivery and an unrouted record)."""
    pipeline, *_ = outcome
    try:
        events, sqs, bus = pipeline.events, pipeline.sqs, pipeline.bus_name
        url = sqs.create_queue(QueueName="orders")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        pattern = {"source": ["shop.app"], "detail-type": ["OrderPlaced"]}
        events.put_rule(Name="orders", EventBusName=bus, EventPattern=json.dumps(pattern), State="DISABLED")
        events.put_targets(Rule="orders", EventBusName=bus, Targets=[{"Id": "q", "Arn": arn}])
        takes = {  # the rule as it takes orders, and the ways it stops taking them
            "enabled": lambda: events.enable_rule(Name="orders", EventBusName=bus),
            "disabled": lambda: events.disable_rule(Name="orders", EventBusName=bus),
            "narrowed": lambda: events.put_rule(Name="orders", EventBusName=bus, State="ENABLED", EventPattern=json.dumps(
                pattern | {"detail": {"priority": ["high"]}})),
            "widened again": lambda: events.put_rule(Name="orders", EventBusName=bus, State="ENABLED",
                                                     EventPattern=json.dumps(pattern)),
            "untargeted": lambda: events.remove_targets(Rule="orders", EventBusName=bus, Ids=["q"]),
            "targeted again": lambda: events.put_targets(Rule="orders", EventBusName=bus, Targets=[{"Id": "q", "Arn": arn}]),
        }
        steps = ["(disabled at first)", "enabled", "disabled", "enabled", "narrowed", "widened again", "untargeted",
                 "targeted again", "disabled"]
        for order, step in enumerate(steps):
            if step in takes:
                takes[step]()
            pipeline.put_events([{"EventBusName": bus, "Source": "shop.app", "DetailType": "OrderPlaced",
                                  "Detail": json.dumps({"order": f"o-{order}", "priority": "low"})}])
            pipeline.drain()  # one event, one batch of the check: the next event comes after the next change

        delivered = []
        while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            delivered += [json.loads(m["Body"])["detail"]["order"] for m in messages]
        kept = [json.loads(k["body"])["detail"]["order"] for k in pipeline.invalid_events() if "shop.app" in k.get("body", "")]
        taken = {f"o-{order}" for order, step in enumerate(steps) if step in ("enabled", "widened again", "targeted again")}
        assert sorted(delivered) == sorted(taken)
        assert sorted(kept) == sorted({f"o-{order}" for order in range(len(steps))} - taken)
        assert not set(delivered) & set(kept) and len(delivered) + len(kept) == len(steps)
    finally:  # the rule is this test's own: the module's other tests count the bus's rules
        pipeline.events.remove_targets(Rule="orders", EventBusName=pipeline.bus_name, Ids=["q"])
        pipeline.events.delete_rule(Name="orders", EventBusName=pipeline.bus_name)
