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

The verdicts rest on the rules as they are after the batch reached the check, never on a read
made before (:class:`BusRules`): a rule disabled, narrowed or stripped of its targets, or added or
enabled, counts for the next event. The rules read are kept, compiled, only to spare requests:

- an event they route is confirmed by reading again the one rule it rests on (``events:DescribeRule``
  and ``events:ListTargetsByRule``: two requests per distinct rule a batch rests on, or every rule
  read again when that would cost no less); a rule that has changed in any way (state, pattern,
  targets, gone) has every rule read again;
- an event they do not route (about to be kept) has every rule read again first (``ListRules``
  and a ``ListTargetsByRule`` per rule), then is decided on what that read says.

EventBridge offers nothing cheaper that is also right: a rule has no version or modification time
to compare, and the "AWS API Call via CloudTrail" events for ``PutRule``, ``DisableRule`` or
``RemoveTargets`` reach only the account's default bus, after CloudTrail's delivery delay (minutes),
so a cache invalidated by them keeps a window open. What remains is the time an event waits in the
catch-all queue (seconds; longer after its batch failed and was retried, or a redrive): a rule
changed in that time decides the event as it is when read, not as it was when the event arrived. A rule whose pattern :mod:`.patterns` refuses counts as
not matching, and the reason says so: an event is kept twice rather than lost.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from event_patterns import CompiledPattern, PatternError, compile_pattern

from .contracts.core import EVENT_DATA_MODELS, from_eventbridge_event, known_event_types
from .errors import InvalidEventError, UnroutedEventError

__all__ = ["BusRules", "UnroutedCheck", "Verdict", "read_rule", "read_rules"]

ENABLED_STATES = {"ENABLED", "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS"}


@dataclass(frozen=True)
class Verdict:
    """``result``, ``routed`` or ``unrouted``; the rules a routed event matched; an unrouted event's error,
    reason and id."""

    status: str
    error: str | None = None
    reason: str | None = None
    event_id: str | None = None
    rules: tuple[str, ...] = ()


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
            if rule["Name"] not in excluded and (pattern := _delivering(events, bus, rule)) is not None:
                patterns[rule["Name"]] = pattern
    return patterns


def read_rule(events: Any, *, bus: str, name: str) -> dict[str, Any] | None:
    """The pattern of one rule of the bus if it delivers events now (as :func:`read_rules` counts them), else
    None (also when it is gone): ``events:DescribeRule``, then ``events:ListTargetsByRule`` if it could count."""
    try:
        rule = events.describe_rule(Name=name, EventBusName=bus)
    except events.exceptions.ResourceNotFoundException:
        return None
    return _delivering(events, bus, rule)


def _delivering(events: Any, bus: str, rule: Mapping[str, Any]) -> dict[str, Any] | None:
    if rule.get("ManagedBy") or not rule.get("EventPattern") or rule.get("State", "ENABLED") not in ENABLED_STATES:
        return None
    if not events.list_targets_by_rule(Rule=rule["Name"], EventBusName=bus, Limit=1)["Targets"]:
        return None
    pattern: dict[str, Any] = json.loads(rule["EventPattern"])
    return pattern


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
        self.patterns = {name: dict(pattern) for name, pattern in patterns.items()}
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
        if matched := tuple(name for name, pattern in self.compiled.items() if pattern.matches(delivered)):
            return Verdict("routed", rules=matched)
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


class BusRules:
    """The unrouted check on the rules of ``bus`` as they are: each batch's verdicts rest on rules read after
    the batch arrived (see the module). What was read is kept, compiled, to spare requests, never trusted
    alone: an event it routes is confirmed by reading its rule again, one it does not has every rule read again.

    Parameters
    ----------
    events
        An EventBridge client (``ListRules``, ``DescribeRule``, ``ListTargetsByRule``).
    bus
        The bus.
    exclude
        Rules that do not count (the check's own catch-all).
    result_sources
        The pipeline's producers' sources.

    Attributes
    ----------
    reads
        Full reads of the rules made so far (a cold start, a miss or a changed rule each make one).

    Example
    -------
    >>> rules = BusRules(boto3.client("events"), bus="inferbus", exclude=["catch-all"], result_sources=[])  # doctest: +SKIP
    >>> [verdict.status for verdict in rules.verdicts(bodies)]  # doctest: +SKIP
    ['routed', 'unrouted']
    """

    def __init__(self, events: Any, *, bus: str, exclude: Iterable[str], result_sources: Iterable[str]) -> None:
        self.events = events
        self.bus = bus
        self.exclude = tuple(exclude)
        self.result_sources = tuple(result_sources)
        self.reads = 0
        self._check: UnroutedCheck | None = None

    def verdicts(self, bodies: Sequence[str]) -> list[Verdict]:
        """The verdict on each SQS body, in order, from the rules as they are now."""
        if self._check is None:  # read during this batch: already the rules as they are
            return self._decide(self._read(), bodies)
        check = self._check
        verdicts = self._decide(check, bodies)
        if any(verdict.status == "unrouted" for verdict in verdicts):
            return self._decide(self._read(), bodies)  # a miss: read every rule before keeping anything
        resting_on = self._resting_on(verdicts)
        # Confirming costs two requests a rule; reading them all, a page and a request a rule: at least 1 + rules.
        if 2 * len(resting_on) < 1 + len(check.patterns) and all(
                read_rule(self.events, bus=self.bus, name=name) == check.patterns[name] for name in resting_on):
            return verdicts
        return self._decide(self._read(), bodies)

    def _read(self) -> UnroutedCheck:
        self.reads += 1
        self._check = UnroutedCheck(read_rules(self.events, bus=self.bus, exclude=self.exclude),
                                    result_sources=self.result_sources)
        return self._check

    @staticmethod
    def _decide(check: UnroutedCheck, bodies: Sequence[str]) -> list[Verdict]:
        return [check.verdict(body) for body in bodies]

    @staticmethod
    def _resting_on(verdicts: Sequence[Verdict]) -> list[str]:
        """The rules to read again so that every routed verdict rests on one as it is now: one per event, and
        where an event matched several, one already chosen."""
        chosen: set[str] = set()
        for verdict in verdicts:
            if verdict.rules and not chosen.intersection(verdict.rules):
                chosen.add(verdict.rules[0])
        return sorted(chosen)
