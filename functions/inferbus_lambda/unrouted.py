"""Nothing vanishes at the bus: an event that no rule takes is kept, with the reason.

EventBridge has no "else" rule: an event PutEvents accepts and no rule matches is dropped
without a word. So a catch-all rule (``{"account": [<account>]}``) sends every event on the bus
to one more queue, and this check, a Lambda consumer of that queue, asks of each event:

1. is it a result (its ``source`` is one of the pipeline's producers)? Then it ended as a result;
2. does any other rule of the bus take it, the stack's or anyone's (an enabled rule with a target:
   its pattern, read with ``events:ListRules`` and ``events:ListTargetsByRule``, matched by
   :mod:`.patterns` as AWS documents, the matcher the embedded runtime uses too)? Then its path
   goes on there: a consumer, a workflow, a route, or a rule of the bus's other users;
3. otherwise it is kept in the invalid-events destination with the reason: the contract's
   (``specversion: Input should be '1.0'``, ``type: unknown event type ...``), or, for a valid
   event that no rule takes, :class:`~.errors.UnroutedEventError` naming its type and source.

The rules and whether each has a target are read together, and compiled, once per container and again
after ``RULES_TTL_SECONDS`` (:class:`BusRules`): a rule added, disabled or stripped of its targets counts
from the next read. A rule whose
pattern :mod:`.patterns` refuses counts as not matching, and the reason says so: an event is
kept twice rather than lost.

Example
-------
>>> check = UnroutedCheck({"text": {"detail-type": ["TextSubmitted"]}}, result_sources={"inferbus.text-pipeline"})
>>> check.verdict('{"source": "me", "detail-type": "TextSubmitted", "detail": {}}').status
'routed'
>>> check.verdict('{"source": "me", "detail-type": "TextSubmited", "detail": {"type": "TextSubmited"}}').reason
"type: unknown event type 'TextSubmited' (known: ...)"
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from event_patterns import CompiledPattern, PatternError, compile_pattern

from .contracts.core import EVENT_DATA_MODELS, from_eventbridge_event, known_event_types
from .errors import InvalidEventError, UnroutedEventError

__all__ = ["BusRules", "UnroutedCheck", "Verdict", "read_rules"]

T = TypeVar("T")
ENABLED_STATES = {"ENABLED", "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS"}


@dataclass(frozen=True)
class Verdict:
    """``result``, ``routed`` or ``unrouted``; an unrouted event's error, reason and id."""

    status: str
    error: str | None = None
    reason: str | None = None
    event_id: str | None = None


def read_rules(events: Any, *, bus: str, exclude: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The patterns of the bus's rules that deliver events, by rule name: every enabled rule with a
    pattern and at least one target, the stack's or anyone else's on the bus.

    Left out: rules managed by a service (an archive's), rules without a pattern (schedules),
    disabled rules, rules with no target (they take nothing anywhere) and ``exclude``. Targets are
    read with ``events:ListTargetsByRule``, one request per rule that is otherwise kept.
    """
    excluded = set(exclude)
    patterns = {}
    for page in events.get_paginator("list_rules").paginate(EventBusName=bus):
        for rule in page["Rules"]:
            if (rule["Name"] in excluded or rule.get("ManagedBy") or not rule.get("EventPattern")
                    or rule.get("State", "ENABLED") not in ENABLED_STATES):
                continue
            if events.list_targets_by_rule(Rule=rule["Name"], EventBusName=bus, Limit=1)["Targets"]:
                patterns[rule["Name"]] = json.loads(rule["EventPattern"])
    return patterns


class UnroutedCheck:
    """Decides, for one delivered event, whether it ended as a result, goes on along a rule, or is unrouted.

    Parameters
    ----------
    patterns
        The bus's rules' patterns, by rule name.
    result_sources
        The pipeline's producers' sources.
    """

    def __init__(self, patterns: Mapping[str, Mapping[str, Any]], *, result_sources: Iterable[str]) -> None:
        self.compiled: dict[str, CompiledPattern] = {}
        self.unevaluated: list[str] = []  # rules whose pattern could not be compiled, with why
        for name, pattern in patterns.items():
            try:
                self.compiled[name] = compile_pattern(pattern)
            except PatternError as error:
                self.unevaluated.append(f"rule {name}: {error}")
        self.result_sources = frozenset(result_sources)
        known_event_types()  # every contract module imported: an unknown type is really unknown

    def verdict(self, body: str) -> Verdict:
        """The verdict on one SQS body as EventBridge delivered it."""
        try:
            delivered = json.loads(body)  # as EventBridge read it; strictness is the contract's to judge
        except (ValueError, RecursionError):
            delivered = None
        if not isinstance(delivered, dict):
            return self._unrouted(body, "the bus delivered something that is not an event")
        if delivered.get("source") in self.result_sources:
            return Verdict("result")
        if any(pattern.matches(delivered) for pattern in self.compiled.values()):
            return Verdict("routed")
        note = f" (not evaluated: {'; '.join(self.unevaluated)})" if self.unevaluated else ""
        return self._unrouted(body, note)

    def _unrouted(self, body: str, note: str) -> Verdict:
        try:
            event = from_eventbridge_event(body)
        except InvalidEventError as invalid:  # the contract says why no rule took it
            return Verdict("unrouted", InvalidEventError.__name__, invalid.reason + note, invalid.event_id)
        reason = (f"no rule of the bus takes a valid {event.type} event from {event.source!r} "
                  f"(known types: {', '.join(sorted(EVENT_DATA_MODELS))})")
        return Verdict("unrouted", UnroutedEventError.__name__, reason + note, event.id)


class BusRules(Generic[T]):
    """What is made from the bus's rules (the compiled :class:`UnroutedCheck`), made through ``read``
    and kept ``ttl_s`` seconds: the rules are listed, their targets looked up and their patterns
    compiled once per period, not once per batch.

    The period counts from when a read begins, not when it ends: a read is a request per rule, and a
    rule changed while it runs may be missed by it, so what was read is never trusted longer than
    ``ttl_s`` after the moment it may already describe."""

    def __init__(self, read: Callable[[], T], ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.read = read
        self.ttl_s = ttl_s
        self.clock = clock
        self._current: T | None = None
        self._read_at = 0.0

    def current(self) -> T:
        now = self.clock()
        if self._current is None or now - self._read_at > self.ttl_s:
            self._current, self._read_at = self.read(), now
        return self._current


