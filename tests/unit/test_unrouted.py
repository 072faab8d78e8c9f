"""The unrouted-events check's decision (``inferbus_lambda.unrouted``) over the rules a bus lists.

Every enabled rule with a target counts, the stack's or another's; a rule that takes nothing anywhere
(no target, disabled) does not. The bus is a small in-memory ``ListRules``/``ListTargetsByRule``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from inferbus_lambda.unrouted import BusRules, UnroutedCheck, read_rules

from tests.catalogue import valid_detail

BUS = "inferbus"
CATCH_ALL = "inferbus-UnroutedEventsRule-1"


@dataclass
class Bus:
    """What EventBridge answers about one bus's rules, two rules a page."""

    rules: list[dict] = field(default_factory=list)
    targets: dict[str, list[dict]] = field(default_factory=dict)
    target_requests: list[str] = field(default_factory=list)

    def add(self, name: str, pattern: dict | None, *, targets: int = 1, state: str = "ENABLED", **extra) -> None:
        rule = {"Name": name, "EventBusName": BUS, "State": state, **extra}
        if pattern is not None:
            rule["EventPattern"] = json.dumps(pattern)
        self.rules.append(rule)
        self.targets[name] = [{"Id": f"t{i}", "Arn": f"arn:aws:sqs:us-east-1:123456789012:{name}-{i}"} for i in range(targets)]

    def get_paginator(self, operation: str):
        assert operation == "list_rules"
        bus = self

        class Pages:
            def paginate(self, **kwargs):
                assert kwargs == {"EventBusName": BUS}  # every rule of the bus: no name prefix
                return [{"Rules": bus.rules[i:i + 2]} for i in range(0, len(bus.rules), 2)] or [{"Rules": []}]

        return Pages()

    def list_targets_by_rule(self, *, Rule: str, EventBusName: str, Limit: int):
        assert EventBusName == BUS and Limit >= 1
        self.target_requests.append(Rule)
        return {"Targets": self.targets[Rule][:Limit]}


def ping(detail_type: str = "ShipmentDelayed", source: str = "shipping.app") -> str:
    """A delivered event of a type no inferbus contract knows, as a user's own application puts it."""
    return json.dumps({"id": "e-1", "source": source, "detail-type": detail_type, "account": "123456789012",
                       "detail": {"parcel": "p-7"}})


def check(bus: Bus) -> UnroutedCheck:
    return UnroutedCheck(read_rules(bus, bus=BUS, exclude=[CATCH_ALL]), result_sources={"inferbus.image-classifier"})


@pytest.fixture
def bus() -> Bus:
    bus = Bus()
    bus.add(CATCH_ALL, {"account": ["123456789012"]})  # the check's own: it takes everything, and does not count
    bus.add("inferbus-ImageClassifierRule-1", {"detail-type": ["ImageSubmitted"]})
    bus.add("Events-Archive-inferbus", {"account": ["123456789012"]}, ManagedBy="prod.vhs.events.aws.internal")
    bus.add("nightly", None)  # a schedule: no pattern
    return bus


def test_an_event_only_a_foreign_rule_takes_is_routed(bus):
    assert check(bus).verdict(ping()).status == "unrouted"
    bus.add("shipping-delays", {"source": ["shipping.app"], "detail-type": ["ShipmentDelayed"]})
    assert check(bus).verdict(ping()).status == "routed"
    assert check(bus).verdict(ping("ShipmentLost")).status == "unrouted"  # the same matcher: its pattern, not its name


def test_a_foreign_rule_with_no_target_takes_nothing(bus):
    bus.add("shipping-delays", {"source": ["shipping.app"]}, targets=0)
    verdict = check(bus).verdict(ping())
    assert verdict.status == "unrouted" and verdict.reason  # kept, with the contract's reason (not a CloudEvent)


def test_a_disabled_foreign_rule_takes_nothing(bus):
    bus.add("shipping-delays", {"source": ["shipping.app"]}, state="DISABLED")
    assert check(bus).verdict(ping()).status == "unrouted"
    bus.rules[-1]["State"] = "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS"  # enabled, in its other form
    assert check(bus).verdict(ping()).status == "routed"


def test_an_invalid_inferbus_event_only_a_foreign_rule_takes_is_not_kept(bus):
    detail = valid_detail("foreign-1") | {"specversion": "0.3"}
    body = json.dumps({"id": "e-2", "source": detail["source"], "detail-type": detail["type"], "detail": detail})
    assert check(bus).verdict(body).status == "routed"  # the stack's own rule takes ImageSubmitted
    bus.rules[1]["State"] = "DISABLED"
    assert check(bus).verdict(body).reason.startswith("specversion: Input should be '1.0'")
    bus.add("audit", {"detail": {"specversion": ["0.3"]}})
    assert check(bus).verdict(body).status == "routed"


def test_targets_are_looked_up_only_for_rules_that_could_count(bus):
    bus.add("off", {"source": ["x"]}, state="DISABLED")
    read_rules(bus, bus=BUS, exclude=[CATCH_ALL])
    assert bus.target_requests == ["inferbus-ImageClassifierRule-1"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0


def test_the_rules_are_trusted_for_the_period_from_when_their_read_began(bus):
    clock, reads = Clock(), []

    def read():
        reads.append(clock.now)
        clock.now += 4.0  # a read is a request per rule: it takes time, and a rule may change meanwhile
        return check(bus)

    rules = BusRules(read, ttl_s=10.0, clock=lambda: clock.now)
    assert rules.current().verdict(ping()).status == "unrouted"
    bus.add("shipping-delays", {"source": ["shipping.app"]})  # added just after the read began
    clock.now = 10.0  # 10 s after the read began: still the same read
    assert rules.current().verdict(ping()).status == "unrouted"
    clock.now = 10.5  # more than the period after the read began (6.5 s after it ended): read again
    assert rules.current().verdict(ping()).status == "routed"
    assert reads == [0.0, 10.5]
