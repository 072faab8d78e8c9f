"""What the state machines' executions did, read back through the public API and moto's own records.

Executions come from ``list_executions`` and ``describe_execution``; histories are read
in-process (:func:`.moto_patches.execution_history`, in ``get_execution_history``'s shape:
drain reads them at every wait), and which executions run too (moto 5.2.5 records every
history event with a millisecond timestamp and ``previousEventId``, for EXPRESS machines
too, which AWS would not).

An execution is *settled* when it has finished, or when all it still does is wait for a
task token (``.waitForTaskToken``): a human review may wait for days, so it must not hold
up :meth:`~.embedded.EmbeddedPipeline.drain`. From the history: every open leaf state
(entered, not exited; Parallel and Map only contain others) is a Task whose callback was
submitted (``TaskSubmitted``) and not answered (no ``TaskSucceeded``/``TaskFailed``/
``TaskTimedOut`` after it). A Retry interval or a Wait state keeps its state open with no
callback, so that execution is not settled. Because another branch may be between two
states at the moment the history is read, and an answered token shows in the history
only once the worker thread has woken up, the history must also stay unchanged for
:data:`PARK_SETTLE_S`, watched from the start of each drain (:meth:`ExecutionTracker.watch_afresh`),
before an execution counts as parked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from .moto_patches import execution_history, running_execution_events
from .specs import StateMachineInfo

PARK_SETTLE_S = 0.1
CONTAINER_STATES = ("Parallel", "Map")
CALLBACK_ANSWERS = {"TaskSucceeded", "TaskFailed", "TaskTimedOut"}


@dataclass(frozen=True)
class StateTiming:
    """When a state was first entered and last exited, and how often it was entered
    (more than once in a loop or a Map; a Retry does not re-enter)."""

    name: str
    entered: datetime
    exited: datetime | None
    visits: int

    @property
    def duration_ms(self) -> float | None:
        return None if self.exited is None else (self.exited - self.entered).total_seconds() * 1000


@dataclass(frozen=True)
class ExecutionInfo:
    """A snapshot of one execution; ``input``/``output`` are parsed JSON."""

    name: str
    arn: str
    state_machine: str
    status: str
    input: Any
    output: Any
    error: str | None
    cause: str | None
    start_date: datetime
    stop_date: datetime | None
    states: dict[str, StateTiming]
    waiting_for_task_token: bool

    @property
    def duration_ms(self) -> float | None:
        return None if self.stop_date is None else (self.stop_date - self.start_date).total_seconds() * 1000


def state_timings(events: list[dict[str, Any]]) -> dict[str, StateTiming]:
    """Per state name, first entry, last exit and number of entries, from an execution history."""
    timings: dict[str, StateTiming] = {}
    for event in events:
        if "stateEnteredEventDetails" in event:
            name = event["stateEnteredEventDetails"]["name"]
            known = timings.get(name)
            timings[name] = StateTiming(name, known.entered if known else event["timestamp"],
                                        known.exited if known else None, (known.visits if known else 0) + 1)
        elif "stateExitedEventDetails" in event:
            name = event["stateExitedEventDetails"]["name"]
            if name in timings:
                timings[name] = StateTiming(name, timings[name].entered, event["timestamp"], timings[name].visits)
    return timings


def waiting_for_task_token(events: list[dict[str, Any]]) -> bool:
    """True when every open leaf state of a running execution waits for a task token (see module doc)."""
    open_leaves = 0
    submitted: set[int] = set()
    for event in events:
        kind = event["type"]
        if kind.endswith("StateEntered") and not kind.startswith(CONTAINER_STATES):
            open_leaves += 1
        elif kind.endswith("StateExited") and not kind.startswith(CONTAINER_STATES):
            open_leaves -= 1
        elif kind == "TaskSubmitted" and event["taskSubmittedEventDetails"]["resource"].endswith(".waitForTaskToken"):
            submitted.add(event["id"])
        elif kind in CALLBACK_ANSWERS:
            submitted.discard(event.get("previousEventId", 0))
    return bool(submitted) and open_leaves == len(submitted)


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class ExecutionTracker:
    """Reads the executions of the template's state machines.

    Parameters
    ----------
    stepfunctions
        A boto3 Step Functions client inside the mock.
    machines
        The provisioned state machines, by logical id.
    """

    def __init__(self, stepfunctions: Any, machines: Mapping[str, StateMachineInfo]) -> None:
        self.stepfunctions = stepfunctions
        self.machines = machines
        self._finished: dict[str, ExecutionInfo] = {}  # a finished execution never changes: read it once
        self._quiet_since: dict[str, tuple[int, float]] = {}

    def _list(self, machine: StateMachineInfo, **filters: str) -> list[dict[str, Any]]:
        paginator = self.stepfunctions.get_paginator("list_executions")
        try:
            pages = paginator.paginate(stateMachineArn=machine.arn, **filters)
            return [item for page in pages for item in page["executions"]]
        except ClientError as error:
            if error.response["Error"]["Code"] == "StateMachineDoesNotExist":
                return []  # deleted through the API since provisioning (a test may)
            raise

    def _history(self, arn: str) -> list[dict[str, Any]]:
        history = execution_history(arn)  # read in-process: drain reads it at every wait
        if history is not None:
            return history
        paginator = self.stepfunctions.get_paginator("get_execution_history")
        return [event for page in paginator.paginate(executionArn=arn) for event in page["events"]]

    def describe(self, logical_id: str, arn: str) -> ExecutionInfo:
        """A fresh snapshot of one execution (cached once it has finished)."""
        if arn in self._finished:
            return self._finished[arn]
        described = self.stepfunctions.describe_execution(executionArn=arn)
        events = self._history(arn)
        info = ExecutionInfo(
            name=described["name"],
            arn=arn,
            state_machine=logical_id,
            status=described["status"],
            input=_json(described.get("input")),
            output=_json(described.get("output")),
            error=described.get("error"),
            cause=described.get("cause"),
            start_date=described["startDate"],
            stop_date=described.get("stopDate"),
            states=state_timings(events),
            waiting_for_task_token=described["status"] == "RUNNING" and waiting_for_task_token(events),
        )
        if info.status != "RUNNING":
            self._finished[arn] = info
        return info

    def snapshot(self, logical_id: str | None = None) -> list[ExecutionInfo]:
        """Every execution of one state machine (or of all), oldest first."""
        machines = [self.machines[logical_id]] if logical_id is not None else list(self.machines.values())
        infos = [
            self.describe(machine.logical_id, item["executionArn"]) for machine in machines for item in self._list(machine)
        ]
        return sorted(infos, key=lambda info: info.start_date)

    def watch_afresh(self) -> None:
        """Forget how long histories have been quiet: a token may have been answered since."""
        self._quiet_since.clear()

    def unsettled(self) -> list[str]:
        """Names of running executions that are not (yet, steadily) parked on a task token."""
        moving = []
        now = time.monotonic()
        for arn, events in running_execution_events().items():
            name = arn.rsplit(":", 1)[-1]
            if not waiting_for_task_token(events):
                self._quiet_since.pop(arn, None)
                moving.append(name)
                continue
            count, since = self._quiet_since.get(arn, (-1, now))
            if count != len(events):
                self._quiet_since[arn] = (len(events), now)
                moving.append(name)
            elif now - since < PARK_SETTLE_S:
                moving.append(name)
        return moving

    def stop_running(self) -> None:
        """Stop every running execution (its worker thread must not outlive the mock)."""
        for machine in self.machines.values():
            for item in self._list(machine, statusFilter="RUNNING"):
                self.stepfunctions.stop_execution(executionArn=item["executionArn"], error="EmbeddedPipelineClosed")
