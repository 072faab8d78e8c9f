"""How an execution's end is told outside its state machine, which moto does not do.

- **Standard**: when an execution ends, AWS puts a "Step Functions Execution Status Change" event on
  the account's default bus (``source`` ``aws.states``) with its status, error, cause and input (a
  JSON text); rules there take it. The input is left out (``inputDetails.included`` false) when the
  event would pass EventBridge's 256 KB, as AWS does.
- **Express**: AWS sends no such event. Its execution log (when the machine logs at all) records
  ``ExecutionFailed``, ``ExecutionTimedOut`` or ``ExecutionAborted``; a CloudWatch Logs
  subscription invokes its function with that record (``{"awslogs": {"data": ...}}``, gzipped).
  Locally those records are the only ones the log has.

An execution ends on moto's worker thread; :meth:`StatusChanges.ended` only queues its ARN, and
:meth:`StatusChanges.dispatch` (the runtime's dispatcher) reads it back through the API and tells
it, outside any other request. An Express execution that succeeded is told to nobody: its status is
looked up in process first, and only an end its log records is read back. Until then the execution
must stay: a runtime that forgets finished executions (``retain``) forgets only those
:meth:`StatusChanges.told` says it may.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .moto_patches import execution_status

STATUS_CHANGE = "Step Functions Execution Status Change"
SOURCE = "aws.states"
ENDED = ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")
MAX_DETAIL_BYTES = 240 * 1024  # room under EventBridge's 256 KB entry for the envelope
LOG_RECORDS = {"FAILED": "ExecutionFailed", "TIMED_OUT": "ExecutionTimedOut", "ABORTED": "ExecutionAborted"}


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


def execution_log_payload(described: dict[str, Any], log_group: str) -> dict[str, Any]:
    """What a CloudWatch Logs subscription sends for the log record of one execution's end."""
    stop = _ms(described.get("stopDate")) or 0
    record = {"id": "1", "type": LOG_RECORDS[described["status"]], "previous_event_id": "0",
              "event_timestamp": str(stop), "execution_arn": described["executionArn"], "redrive_count": "0",
              "details": {"error": described.get("error"), "cause": described.get("cause")}}
    batch = {"messageType": "DATA_MESSAGE", "owner": described["executionArn"].split(":")[4],
             "logGroup": log_group.split(":log-group:", 1)[-1].removesuffix(":*"), "logStream": "states/local",
             "subscriptionFilters": ["local"], "logEvents": [{"id": "1", "timestamp": stop, "message": json.dumps(record)}]}
    return {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(batch).encode())).decode()}}


class StatusChanges:
    """Tells each execution's end: a Standard one's status change to the default bus, an Express one's log
    record to the functions subscribed to its log.

    Parameters
    ----------
    events, stepfunctions
        boto3 clients inside the mock.
    standard
        The ARNs of the Standard state machines.
    subscribers
        For each Express state machine that logs, its log group and the functions subscribed to it
        (anything with ``invoke(event, trigger=...)``).
    """

    def __init__(self, events: Any, stepfunctions: Any, standard: Iterable[str],
                 subscribers: Mapping[str, tuple[str, Sequence[Any]]] | None = None) -> None:
        self.events = events
        self.stepfunctions = stepfunctions
        self.standard = set(standard)
        self.subscribers = dict(subscribers or {})
        self.sent = 0
        self.vanished = 0  # ended, then gone before its status change was told (nothing should forget it)
        self._waiting: deque[str] = deque()
        self._sending: str | None = None
        self._told: set[str] = set()  # ended and told, still kept by moto
        self._lock = threading.Lock()

    @staticmethod
    def _machine_of(execution_arn: str) -> str:
        return execution_arn.replace(":execution:", ":stateMachine:", 1).rsplit(":", 1)[0]

    def _watches(self, execution_arn: str) -> bool:
        machine = self._machine_of(execution_arn)
        return machine in self.standard or machine in self.subscribers

    def ended(self, execution_arn: str) -> None:
        """An execution ended (called on moto's worker thread: it only queues it)."""
        if self._watches(execution_arn):
            self._waiting.append(execution_arn)

    def told(self, execution_arn: str) -> bool:
        """Whether a finished execution may be forgotten: its end is told, or nobody is told of it.

        Not "not waiting": an execution's status changes before :meth:`ended` queues it, and a window
        trimmed in between would drop it.
        """
        return execution_arn in self._told or not self._watches(execution_arn)

    def forgotten(self, execution_arns: Iterable[str]) -> None:
        """These executions are gone: no need to remember they were told."""
        self._told.difference_update(execution_arns)

    @property
    def waiting(self) -> int:
        return len(self._waiting) + (self._sending is not None)

    def dispatch(self) -> int:
        """Put the status change of every execution that ended since; return how many."""
        sent = 0
        with self._lock:
            while self._waiting:
                self._sending = self._waiting.popleft()
                try:
                    sent += self._tell(self._sending)
                finally:
                    self._sending = None
        self.sent += sent
        return sent

    def _tell(self, execution_arn: str) -> int:
        if self._machine_of(execution_arn) not in self.standard:
            status, _ = execution_status(execution_arn)  # in process: AWS's own look, not a DescribeExecution
            if status not in LOG_RECORDS and status != "UNKNOWN":  # an Express end its log records nothing of
                self._told.add(execution_arn)
                return 0
        try:
            described = self.stepfunctions.describe_execution(executionArn=execution_arn)
        except self.stepfunctions.exceptions.ExecutionDoesNotExist:
            self.vanished += 1  # counted, not raised: the dispatcher also starts executions and must go on
            return 0
        self._told.add(execution_arn)
        if described["stateMachineArn"] in self.subscribers and described["status"] in LOG_RECORDS:
            log_group, functions = self.subscribers[described["stateMachineArn"]]
            for function in functions:
                function.invoke(execution_log_payload(described, log_group), trigger="invoke")
            return 1
        if described["stateMachineArn"] in self.standard and described["status"] in ENDED:
            self.events.put_events(Entries=[{
                "Source": SOURCE, "DetailType": STATUS_CHANGE, "Resources": [described["executionArn"]],
                "Detail": json.dumps(status_change(described)), "EventBusName": "default"}])
            return 1
        return 0
