"""The twin's reading of IAM conditions for a bus policy's Deny statements (inferbus/runtime/resource_policy.py).

Each case is a rule of the IAM condition-operator and multivalued-key pages, not a reading of our own bus policy
(tests/infra/test_security.py checks that one against the template).
"""

from __future__ import annotations

import pytest

from inferbus.runtime.resource_policy import Principal, put_events_denial, unenforced_statements

ME = Principal("arn:aws:iam::111111111111:role/producer", "111111111111", {"team": "Risk"})
NOBODY = Principal("arn:aws:iam::111111111111:user/dev", "111111111111")


def deny(condition: dict, **extra) -> dict:
    return {"Statement": [{"Sid": "S", "Effect": "Deny", "Principal": "*", "Action": "events:PutEvents",
                           "Resource": "arn:aws:events:us-east-1:111111111111:event-bus/b", "Condition": condition,
                           **extra}]}


def denied(condition: dict, principal: Principal = ME, sources=("a",), detail_types=("T",), **extra) -> bool:
    return put_events_denial(deny(condition, **extra), principal, sources=list(sources),
                             detail_types=list(detail_types)) is not None


@pytest.mark.parametrize(("condition", "principal", "sources", "expected"), [
    ({"StringEquals": {"aws:PrincipalAccount": "111111111111"}}, ME, ["a"], True),
    ({"StringNotEquals": {"aws:PrincipalAccount": "111111111111"}}, ME, ["a"], False),
    # ForAnyValue: one value of the request is enough; ForAllValues: every value must match
    ({"ForAnyValue:StringEquals": {"events:source": ["x"]}}, ME, ["a", "x"], True),
    ({"ForAllValues:StringEquals": {"events:source": ["x"]}}, ME, ["a", "x"], False),
    ({"ForAllValues:StringEquals": {"events:source": ["x", "a"]}}, ME, ["a", "x"], True),
    # StringEquals and StringLike are case-sensitive; the IgnoreCase operators are not
    ({"ForAnyValue:StringEquals": {"events:source": ["x.a"]}}, ME, ["X.A"], False),
    ({"ForAnyValue:StringLike": {"events:source": ["x.*"]}}, ME, ["X.A"], False),
    ({"StringEqualsIgnoreCase": {"aws:PrincipalTag/team": "risk"}}, ME, ["a"], True),
    ({"StringEquals": {"aws:PrincipalTag/team": "risk"}}, ME, ["a"], False),
    # wildcards: * any run, ? one character
    ({"ForAnyValue:StringLike": {"events:source": ["x.?"]}}, ME, ["x.ab"], False),
    ({"ForAnyValue:StringLike": {"events:source": ["x.*"]}}, ME, ["x.ab"], True),
    # an absent key: Null true holds; a plain operator does not, its negation does, IfExists does
    ({"Null": {"aws:PrincipalTag/inferbus-source": "true"}}, NOBODY, ["a"], True),
    ({"Null": {"aws:PrincipalTag/team": "false"}}, ME, ["a"], True),
    ({"StringEquals": {"aws:PrincipalTag/team": "Risk"}}, NOBODY, ["a"], False),
    ({"StringNotEquals": {"aws:PrincipalTag/team": "Risk"}}, NOBODY, ["a"], True),
    ({"StringEqualsIfExists": {"aws:PrincipalTag/team": "Other"}}, NOBODY, ["a"], True),
    # a policy variable: the caller's value; no value, and the condition does not match
    ({"ForAnyValue:StringNotLike": {"events:source": "${aws:PrincipalTag/team}"}}, ME, ["Risk"], False),
    ({"ForAnyValue:StringNotLike": {"events:source": "${aws:PrincipalTag/team}"}}, ME, ["Risk", "b"], True),
    ({"ForAnyValue:StringNotLike": {"events:source": "${aws:PrincipalTag/team}"}}, NOBODY, ["b"], False),
    # condition keys are case-insensitive
    ({"ForAnyValue:StringEquals": {"Events:Source": ["x"]}}, ME, ["x"], True),
])
def test_conditions_read_as_iam_documents_them(condition, principal, sources, expected):
    assert denied(condition, principal, sources) is expected


def test_every_condition_of_a_statement_must_hold_and_the_detail_type_is_a_key_too():
    both = {"ForAnyValue:StringEquals": {"events:source": ["x"]}, "Null": {"aws:PrincipalTag/team": "true"}}
    assert denied(both, NOBODY, ["x"]) and not denied(both, ME, ["x"]) and not denied(both, NOBODY, ["y"])
    assert denied({"ForAnyValue:StringEquals": {"events:detail-type": ["Forged"]}}, ME, ["a"], ["T", "Forged"])


def test_allows_and_other_actions_are_not_applied_and_statements_it_cannot_read_are_named():
    policy = {"Statement": [
        {"Sid": "Allow", "Effect": "Allow", "Principal": "*", "Action": "events:PutEvents"},
        {"Sid": "Rule", "Effect": "Deny", "Principal": "*", "Action": "events:PutRule"},
        {"Sid": "Wild", "Effect": "Deny", "Principal": "*", "Action": "events:*"},
        {"Sid": "Date", "Effect": "Deny", "Principal": "*", "Action": "events:PutEvents",
         "Condition": {"DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"}}},
        {"Sid": "Someone", "Effect": "Deny", "Principal": {"AWS": "arn:aws:iam::222222222222:root"},
         "Action": "events:PutEvents"},
        {"Sid": "NotAction", "Effect": "Deny", "Principal": "*", "NotAction": "events:PutRule"},
        {"Sid": "NotPutEvents", "Effect": "Deny", "Principal": "*", "NotAction": ["events:PutEvents"]},
    ]}
    found = put_events_denial(policy, ME, sources=["a"], detail_types=["T"])
    assert found is not None and found["Sid"] == "Wild"  # events:* covers PutEvents
    assert unenforced_statements(policy) == ["Date", "Someone", "NotAction"]
