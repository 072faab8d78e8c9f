"""The kit's pattern matcher on the rules the stack synthesizes."""

from __future__ import annotations

import json

from event_patterns import compile_pattern


def test_the_templates_rules_route_every_documented_case_as_the_rule_tests_expect(template):
    """The matcher evaluates every pattern the stack synthesizes and routes each case of
    tests/infra/test_rule_patterns.py as that test expects (there, through moto as the runtime patches it)."""
    from inferbus.model.names import UNROUTED_CHECK_ID
    from tests.infra.test_rule_patterns import CASES as ROUTE_CASES
    from tests.infra.test_rule_patterns import component_of_rule

    rules = {k: compile_pattern(r["Properties"]["EventPattern"]) for k, r in template["Resources"].items()
             if r["Type"] == "AWS::Events::Rule" and not k.startswith(UNROUTED_CHECK_ID)  # not the catch-all
             and r["Properties"].get("EventBusName") != "default"}  # nor the workflows' nets, on the default bus
    documented = set().union(*(expected for _, _, expected in ROUTE_CASES))
    for name, entry, expected in ROUTE_CASES:
        delivered = {"source": entry["Source"], "detail-type": entry["DetailType"], "detail": json.loads(entry["Detail"])}
        routed = {component_of_rule(logical_id) for logical_id, pattern in rules.items() if pattern.matches(delivered)}
        assert routed & documented == expected, name
