"""The unrouted-events check's decision (``inferbus_lambda.unrouted``) over the rules a bus lists.

Every enabled rule with a target counts, the stack's or another's; a rule that takes nothing anywhere
(no target, disabled) does not. The bus is a small in-memory ``ListRules``/``DescribeRule``/``ListTargetsByRule``;
the verdicts rest on the rules as they are when the batch is checked, never on an earlier read.
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
    requests: list[str] = field(default_factory=list)  # every request, by API name

    class exceptions:  # noqa: N801 - boto3's name
        class ResourceNotFoundException(Exception):
            pass

    def rule(self, name: str) -> dict:
        (rule,) = [rule for rule in self.rules if rule["Name"] == name]
        return rule

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
                bus.requests += ["ListRules"] * max(1, -(-len(bus.rules) // 2))
                return [{"Rules": bus.rules[i:i + 2]} for i in range(0, len(bus.rules), 2)] or [{"Rules": []}]

        return Pages()

    def list_targets_by_rule(self, *, Rule: str, EventBusName: str, Limit: int):
        assert EventBusName == BUS and Limit >= 1
        self.target_requests.append(Rule)
        self.requests.append("ListTargetsByRule")
        return {"Targets": self.targets[Rule][:Limit]}

    def describe_rule(self, *, Name: str, EventBusName: str):
        assert EventBusName == BUS
        self.requests.append("DescribeRule")
        if not [rule for rule in self.rules if rule["Name"] == Name]:
            raise self.exceptions.ResourceNotFoundException(Name)
        return dict(self.rule(Name))


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


def rules_of(bus: Bus) -> BusRules:
    return BusRules(bus, bus=BUS, exclude=[CATCH_ALL], result_sources={"inferbus.image-classifier"})


def statuses(rules: BusRules, *bodies: str) -> list[str]:
    return [verdict.status for verdict in rules.verdicts(bodies)]


def narrow(rule: dict) -> None:
    rule["EventPattern"] = json.dumps({**json.loads(rule["EventPattern"]), "detail": {"parcel": ["p-1"]}})


def untarget(bus: Bus, name: str) -> None:
    bus.targets[name] = []


# Each change makes the rule take nothing of ping(); undone, it takes it again.
CHANGES = {
    "disabled": (lambda bus: bus.rule("shipping-delays").update(State="DISABLED"),
                 lambda bus: bus.rule("shipping-delays").update(State="ENABLED")),
    "narrowed": (lambda bus: narrow(bus.rule("shipping-delays")),
                 lambda bus: bus.rule("shipping-delays").update(EventPattern=json.dumps({"source": ["shipping.app"]}))),
    "untargeted": (lambda bus: untarget(bus, "shipping-delays"),
                   lambda bus: bus.targets.update({"shipping-delays": [{"Id": "t0", "Arn": "arn:aws:sqs:::q"}]})),
    "deleted": (lambda bus: bus.rules.remove(bus.rule("shipping-delays")),
                lambda bus: bus.add("shipping-delays", {"source": ["shipping.app"]})),
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_rule_changed_between_two_events_decides_the_second_as_it_is_now(bus, change):
    """No window: the rules read for the first event (kept by the check) never route the second."""
    take_nothing, take_again = CHANGES[change]
    bus.add("shipping-delays", {"source": ["shipping.app"]})
    rules = rules_of(bus)
    assert statuses(rules, ping()) == ["routed"]
    take_nothing(bus)
    assert statuses(rules, ping()) == ["unrouted"]  # was "routed" (dropped) for 300 s after the first read
    take_again(bus)
    assert statuses(rules, ping()) == ["routed"]  # was "unrouted" (kept although delivered): a result and a record
    take_nothing(bus)
    assert statuses(rules, ping(), ping("ShipmentLost")) == ["unrouted", "unrouted"]


def test_a_rule_added_or_enabled_counts_for_the_next_event(bus):
    rules = rules_of(bus)
    assert statuses(rules, ping()) == ["unrouted"]
    bus.add("shipping-delays", {"source": ["shipping.app"]}, state="DISABLED")
    assert statuses(rules, ping()) == ["unrouted"]
    bus.rule("shipping-delays")["State"] = "ENABLED"
    assert statuses(rules, ping()) == ["routed"]


def test_an_event_still_routed_by_an_unchanged_rule_is_routed(bus):
    """Of two rules that take an event, one changed: the other still delivers it, so it is not kept."""
    bus.add("shipping-delays", {"source": ["shipping.app"]})
    bus.add("shipping-audit", {"detail-type": ["ShipmentDelayed"]})
    rules = rules_of(bus)
    assert statuses(rules, ping()) == ["routed"]
    bus.rule("shipping-delays")["State"] = "DISABLED"
    assert statuses(rules, ping(), ping("ShipmentLost")) == ["routed", "unrouted"]


def test_a_routed_batch_costs_two_requests_per_rule_it_rests_on_and_a_miss_a_full_read(bus):
    bus.add("shipping-delays", {"source": ["shipping.app"]})
    bus.add("shipping-audit", {"source": ["shipping.app"], "detail-type": ["ShipmentDelayed"]})
    rules = rules_of(bus)
    statuses(rules, ping())  # the first batch reads every rule, and trusts that read: it is made now
    assert rules.reads == 1 and "DescribeRule" not in bus.requests
    bus.requests.clear()
    batch = [ping()] * 50 + [ping("ShipmentLost")] * 49 + [json.dumps({"source": "inferbus.image-classifier"})]
    assert statuses(rules, *batch[:-1], batch[-1]).count("routed") == 99
    # one rule takes all 99 (the other is then not read), the result rests on none
    assert sorted(bus.requests) == ["DescribeRule", "ListTargetsByRule"] and rules.reads == 1
    bus.requests.clear()
    statuses(rules, ping(source="nobody"))  # a miss: every rule is read again before the event is kept
    assert rules.reads == 2 and bus.requests.count("ListRules") == 3


