"""Nothing vanishes at the bus: an event that no rule takes is kept, with the reason.

EventBridge has no "else" rule: an event PutEvents accepts and no rule matches is dropped
without a word. So a catch-all rule (``{"account": [<account>]}``) sends every event on the bus
to one more queue, and this check, a Lambda consumer of that queue, asks of each event:

1. is it a result (its ``source`` is one of the pipeline's producers)? Then it ended as a result;
2. does any other rule of the bus take it (its pattern, read with ``events:ListRules``, evaluated
   by :mod:`.patterns`)? Then its path goes on there: a consumer, a workflow, a route;
3. otherwise it is kept in the invalid-events destination with the reason: the contract's
   (``specversion: Input should be '1.0'``, ``type: unknown event type ...``), or, for a valid
   event that no rule takes, :class:`~.errors.UnroutedEventError` naming its type and source.

The rules are read once per container and again after ``RULES_TTL_SECONDS``. A rule whose
pattern uses a filter :mod:`.patterns` does not evaluate counts as not matching, and the
reason says so: an event is kept twice rather than lost.

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
from typing import Any

from .contracts.core import EVENT_DATA_MODELS, from_eventbridge_event, known_event_types
from .errors import InvalidEventError, UnroutedEventError
from .patterns import UnsupportedPatternError, matches

__all__ = ["BusRules", "UnroutedCheck", "Verdict", "read_rules"]

ENABLED_STATES = {"ENABLED", "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS"}


@dataclass(frozen=True)
class Verdict:
    """``result``, ``routed`` or ``unrouted``; an unrouted event's error, reason and id."""

    status: str
    error: str | None = None
    reason: str | None = None
    event_id: str | None = None


def read_rules(events: Any, *, bus: str, name_prefix: str, exclude: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The patterns of the bus's enabled rules whose names start with ``name_prefix``, by rule name.

    Rules managed by AWS (an archive's), rules without a pattern (schedules) and ``exclude`` are
    left out.
    """
    excluded = set(exclude)
    patterns = {}
    for page in events.get_paginator("list_rules").paginate(EventBusName=bus, NamePrefix=name_prefix):
        for rule in page["Rules"]:
            if (rule["Name"] in excluded or rule.get("ManagedBy") or not rule.get("EventPattern")
                    or rule.get("State", "ENABLED") not in ENABLED_STATES):
                continue
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
        self.patterns = dict(patterns)
        self.result_sources = frozenset(result_sources)
        known_event_types()  # every contract module imported: an unknown type is really unknown

    def verdict(self, body: str) -> Verdict:
        """The verdict on one SQS body as EventBridge delivered it."""
        try:
            delivered = json.loads(body)  # as EventBridge read it; strictness is the contract's to judge
        except (ValueError, RecursionError):
            delivered = None
        if not isinstance(delivered, Mapping):
            return self._unrouted(body, "the bus delivered something that is not an event")
        if delivered.get("source") in self.result_sources:
            return Verdict("result")
        unevaluated = []
        for name, pattern in self.patterns.items():
            try:
                if matches(pattern, delivered):
                    return Verdict("routed")
            except UnsupportedPatternError as error:
                unevaluated.append(f"rule {name}: {error}")
        note = f" (not evaluated: {'; '.join(unevaluated)})" if unevaluated else ""
        return self._unrouted(body, note, delivered)

    def _unrouted(self, body: str, note: str, delivered: Mapping[str, Any] | None = None) -> Verdict:
        try:
            event = from_eventbridge_event(body)
        except InvalidEventError as invalid:  # the contract says why no rule took it
            return Verdict("unrouted", InvalidEventError.__name__, invalid.reason + note, invalid.event_id)
        reason = (f"no rule of the bus takes a valid {event.type} event from {event.source!r} "
                  f"(known types: {', '.join(sorted(EVENT_DATA_MODELS))})")
        return Verdict("unrouted", UnroutedEventError.__name__, reason + note, event.id)


class BusRules:
    """The bus's rules, read through ``read`` and kept ``ttl_s`` seconds."""

    def __init__(self, read: Callable[[], dict[str, dict[str, Any]]], ttl_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.read = read
        self.ttl_s = ttl_s
        self.clock = clock
        self._patterns: dict[str, dict[str, Any]] | None = None
        self._read_at = 0.0

    def patterns(self) -> dict[str, dict[str, Any]]:
        if self._patterns is None or self.clock() - self._read_at > self.ttl_s:
            self._patterns, self._read_at = self.read(), self.clock()
        return self._patterns


