"""Replay a window of the bus's archive: EventBridge ``StartReplay``, to every rule or to those of some types.

Replaying is safe to repeat: consumers claim each event id before scoring and workflows claim
it in their ``Accept`` step, so an event already processed is skipped (counted as
``DuplicatesSkipped``, or an execution that ends ``Duplicate``) and only what was lost is redone.
An event that broke its contract is refused again, with the same id and reason.

The same code runs against AWS and against the embedded pipeline (``inferbus demo --replay``),
whose archive is moto's: there every archived event is replayed to every rule, whatever the
window and the rules asked for (moto does not apply them); the demo asks for the whole run.

Example
-------
>>> replay = start_replay(events, bus_name="inferbus", since=start, until=end,
...                       event_types=["ImageSubmitted"])  # doctest: +SKIP
>>> wait_for_replay(events, replay["name"])  # doctest: +SKIP
'COMPLETED'
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = ["ReplayError", "rules_taking", "start_replay", "wait_for_replay"]

ARCHIVE_RULE_PREFIX = "Events-Archive-"  # the rule EventBridge manages for an archive
FINISHED = ("COMPLETED", "CANCELLED", "FAILED")


class ReplayError(ValueError):
    """A replay that cannot start as asked; the message says what to change."""


def _archive(events: Any, bus_arn: str, bus_name: str, archive_name: str | None) -> tuple[str, str]:
    if archive_name:
        found = events.describe_archive(ArchiveName=archive_name)
        return found["ArchiveArn"], archive_name
    archives = events.list_archives(EventSourceArn=bus_arn).get("Archives", [])
    if len(archives) != 1:
        names = ", ".join(a["ArchiveName"] for a in archives) or "none"
        raise ReplayError(f"bus {bus_name} has {len(archives)} archives ({names}): name one with --archive "
                          "(stack output EventArchiveName)")
    name = archives[0]["ArchiveName"]
    return events.describe_archive(ArchiveName=name)["ArchiveArn"], name


def rules_taking(events: Any, bus_name: str, event_types: Sequence[str]) -> list[str]:
    """ARNs of the bus's rules whose pattern may match events of ``event_types`` (a rule that
    names no ``detail-type`` may match any); the archive's own rule is left out."""
    arns, token = [], None
    while True:
        page = events.list_rules(EventBusName=bus_name, **({"NextToken": token} if token else {}))
        for rule in page.get("Rules", []):
            if rule["Name"].startswith(ARCHIVE_RULE_PREFIX) or "EventPattern" not in rule:
                continue
            types = json.loads(rule["EventPattern"]).get("detail-type")
            if types is None or set(types) & set(event_types):
                arns.append(rule["Arn"])
        token = page.get("NextToken")
        if not token:
            return arns


def start_replay(events: Any, *, bus_name: str, since: datetime, until: datetime, event_types: Sequence[str] = (),
                 archive_name: str | None = None, name: str | None = None) -> dict[str, Any]:
    """Start replaying the events archived between ``since`` and ``until`` onto ``bus_name``.

    Parameters
    ----------
    events
        A boto3 EventBridge client.
    bus_name
        The bus (its archive is the source, and it is the destination).
    since, until
        The window, timezone-aware; ``until`` no later than now.
    event_types
        Only to the rules that take these types (EventBridge's ``FilterArns``); default every rule.
    archive_name
        Default: the bus's one archive.
    name
        The replay's name; default ``inferbus-<since>-<random>``.

    Returns
    -------
    dict
        ``name``, ``arn``, ``state``, ``archive``, ``since``, ``until`` and ``rules`` (the filter, if any).

    Raises
    ------
    ReplayError
        An empty or future window, no archive (or several), no rule for the types.
    """
    if since.tzinfo is None or until.tzinfo is None:
        raise ReplayError("give --since and --until with a time zone (or in UTC)")
    if since >= until:
        raise ReplayError(f"--since {since.isoformat()} must be before --until {until.isoformat()}")
    if until > datetime.now(UTC):
        raise ReplayError(f"--until {until.isoformat()} is in the future; the archive holds only what was put already")
    bus_arn = events.describe_event_bus(Name=bus_name)["Arn"]
    archive_arn, archive = _archive(events, bus_arn, bus_name, archive_name)
    destination: dict[str, Any] = {"Arn": bus_arn}
    rules: list[str] = []
    if event_types:
        rules = rules_taking(events, bus_name, event_types)
        if not rules:
            raise ReplayError(f"no rule on {bus_name} takes {', '.join(event_types)}: nothing would receive the replay")
        destination["FilterArns"] = rules
    name = name or f"inferbus-{since:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    started = events.start_replay(ReplayName=name, EventSourceArn=archive_arn, EventStartTime=since, EventEndTime=until,
                                  Destination=destination, Description=f"inferbus replay of {archive}")
    return {"name": name, "arn": started["ReplayArn"], "state": started["State"], "archive": archive,
            "since": since.isoformat(), "until": until.isoformat(), "rules": [arn.rsplit("/", 1)[-1] for arn in rules]}


def wait_for_replay(events: Any, name: str, *, poll_s: float = 5.0, timeout_s: float = 3600.0) -> str:
    """Poll until the replay finishes; return its final state (``COMPLETED``, ``CANCELLED``, ``FAILED``).

    Raises
    ------
    ReplayError
        Still running after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        state = events.describe_replay(ReplayName=name)["State"]
        if state in FINISHED:
            return state
        if time.monotonic() > deadline:
            raise ReplayError(f"replay {name} is still {state} after {timeout_s:g} s; follow it with "
                              f"`aws events describe-replay --replay-name {name}`")
        time.sleep(poll_s)
