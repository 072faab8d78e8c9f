"""The one EventBridge pattern matcher (``event_patterns``: the unrouted-events check runs
it in Lambda, the embedded runtime in place of moto's) against AWS's documented answers, not moto's.

Two case sets: ``tests/pattern_cases.py`` (the User Guide and event-ruler, each case naming its
source) and :data:`GUIDE_CASES`, the User Guide's content filters on one event; and every pattern
the stack synthesizes, on the cases ``tests/infra/test_rule_patterns.py`` routes.
"""

from __future__ import annotations

import json

import pytest
from event_patterns import PatternError, compile_pattern, compile_pattern_text

from tests.pattern_cases import CASES, INVALID, MOTO_DIFFERS


def test_the_case_set_is_large_and_every_case_names_its_source():
    assert len(CASES) >= 60 and len({case.name for case in CASES}) == len(CASES)
    assert all(case.source for case in CASES) and MOTO_DIFFERS <= {case.name for case in CASES}
    assert {case.matches for case in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_documented_case(case):
    assert compile_pattern(case.pattern).matches(case.event) is case.matches, case.source


# The content-filtering examples of the EventBridge User Guide, on one event; where moto's own matcher
# differs from them (booleans vs numbers, exists on empty arrays, arrays of objects), AWS's answer is kept.
EVENT = {
    "source": "com.example", "detail-type": "Order", "account": "123456789012",
    "detail": {"state": "running", "count": 5, "price": 10.5, "flag": True, "none": None, "empty": [],
               "tags": ["a", "b"], "items": [{"sku": "x1", "qty": 2}, {"sku": "y2", "qty": 0}],
               "ip": "10.0.0.7", "name": "EventBridge", "file": "photo.PNG", "nested": {"deep": {"k": "v"}}},
}

GUIDE_CASES = [
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
    ("wildcard ending in a star", {"detail": {"file": [{"wildcard": "ph*"}]}}, True),
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
    ("$or beside another key (AND)", {"source": ["other"], "detail": {"$or": [{"count": [5]}, {"state": ["running"]}]}},
     False),
    ("top-level fields", {"source": ["com.example"], "detail-type": ["Order"], "account": ["123456789012"]}, True),
]


@pytest.mark.parametrize(("name", "pattern", "expected"), GUIDE_CASES, ids=[name for name, _, _ in GUIDE_CASES])
def test_user_guide_case(name, pattern, expected):
    assert compile_pattern(pattern).matches(EVENT) is expected


@pytest.mark.parametrize(("pattern", "reason"), INVALID, ids=lambda value: json.dumps(value)[:40])
def test_a_pattern_eventbridge_refuses_is_refused_with_its_reason(pattern, reason):
    with pytest.raises(PatternError, match=reason):
        compile_pattern(pattern)


@pytest.mark.parametrize("pattern", [{"detail": {"state": [{"regex": "r.*"}]}}, {"detail": {"state": "running"}},
                                     {"detail": {"count": [{"numeric": ["!=", 1]}]}}])
def test_an_unknown_filter_is_named_never_guessed(pattern):
    with pytest.raises(PatternError):
        compile_pattern(pattern)


def test_or_with_fewer_than_two_objects_is_a_field_name():
    """event-ruler README, backward compatibility of "$or": only an array of 2+ objects is an OR."""
    assert compile_pattern({"$or": {"a": ["x"]}}).matches({"$or": {"a": "x"}})


def test_pattern_text_is_compiled_once():
    text = json.dumps({"source": ["a"]})
    assert compile_pattern_text(text) is compile_pattern_text(text)
    with pytest.raises(PatternError, match="not JSON"):
        compile_pattern_text("{source")
