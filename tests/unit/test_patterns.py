"""The local pattern matcher against AWS's documented answers (tests/pattern_cases.py), not moto's."""

from __future__ import annotations

import json

import pytest

from inferbus.runtime.patterns import PatternError, compile_pattern, compile_pattern_text
from tests.pattern_cases import CASES, INVALID, MOTO_DIFFERS


def test_the_case_set_is_large_and_every_case_names_its_source():
    assert len(CASES) >= 60 and len({case.name for case in CASES}) == len(CASES)
    assert all(case.source for case in CASES) and MOTO_DIFFERS <= {case.name for case in CASES}
    assert {case.matches for case in CASES} == {True, False}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_documented_case(case):
    assert compile_pattern(case.pattern).matches(case.event) is case.matches, case.source


@pytest.mark.parametrize(("pattern", "reason"), INVALID, ids=lambda value: json.dumps(value)[:40])
def test_a_pattern_eventbridge_refuses_is_refused_with_its_reason(pattern, reason):
    with pytest.raises(PatternError, match=reason):
        compile_pattern(pattern)


def test_or_with_fewer_than_two_objects_is_a_field_name():
    """event-ruler README, backward compatibility of "$or": only an array of 2+ objects is an OR."""
    assert compile_pattern({"$or": {"a": ["x"]}}).matches({"$or": {"a": "x"}})


def test_pattern_text_is_compiled_once():
    text = json.dumps({"source": ["a"]})
    assert compile_pattern_text(text) is compile_pattern_text(text)
    with pytest.raises(PatternError, match="not JSON"):
        compile_pattern_text("{source")
