"""Who is calling, and whether an event bus's resource policy denies their ``PutEvents``.

AWS evaluates a bus's resource policy on every ``PutEvents``; moto stores it (``PutPermission``,
``DescribeEventBus``) and never reads it again. The twin reads it, with IAM's semantics, for the
``Deny`` statements on ``events:PutEvents``: a policy can only take access away from a caller
of the bus's own account (IAM itself is not enforced locally, so every caller is allowed by
its identity), and those statements are what guard a bus (other accounts, reserved sources).

The caller is the role the running code acts as (:func:`acting_as`): a local Lambda function
acts as its template role, a Step Functions execution as its state machine's role. Code that
acts as no role is a client of the twin (a test, ``inferbus send``, the AWS CLI against
``inferbus serve``): an IAM user of the account with no tags, unless its access key is a session
moto's STS handed out for a role (``sts assume-role`` against ``inferbus serve``), which then acts
as that role. A role's tags are the template's (:data:`ROLE_TAGS`).

Condition operators evaluated: the ``String`` family (``StringEquals``, ``StringNotEquals``,
``StringEqualsIgnoreCase``, ``StringNotEqualsIgnoreCase``, ``StringLike``, ``StringNotLike``),
each with ``ForAnyValue:`` / ``ForAllValues:`` and ``...IfExists``, and ``Null``; policy variables
``${key}`` in their values. Keys: ``aws:PrincipalAccount``, ``aws:PrincipalArn``,
``aws:PrincipalTag/<key>``, ``events:source`` and ``events:detail-type`` (multivalued: one value
per entry of the request on that bus, as the bus construct reads them). A statement with any other
operator or key, a principal other than ``*`` or a ``Not…`` element is not enforced locally and is
named by :func:`unenforced_statements` (the provisioning summary lists it). ``Resource`` is not
compared: a bus's policy names the bus itself.

What this rests on (AWS documentation):
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html
(``StringLike`` and ``StringEquals`` are case-sensitive: only the ``IgnoreCase`` operators are not),
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-single-vs-multi-valued-context-keys.html,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_variables.html
(a variable whose key is absent makes its condition not match),
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-conditions.html.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PUT_EVENTS = "events:PutEvents"
ROLE_TAGS: dict[str, dict[str, str]] = {}
"""Each role of the running template by ARN: its IAM tags (set by the embedded pipeline)."""
_ACTING_AS: contextvars.ContextVar[str | None] = contextvars.ContextVar("inferbus_acting_as", default=None)
CLIENT_USER = "user/local-client"  # who a client of the twin is, in the account (no tags)


@dataclass(frozen=True)
class Principal:
    """A caller as a policy sees it."""

    arn: str
    account: str
    tags: Mapping[str, str] = field(default_factory=dict)


@contextlib.contextmanager
def acting_as(role_arn: str | None) -> Iterator[None]:
    """Run the block as ``role_arn`` (``None``: as a client of the twin), on this thread."""
    token = _ACTING_AS.set(role_arn)
    try:
        yield
    finally:
        _ACTING_AS.reset(token)


def current_principal(account: str, session_role: Callable[[], str | None] = lambda: None) -> Principal:
    """Who makes the request being answered: the role acted as, else the session's role, else a client user.

    ``session_role`` is asked only when no code acts as a role: it finds the role of the request's
    access key (an STS session), if any.
    """
    role_arn = _ACTING_AS.get() or session_role()
    if role_arn is None:
        return Principal(f"arn:aws:iam::{account}:{CLIENT_USER}", account)
    return Principal(role_arn, role_arn.split(":")[4] or account, dict(ROLE_TAGS.get(role_arn, {})))


# -- IAM conditions ----------------------------------------------------------------------------


class _Unresolved(Exception):
    """A policy variable whose key the request does not carry: the condition does not match."""


def _like(value: str, pattern: str) -> bool:
    return re.fullmatch("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern),
                        value, re.DOTALL) is not None


_MATCH: dict[str, tuple[Callable[[str, str], bool], bool]] = {  # base operator -> (compare, negated)
    "StringEquals": (lambda value, wanted: value == wanted, False),
    "StringNotEquals": (lambda value, wanted: value == wanted, True),
    "StringEqualsIgnoreCase": (lambda value, wanted: value.casefold() == wanted.casefold(), False),
    "StringNotEqualsIgnoreCase": (lambda value, wanted: value.casefold() == wanted.casefold(), True),
    "StringLike": (_like, False),
    "StringNotLike": (_like, True),
}
KNOWN_KEYS = ("aws:principalaccount", "aws:principalarn", "aws:principaltag/", "events:source", "events:detail-type")
MULTIVALUED = ("events:source", "events:detail-type")


def _split(operator: str) -> tuple[str, str, bool]:
    qualifier, _, base = operator.rpartition(":")
    if_exists = base.endswith("IfExists")
    return qualifier, base.removesuffix("IfExists"), if_exists


def _known(operator: str, key: str) -> bool:
    qualifier, base, _ = _split(operator)
    return (base in _MATCH or base == "Null") and qualifier in ("", "ForAnyValue", "ForAllValues") \
        and key.lower().startswith(KNOWN_KEYS)


def _substitute(value: str, context: Mapping[str, Any]) -> str:
    def lookup(match: re.Match[str]) -> str:
        found = context.get(match[1].lower())
        if not isinstance(found, str):
            raise _Unresolved(match[1])
        return found
    return re.sub(r"\$\{([^}]+)\}", lookup, value)


def _holds(operator: str, key: str, wanted: Any, context: Mapping[str, Any]) -> bool:
    qualifier, base, if_exists = _split(operator)
    actual = context.get(key.lower())
    wanted = wanted if isinstance(wanted, list) else [wanted]
    if base == "Null":
        return (actual is None) == (str(wanted[0]).lower() == "true")
    if actual is None:  # IAM: IfExists and ForAllValues hold, ForAnyValue does not, a negated operator holds
        return if_exists or qualifier == "ForAllValues" or (qualifier == "" and _MATCH[base][1])
    try:
        patterns = [_substitute(str(value), context) for value in wanted]
    except _Unresolved:
        return False  # a variable the request has no value for: the condition does not match
    compare, negated = _MATCH[base]

    def matches(value: str) -> bool:
        found = any(compare(value, pattern) for pattern in patterns)
        return not found if negated else found

    values = actual if isinstance(actual, list) else [actual]
    if qualifier == "ForAnyValue":
        return any(matches(value) for value in values)
    if qualifier == "ForAllValues":
        return all(matches(value) for value in values)
    return all(matches(value) for value in values) if negated else any(matches(value) for value in values)


def _denies_put_events(statement: Mapping[str, Any]) -> bool:
    if statement.get("Effect") != "Deny":
        return False
    named = statement.get("NotAction", statement.get("Action", []))
    matched = any(_like(PUT_EVENTS.lower(), action.lower()) for action in (named if isinstance(named, list) else [named]))
    return matched != ("NotAction" in statement)  # NotAction: every action but those it names


def _evaluable(statement: Mapping[str, Any]) -> bool:
    """Whether the twin reads this statement as IAM would: every principal, and known operators and keys only."""
    return statement.get("Principal") in ("*", {"AWS": "*"}) \
        and not {"NotAction", "NotPrincipal", "NotResource"} & set(statement) \
        and all(_known(operator, key) for operator, keys in statement.get("Condition", {}).items() for key in keys)


def unenforced_statements(policy: Mapping[str, Any]) -> list[str]:
    """The ``Sid`` of each ``Deny`` on ``PutEvents`` the twin does not evaluate (a principal other than ``*``,
    a ``Not…`` element, or a condition operator or key it does not know)."""
    return [str(statement.get("Sid", index)) for index, statement in enumerate(policy.get("Statement", []))
            if _denies_put_events(statement) and not _evaluable(statement)]


def put_events_denial(policy: Mapping[str, Any], principal: Principal, *, sources: Sequence[str],
                      detail_types: Sequence[str]) -> Mapping[str, Any] | None:
    """The first ``Deny`` statement of ``policy`` that refuses this caller's ``PutEvents``, or ``None``.

    Parameters
    ----------
    sources, detail_types
        The request's entries on this bus: ``events:source`` and ``events:detail-type``.
    """
    context: dict[str, Any] = {"aws:principalaccount": principal.account, "aws:principalarn": principal.arn,
                               "events:source": list(sources), "events:detail-type": list(detail_types)}
    context.update({f"aws:principaltag/{key}".lower(): value for key, value in principal.tags.items()})
    for statement in policy.get("Statement", []):
        if not _denies_put_events(statement) or not _evaluable(statement):
            continue  # an Allow (IAM is not enforced: everyone is allowed), or not evaluated: unenforced_statements names it
        conditions = statement.get("Condition", {})
        if all(_holds(operator, key, wanted, context) for operator, keys in conditions.items()
               for key, wanted in keys.items()):
            return statement
    return None
