"""Deliver a rule's events to a state machine target, which moto's EventBridge cannot.

moto 5.2.5 raises ``NotImplementedError`` when a rule's target is a state machine; the
patched moto (:mod:`.moto_patches`) hands each matched event for such a target to its bridge
(:meth:`StateMachineBridge.offer`, in-process, no queue between), and the bridge starts one
execution per event, as EventBridge would:

- the input is the whole event as EventBridge delivers it (or the target's ``Input`` /
  ``InputPath``, applied here because moto ignores both), fields in EventBridge's order
  (:func:`as_delivered`);
- the execution name comes from the event id and the rule target, so a redelivered event
  starts nothing new (Standard's name idempotency; EventBridge's own retries do the same);
- a start that fails goes to the target's dead-letter queue, with the attributes
  EventBridge sets, or raises if the target has none. The ``RetryPolicy`` is not applied:
  locally a start fails for good or not at all.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .moto_patches import start_execution_in_process
from .provision import SIMPLE_PATH
from .specs import BridgeSpec, UnsupportedTemplateError
from .windows import RecentSet

MAX_EXECUTION_NAME = 80
NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
EVENT_FIELDS = ("version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail")


def as_delivered(event: dict[str, Any], rule_arn: str) -> dict[str, Any]:
    """The event in EventBridge's shape and field order, with the ``account`` moto leaves out
    (the rule's account: a rule only matches events on its own account's bus here).

    Examples
    --------
    >>> as_delivered({"id": "1", "time": "t", "version": "0", "detail-type": "D", "source": "s",
    ...               "region": "us-east-1", "resources": [], "detail": {}}, "arn:aws:events:us-east-1:123:rule/b/r")
    {'version': '0', 'id': '1', 'detail-type': 'D', 'source': 's', 'account': '123', 'time': 't', 'region': 'us-east-1', 'resources': [], 'detail': {}}
    """
    complete = {"account": rule_arn.split(":")[4]} | event
    return {key: complete[key] for key in EVENT_FIELDS if key in complete} | {
        key: value for key, value in complete.items() if key not in EVENT_FIELDS
    }


def execution_name(event_id: str, bridge: BridgeSpec) -> str:
    """A unique, valid execution name for one event on one rule target.

    Examples
    --------
    >>> from inferbus.runtime.specs import BridgeSpec
    >>> bridge = BridgeSpec("Rule", "rule", "arn:rule", "Target0", "arn:sm", None, None, None)
    >>> execution_name("6a7e8feb-b491-4cf7-a9f1-bf3703467718", bridge)
    '6a7e8feb-b491-4cf7-a9f1-bf3703467718_e43afc4a58'
    """
    target = hashlib.sha1(f"{bridge.rule_name}/{bridge.target_id}".encode()).hexdigest()[:10]  # noqa: S324 - a name
    return f"{NAME_UNSAFE.sub('-', event_id)[: MAX_EXECUTION_NAME - len(target) - 1]}_{target}"


def select_path(event: dict[str, Any], path: str) -> Any:
    """Apply an ``InputPath`` of plain field names (``$``, ``$.detail``, ``$.detail.data``).

    Raises
    ------
    UnsupportedTemplateError
        For filters, wildcards or indexes, which the runtime does not evaluate.

    Examples
    --------
    >>> select_path({"detail": {"data": {"x": 1}}}, "$.detail.data")
    {'x': 1}
    """
    if not SIMPLE_PATH.fullmatch(path):
        raise UnsupportedTemplateError(f"InputPath {path!r}: only $.field.field paths are applied locally")
    value: Any = event
    for key in path.split(".")[1:]:
        value = value.get(key) if isinstance(value, dict) else None
    return value


@dataclass
class BridgeCounts:
    started: int = 0
    duplicates: int = 0
    dead_lettered: int = 0


class StateMachineBridge:
    """Starts executions for the events a rule delivers to one state machine target.

    Parameters
    ----------
    spec
        The bridge, as provisioned.
    sqs
        A boto3 SQS client inside the mock (for the dead-letter queue; executions start in process).
    dead_letter_url
        The URL of the target's DLQ, if it has one.
    remember
        The most execution names it remembers having started (default: all), the newest kept; see
        :meth:`forget_started_before`.
    """

    def __init__(self, spec: BridgeSpec, sqs: Any, dead_letter_url: str | None,
                 remember: int | None = None) -> None:
        self.spec = spec
        self.sqs = sqs
        self.dead_letter_url = dead_letter_url
        self.counts = BridgeCounts()
        self._started = RecentSet(keep=remember or sys.maxsize)
        self._waiting: deque[dict[str, Any]] = deque()
        self._starting = 0  # taken off the deque, execution not yet started: still "waiting" for drain
        self._lock = threading.Lock()  # one dispatcher at a time: the duplicate check and the start go together

    def offer(self, event: dict[str, Any]) -> None:
        """Take one matched event (called inside the PutEvents request: it only queues it)."""
        self._waiting.append(event)

    def forget_started_before(self, moment: float) -> int:
        """Forget the names of executions started before ``moment`` (``time.monotonic()``); return how many.

        The same event after that is offered to StartExecution again, which refuses a name it still
        has (a duplicate, as before) and otherwise starts it: an event that comes back after the
        twin's retention window is new to it, as to the claims.
        """
        return self._started.forget_before(moment)

    @property
    def waiting(self) -> int:
        """Events taken and not yet started."""
        return len(self._waiting) + self._starting

    def dispatch(self) -> int:
        """Start an execution for every event waiting; return how many events were taken."""
        taken = 0
        with self._lock:
            while self._waiting:
                self._starting = 1
                try:
                    self._start(self._waiting.popleft())
                finally:
                    self._starting = 0
                taken += 1
        return taken

    def _input(self, event: dict[str, Any]) -> str:
        if self.spec.input is not None:
            return self.spec.input
        if self.spec.input_path is not None:
            return json.dumps(select_path(event, self.spec.input_path))
        return json.dumps(event)

    def _start(self, delivered: dict[str, Any]) -> None:
        event = as_delivered(delivered, self.spec.rule_arn)
        name = execution_name(event["id"], self.spec)
        if name in self._started:
            # The same event again. Asking would not tell: StartExecution answers a running
            # duplicate with the first execution, as if it had started it.
            self.counts.duplicates += 1
            return
        try:
            start_execution_in_process(self.spec.state_machine_arn, name, self._input(event))  # EventBridge is AWS's
        except ClientError as error:
            if error.response["Error"]["Code"] == "ExecutionAlreadyExists":
                self.counts.duplicates += 1  # started before, by another route
                return
            self._dead_letter(event, error)
            return
        self._started.add(name)
        self.counts.started += 1

    def _dead_letter(self, event: dict[str, Any], error: ClientError) -> None:
        """Send the event to the target's DLQ with the attributes EventBridge sets, or raise."""
        if self.dead_letter_url is None:
            raise RuntimeError(
                f"rule {self.spec.rule_logical_id} target {self.spec.target_id}: StartExecution failed and the "
                f"target has no dead-letter queue: {error}"
            ) from error
        attributes = {
            "ERROR_CODE": error.response["Error"]["Code"],
            "ERROR_MESSAGE": error.response["Error"].get("Message", ""),
            "RULE_ARN": self.spec.rule_arn,
            "TARGET_ARN": self.spec.state_machine_arn,
        }
        self.sqs.send_message(
            QueueUrl=self.dead_letter_url,
            MessageBody=json.dumps(event),
            MessageAttributes={
                key: {"DataType": "String", "StringValue": value or "-"} for key, value in attributes.items()
            },
        )
        self.counts.dead_lettered += 1
