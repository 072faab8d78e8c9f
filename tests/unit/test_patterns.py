"""The event-pattern evaluator of the unrouted-events check, on EventBridge's documented cases.

Each case follows the content-filtering examples of the EventBridge user guide; where moto's own
matcher differs from them (booleans vs numbers, ``exists`` on empty arrays, arrays of objects), the
case says what AWS documents.
"""

from __future__ import annotations

import pytest
from inferbus_lambda.patterns import UnsupportedPatternError, matches

EVENT = {
    "source": "com.example", "detail-type": "Order", "account": "123456789012",
    "detail": {"state": "running", "count": 5, "price": 10.5, "flag": True, "none": None, "empty": [],
               "tags": ["a", "b"], "items": [{"sku": "x1", "qty": 2}, {"sku": "y2", "qty": 0}],
               "ip": "10.0.0.7", "name": "EventBridge", "file": "photo.PNG", "nested": {"deep": {"k": "v"}}},
}

CASES = [
    ("exact string", {"detail": {"state": ["running"]}}, True),
    ("exact string, other value", {"detail": {"state": ["stopped"]}}, False),
    ("one of several values", {"detail": {"state": ["stopped", "running"]}}, True),
    ("exact number, int against float", {"detail": {"count": [5.0]}}, True),
    ("a number never matches a boolean", {"detail": {"flag": [1]}}, False),
    ("a boolean", {"detail": {"flag": [True]}}, True),
    ("null", {"detail": {"none": [None]}}, True),
    ("a string does not match a number", {"detail": {"count": ["5"]}}, False),
    ("array in the event: any element", {"detail": {"tags": ["b"]}}, True),
    ("array of objects: paths run through it", {"detail": {"items": {"sku": ["y2"]}}}, True),
    ("nested objects", {"detail": {"nested": {"deep": {"k": ["v"]}}}}, True),
    ("missing field", {"detail": {"absent": ["x"]}}, False),
    ("prefix", {"detail": {"state": [{"prefix": "run"}]}}, True),
    ("prefix, ignoring case", {"detail": {"name": [{"prefix": {"equals-ignore-case": "eventb"}}]}}, True),
    ("suffix", {"detail": {"file": [{"suffix": ".PNG"}]}}, True),
    ("suffix is case sensitive", {"detail": {"file": [{"suffix": ".png"}]}}, False),
    ("suffix, ignoring case", {"detail": {"file": [{"suffix": {"equals-ignore-case": ".png"}}]}}, True),
    ("equals-ignore-case", {"detail": {"name": [{"equals-ignore-case": "eventbridge"}]}}, True),
    ("wildcard", {"detail": {"file": [{"wildcard": "ph*.PNG"}]}}, True),
    ("wildcard must match all of it", {"detail": {"file": [{"wildcard": "ph*"}]}}, True),
    ("wildcard, no match", {"detail": {"file": [{"wildcard": "*.jpg"}]}}, False),
    ("anything-but a value", {"detail": {"state": [{"anything-but": "stopped"}]}}, True),
    ("anything-but the value", {"detail": {"state": [{"anything-but": ["running", "stopped"]}]}}, False),
    ("anything-but a prefix", {"detail": {"state": [{"anything-but": {"prefix": "run"}}]}}, False),
    ("anything-but on a missing field", {"detail": {"absent": [{"anything-but": "x"}]}}, False),
    ("numeric range", {"detail": {"price": [{"numeric": [">", 10, "<=", 11]}]}}, True),
    ("numeric, out of range", {"detail": {"price": [{"numeric": ["<", 10]}]}}, False),
    ("numeric never matches a boolean", {"detail": {"flag": [{"numeric": [">=", 0]}]}}, False),
    ("numeric never matches a string", {"detail": {"state": [{"numeric": [">=", 0]}]}}, False),
    ("exists", {"detail": {"state": [{"exists": True}]}}, True),
    ("exists on null", {"detail": {"none": [{"exists": True}]}}, True),
    ("exists: false on a missing field", {"detail": {"absent": [{"exists": False}]}}, True),
    ("exists: false on a present field", {"detail": {"state": [{"exists": False}]}}, False),
    ("exists on an empty array: no leaf", {"detail": {"empty": [{"exists": True}]}}, False),
    ("exists on an object: not a leaf", {"detail": {"nested": [{"exists": True}]}}, False),
    ("cidr", {"detail": {"ip": [{"cidr": "10.0.0.0/24"}]}}, True),
    ("cidr, outside", {"detail": {"ip": [{"cidr": "10.0.1.0/24"}]}}, False),
    ("$or, one branch", {"detail": {"$or": [{"state": ["stopped"]}, {"count": [5]}]}}, True),
    ("$or, no branch", {"detail": {"$or": [{"state": ["stopped"]}, {"count": [6]}]}}, False),
    ("$or beside another key (AND)", {"source": ["other"], "detail": {"$or": [{"count": [5]}]}}, False),
    ("top-level fields", {"source": ["com.example"], "detail-type": ["Order"], "account": ["123456789012"]}, True),
]


@pytest.mark.parametrize(("name", "pattern", "expected"), CASES, ids=[name for name, _, _ in CASES])
def test_documented_case(name, pattern, expected):
    assert matches(pattern, EVENT) is expected


@pytest.mark.parametrize("pattern", [{"detail": {"state": [{"regex": "r.*"}]}}, {"detail": {"state": "running"}},
                                     {"detail": {"count": [{"numeric": ["!=", 1]}]}}])
def test_an_unknown_filter_is_named_never_guessed(pattern):
    with pytest.raises(UnsupportedPatternError):
        matches(pattern, EVENT)


def test_the_templates_rules_route_every_documented_case_as_the_rule_tests_expect(template):
    """The check evaluates every pattern the stack synthesizes and routes each case of
    tests/infra/test_rule_patterns.py as that test expects (moto's matcher agrees there too)."""
    import json

    from tests.infra.test_rule_patterns import CASES as ROUTE_CASES
    from tests.infra.test_rule_patterns import component_of_rule

    rules = {k: r["Properties"]["EventPattern"] for k, r in template["Resources"].items()
             if r["Type"] == "AWS::Events::Rule" and "account" not in r["Properties"]["EventPattern"]}  # not the catch-all
    documented = set().union(*(expected for _, _, expected in ROUTE_CASES))
    for name, entry, expected in ROUTE_CASES:
        delivered = {"source": entry["Source"], "detail-type": entry["DetailType"], "detail": json.loads(entry["Detail"])}
        routed = {component_of_rule(logical_id) for logical_id, pattern in rules.items() if matches(pattern, delivered)}
        assert routed & documented == expected, name
