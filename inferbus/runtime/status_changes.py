"""Step Functions' "Step Functions Execution Status Change" events, which moto does not send.

When an execution of a Standard state machine ends, AWS puts an event on the account's default
bus (``source`` ``aws.states``) with its status, error, cause and input (a JSON text); rules there
take it. AWS sends none for Express state machines, and neither does this. The input is left out
(``inputDetails.included`` false) when the event would pass EventBridge's 256 KB, as AWS does.

An execution ends on moto's worker thread; :meth:`StatusChanges.ended` only queues its ARN, and
:meth:`StatusChanges.dispatch` (the runtime's dispatcher) reads it back through the API and puts
the event, outside any other request.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable
from datetime import datetime
from typing import Any

STATUS_CHANGE = "Step Functions Execution Status Change"
SOURCE = "aws.states"
ENDED = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
MAX_DETAIL_BYTES = 240 * 1024  # room under EventBridge's 256 KB entry for the envelope


def _ms(value: datetime | None) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def status_change(described: dict[str, Any]) -> dict[str, Any]:
    """The event's ``detail`` for one execution, from ``DescribeExecution``'s answer."""
    detail: dict[str, Any] = {
        "executionArn": described["executionArn"], "stateMachineArn": described["stateMachineArn"],
        "name": described["name"], "status": described["status"], "startDate": _ms(described.get("startDate")),
        "stopDate": _ms(described.get("stopDate")), "input": described.get("input"), "output": described.get("output"),
        "inputDetails": {"included": True}, "outputDetails": {"included": described.get("output") is not None},
        "error": described.get("error"), "cause": described.get("cause"),
    }
    if len(json.dumps(detail).encode()) > MAX_DETAIL_BYTES:
        detail |= {"input": None, "inputDetails": {"included": False}, "output": None, "outputDetails": {"included": False}}
    return detail


class StatusChanges:
    """Sends the status change of each ended execution of a Standard state machine to the default bus.

    Parameters
    ----------
    events, stepfunctions
        boto3 clients inside the mock.
    standard
        The ARNs of the Standard state machines.
    """

    def __init__(self, events: Any, stepfunctions: Any, standard: Iterable[str]) -> None:
        self.events = events
        self.stepfunctions = stepfunctions
        self.standard = set(standard)
        self.sent = 0
        self._waiting: deque[str] = deque()
        self._sending = 0
        self._lock = threading.Lock()

    def ended(self, execution_arn: str) -> None:
        """An execution ended (called on moto's worker thread: it only queues it)."""
        machine = execution_arn.replace(":execution:", ":stateMachine:", 1).rsplit(":", 1)[0]
        if machine in self.standard:
            self._waiting.append(execution_arn)

    @property
    def waiting(self) -> int:
        return len(self._waiting) + self._sending

    def dispatch(self) -> int:
        """Put the status change of every execution that ended since; return how many."""
        sent = 0
        with self._lock:
            while self._waiting:
                self._sending = 1
                try:
                    described = self.stepfunctions.describe_execution(executionArn=self._waiting.popleft())
                    if described["status"] in ENDED:
                        self.events.put_events(Entries=[{
                            "Source": SOURCE, "DetailType": STATUS_CHANGE, "Resources": [described["executionArn"]],
                            "Detail": json.dumps(status_change(described)), "EventBusName": "default"}])
                        sent += 1
                finally:
                    self._sending = 0
        self.sent += sent
        return sent
