"""Every change the embedded runtime makes to moto, in this one module, for moto 5.2.5 only.

Each patch either makes moto answer as AWS does where it does not, or removes a cost that
is moto's and not the pipeline's; none changes what a request returns otherwise.
``tests/functional/test_moto_patches.py`` fails when moto changes under any of them (its
version, or the signature of a function patched here).

Faithfulness:

- **Patterns**: a rule's pattern is validated and matched by ``event_patterns`` (AWS's
  documented semantics, the matcher the unrouted-events check runs in Lambda too) instead of moto's matcher, against the event as AWS matches it
  (``time`` as an ISO string, not moto's raw request time).
- **Disabled rules** deliver nothing (moto delivers anyway).
- **A Detail that is not a JSON object** (``[]``, ``42``, a JSON string, ``null``) is refused
  with ``MalformedDetail``, as AWS documents PutEvents ("Detail: a valid JSON object"); moto
  accepts it with a warning, and some such events crash its delivery to a queue.
- **Delivered events** keep their ``account`` (moto's default input template drops it).
- **State machine targets** (moto raises ``NotImplementedError``) and the runtime's own
  local-only targets are handed to :data:`Hooks.deliver` in-process.
- ``TestEventPattern`` answers (moto's is a stub).
- **Atomic requests**: moto was written for one caller at a time; handlers now call it from
  many threads, so every request is processed under a lock, as each AWS call is atomic (a
  conditional write is checked and written at once): one for DynamoDB, whose state nothing
  else touches, one for the rest (a PutEvents writes to SQS in-process). Long polls
  (``ReceiveMessage`` with a wait, ``StartSyncExecution``) run outside, as they wait on others.

Cost:

- SQS ``ReceiveMessage`` recomputed every attribute of the queue (counting its messages) for
  each message it returned; the retention check now reads the one attribute it needs.
- SQS at any depth: ``SendMessage`` built every attribute of the queue (three counts, each a scan
  of every message) to read one; ``ReceiveMessage`` listed every receivable message to return the
  first ten; ``DeleteMessage`` scanned the queue for the handle. Attributes are now computed when
  read, receivable messages found as they are taken, and a received message found by its handle:
  a send, a receive and a delete no longer look at the messages they do not touch. moto also kept
  every message it ever made (and every copy a receive hands out) in ``Message.instances_tracked``;
  it no longer does, so a drained queue keeps only what moto keeps on purpose (the receipt handles
  of deleted messages, so that a second delete succeeds: about 0.35 KB per message).
- A parsed pattern, a JSONPath expression, a state machine's parsed ASL and Step Functions'
  AWS clients are made once (moto re-parsed them, and built a boto3 client, for every event,
  every execution and every task).
- DynamoDB ``TransactWriteItems`` backed up a table (to roll back a cancelled transaction)
  with a deep copy once per item of the request, keeping the last: a claim of 100 records
  copied the whole idempotency table 100 times, and a run's time and memory grew with the
  square of its events. It now copies each table once per request: the same backup, since
  the table does not change while the request holds DynamoDB's lock.

Wake-ups: :data:`Hooks.changed` is called when a message may have become receivable on a
queue and when an execution ends, so the runtime waits on events instead of polling.
"""

from __future__ import annotations

import datetime
import functools
import json
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from event_patterns import PatternError, compile_pattern_text

MOTO_VERSION = "5.2.5"
REQUEST_LOCK = threading.RLock()
# DynamoDB's state is touched only by DynamoDB requests (no other service writes it in-process), so its
# requests queue on a lock of their own: a claim does not wait behind a PutEvents fanning out to queues.
SERVICE_LOCKS = {"dynamodb": threading.RLock()}
# Actions that wait on other callers inside the request: never under REQUEST_LOCK.
WAITING_ACTIONS = {"StartSyncExecution"}
DROPPED_FROM_EVENTS = ("ingestion-time",)
PUT_EVENTS_LIMIT = 10  # entries per PutEvents request
MALFORMED_DETAIL = {"ErrorCode": "MalformedDetail", "ErrorMessage": "Detail is malformed."}  # as AWS answers it
# Step Functions service integrations that make their AWS clients with moto's boto_client_for.
CLIENT_USING_SERVICES = ("aws_sdk", "batch", "dynamodb", "ecs", "events", "glue", "sfn", "sns", "sqs", "unsupported")  # moto's bookkeeping, not part of an EventBridge event


@dataclass
class Hooks:
    """What the runtime plugs into the patched moto (one pipeline at a time).

    ``changed(kind, arn)``: ``kind`` is ``"queue"`` (a message may be receivable) or
    ``"execution"`` (one ended). ``deliver(rule_arn, target, event)`` takes a rule target moto
    cannot deliver to and returns True if it did; ``event`` is as EventBridge delivers it.
    """

    changed: Callable[[str, str], None] | None = None
    deliver: Callable[[str, dict[str, Any], dict[str, Any]], bool] | None = None
    _saved: list[tuple[Any, str, Any]] = field(default_factory=list)


HOOKS = Hooks()


def _notify(kind: str, arn: str) -> None:
    if HOOKS.changed is not None:
        HOOKS.changed(kind, arn)


def _iso_time(value: Any) -> Any:
    if isinstance(value, (int, float)):
        return datetime.datetime.fromtimestamp(value, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value


def as_matched(event: dict[str, Any]) -> dict[str, Any]:
    """moto's event as AWS matches and delivers it: ``time`` in ISO 8601, no moto bookkeeping."""
    return {key: (_iso_time(value) if key == "time" else value) for key, value in event.items()
            if key not in DROPPED_FROM_EVENTS}


# -- the patches -------------------------------------------------------------------------------

ABSENT = object()  # what uninstall() deletes: the name was inherited, not the owner's own


def _patch(owner: Any, name: str, replacement: Any) -> None:
    original = owner.__dict__.get(name, ABSENT) if isinstance(owner, type) else owner.__dict__[name]
    HOOKS._saved.append((owner, name, original))
    setattr(owner, name, replacement)


def _patch_requests() -> None:
    from moto.core.responses import BaseResponse

    call_action = BaseResponse.call_action

    def locked_call_action(self: Any) -> Any:
        action = self._get_action()
        waits = action in WAITING_ACTIONS or (action == "ReceiveMessage" and _long_poll(self))
        if waits:
            return call_action(self)
        with SERVICE_LOCKS.get(getattr(self, "service_name", ""), REQUEST_LOCK):
            return call_action(self)

    _patch(BaseResponse, "call_action", locked_call_action)
    # moto lists a response class's methods with inspect.getmembers for every request; a class's methods do not change.
    from moto.core import responses

    _patch(responses, "method_names_from_class", functools.lru_cache(maxsize=256)(responses.method_names_from_class))


def _long_poll(response: Any) -> bool:
    try:
        return int(response._get_param("WaitTimeSeconds") or 0) > 0
    except (TypeError, ValueError):
        return False


DEDUPLICATION_WINDOW_S = 300  # SQS FIFO's deduplication interval


def _patch_sqs() -> None:
    from moto.core.utils import unix_time
    from moto.sqs.models import Queue, SQSBackend

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        retention_s = int(self.get_queue(queue_name).message_retention_period)
        return retention_s + message.sent_timestamp / 1000 > unix_time()

    add_message = Queue.add_message
    sent_ids: weakref.WeakKeyDictionary[Any, dict[str, float]] = weakref.WeakKeyDictionary()

    def add_message_and_notify(self: Any, message: Any) -> None:
        if self.fifo_queue and message.deduplication_id:
            # SQS drops a FIFO message whose deduplication id was sent in the last 5 minutes, even if that message
            # has been deleted since; moto compares only with the messages still on the queue.
            now, seen = unix_time(), sent_ids.setdefault(self, {})
            if now - seen.get(message.deduplication_id, -DEDUPLICATION_WINDOW_S) < DEDUPLICATION_WINDOW_S:
                return
            seen[message.deduplication_id] = now
        add_message(self, message)
        _notify("queue", self.queue_arn)

    change_visibility = SQSBackend.change_message_visibility

    def change_visibility_and_notify(self: Any, queue_name: str, receipt_handle: str, visibility_timeout: int) -> None:
        change_visibility(self, queue_name, receipt_handle, visibility_timeout)
        if int(visibility_timeout) == 0:
            _notify("queue", self.get_queue(queue_name).queue_arn)

    _patch(SQSBackend, "is_message_valid_based_on_retention_period", is_message_valid_based_on_retention_period)
    _patch(Queue, "add_message", add_message_and_notify)
    _patch(SQSBackend, "change_message_visibility", change_visibility_and_notify)
    _patch_sqs_depth(Queue, SQSBackend)


# -- SQS at any depth: a send, a receive and a delete cost the same on a queue of 10 or 100,000 messages --


class QueueAttributes(Mapping[str, Any]):
    """A queue's attributes as moto's ``Queue.attributes`` gives them, each computed when it is read.

    moto builds the whole dict, three counts that each scan every message included, wherever it reads
    one attribute: ``send_message`` reads ``ContentBasedDeduplication`` for every message sent.
    """

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        names = list(queue.BASE_ATTRIBUTES)
        if queue.fifo_queue:
            names += queue.FIFO_ATTRIBUTES
        if queue.kms_master_key_id:
            names += queue.KMS_ATTRIBUTES
        self.names = names

    def __getitem__(self, name: str) -> Any:
        if name not in self.names:
            raise KeyError(name)
        if name == "RedrivePolicy" and self.queue.redrive_policy:
            return json.dumps(self.queue.redrive_policy)
        value = getattr(self.queue, _snake_case(name))
        return str(value).lower() if isinstance(value, bool) else value

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


@functools.lru_cache(maxsize=64)
def _snake_case(name: str) -> str:
    from moto.core.utils import camelcase_to_underscores

    return camelcase_to_underscores(name)


class VisibleMessages:
    """A queue's receivable messages (visible, not delayed), in order, found as they are iterated.

    moto's ``Queue.messages`` lists them all, testing the clock twice per message on the queue, for every
    ``ReceiveMessage``, which then takes the first few: iterated lazily, a receive looks at the messages
    in flight ahead of what it returns and no further.
    """

    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages

    def __iter__(self) -> Iterator[Any]:
        return (message for message in self.messages if message.visible and not message.delayed)

    def __bool__(self) -> bool:
        return any(True for _ in self)

    def __len__(self) -> int:  # ApproximateNumberOfMessages: a count is a scan
        return sum(1 for _ in self)


@dataclass
class MessageIndex:
    """A queue's messages by id and by receipt handle, so a delete does not scan the queue.

    Kept beside moto's list, which stays the truth: an entry is trusted only while its message is on
    the queue (:data:`OWNERS`); a handle not indexed falls back to moto's own delete, scan and all.
    """

    by_id: dict[str, Any] = field(default_factory=dict)
    by_handle: dict[str, Any] = field(default_factory=dict)

    def forget(self, message: Any) -> None:
        self.by_id.pop(message.id, None)
        for handle in message.all_receipt_handles:
            self.by_handle.pop(handle, None)


# The queue each indexed message is on (moto moves a message to its DLQ by hand; a purge empties the list).
OWNERS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _index(queue: Any) -> MessageIndex:
    index = queue.__dict__.get("_inferbus_index")
    if index is None:
        index = queue.__dict__["_inferbus_index"] = MessageIndex()
    return index


def _patch_sqs_depth(queue_class: Any, backend_class: Any) -> None:
    from moto.sqs.models import Message

    add_message = queue_class.add_message  # already the notifying one
    delete_message = queue_class.delete_message
    receive_message = backend_class.receive_message
    purge_queue = backend_class.purge_queue

    def add_message_indexed(self: Any, message: Any) -> None:
        previous = OWNERS.get(message)
        if previous is not None:  # moved to a DLQ
            _index(previous).forget(message)
        OWNERS[message] = self  # before a waiting receiver can be woken
        _index(self).by_id[message.id] = message
        add_message(self, message)
        if self.fifo_queue and not any(kept is message for kept in self._messages[-1:]):
            OWNERS.pop(message, None)  # a FIFO duplicate, dropped
            _index(self).forget(message)

    def receive_message_indexed(self: Any, queue_name: str, *args: Any, **kwargs: Any) -> list[Any]:
        received = receive_message(self, queue_name, *args, **kwargs)
        index = _index(self.get_queue(queue_name))
        for copy in received:  # moto returns copies: the handle is the original's
            original = index.by_id.get(copy.id)
            if original is not None:
                index.by_handle[copy.receipt_handle] = original
        return received

    def delete_message_indexed(self: Any, receipt_handle: str) -> None:
        message = _index(self).by_handle.get(receipt_handle)
        if receipt_handle in self.deleted_messages or message is None or OWNERS.get(message) is not self:
            return delete_message(self, receipt_handle)  # moto's own answer
        self._messages.remove(message)
        self.pending_messages.discard(message)
        self.deleted_messages.update(message.all_receipt_handles)
        _index(self).forget(message)
        OWNERS.pop(message, None)
        return None

    def purge_queue_indexed(self: Any, queue_name: str) -> None:
        queue = self.get_queue(queue_name)
        purged = list(queue._messages)
        purge_queue(self, queue_name)
        for message in purged:
            OWNERS.pop(message, None)
        queue.__dict__["_inferbus_index"] = MessageIndex()

    def untracked(cls: Any, *args: Any, **kwargs: Any) -> Any:
        return object.__new__(cls)

    _patch(queue_class, "attributes", property(QueueAttributes))
    _patch(queue_class, "messages", property(lambda self: VisibleMessages(self._messages)))
    _patch(queue_class, "add_message", add_message_indexed)
    _patch(queue_class, "delete_message", delete_message_indexed)
    _patch(backend_class, "receive_message", receive_message_indexed)
    _patch(backend_class, "purge_queue", purge_queue_indexed)
    # moto keeps every model instance it ever made in its class's ``instances_tracked`` (for its
    # ``/moto-api/data.json``): every message sent, and every copy a receive hands out, for ever.
    _patch(Message, "__new__", staticmethod(untracked))


def _detail_is_json_but_no_object(entry: dict[str, Any]) -> bool:
    detail = entry.get("Detail")
    if isinstance(detail, str) and detail.lstrip(" \t\n\r").startswith("{"):
        return False  # an object, or not JSON at all: either way moto's answer (its put_events parses it anyway)
    try:
        return not isinstance(json.loads(detail or "{}"), dict)
    except (TypeError, ValueError, RecursionError):
        return False  # not JSON at all: moto answers MalformedDetail itself


def _patch_events() -> None:
    from moto.events.exceptions import InvalidEventPatternException
    from moto.events.models import EventPattern, EventsBackend, Rule
    from moto.events.responses import EventsHandler

    put_events = EventsBackend.put_events

    def put_events_refusing_non_objects(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        refused = [_detail_is_json_but_no_object(event) for event in events]
        if len(events) > PUT_EVENTS_LIMIT or not any(refused):
            return put_events(self, events)  # moto's own answer, its ValidationException for more than 10
        answers = iter(put_events(self, [e for e, no in zip(events, refused, strict=True) if not no]) if not all(refused) else [])
        return [dict(MALFORMED_DETAIL) if no else next(answers) for no in refused]

    load = EventPattern.__dict__["load"].__func__

    def validated_load(cls: Any, raw_pattern: str | None) -> Any:
        if raw_pattern:
            try:
                compile_pattern_text(raw_pattern)
            except PatternError as error:
                raise InvalidEventPatternException(reason=str(error)) from None
        return load(cls, raw_pattern)

    def matches_event(self: Any, event: dict[str, Any]) -> bool:
        raw = self._raw_pattern
        return not raw or compile_pattern_text(raw).matches(as_matched(event))

    send_to_targets = Rule.send_to_targets

    def send_to_targets_as_aws(self: Any, original_event: dict[str, Any], transform_input: bool = True) -> None:
        if self.state == "DISABLED" or not self.event_pattern.matches_event(original_event):
            return
        delivered = as_matched(original_event)
        plain, transformed = [], []
        for target in self.targets:
            if HOOKS.deliver is not None and HOOKS.deliver(self.arn, target, delivered):
                continue
            if ":sqs:" in target["Arn"] and "InputTransformer" not in target:
                plain.append(target)  # delivered whole, as AWS does (moto's default template drops account)
            else:
                transformed.append(target)
        all_targets = self.targets
        try:
            if plain:  # moto turns the raw time into ISO itself on the way to SQS
                self.targets = plain
                send_to_targets(self, {k: v for k, v in original_event.items() if k not in DROPPED_FROM_EVENTS},
                                transform_input=False)
            if transformed:
                self.targets = transformed
                send_to_targets(self, original_event, transform_input)
        finally:
            self.targets = all_targets

    def test_event_pattern(self: Any) -> Any:
        try:
            compiled = compile_pattern_text(self._get_param("EventPattern") or "")
        except PatternError as error:
            raise InvalidEventPatternException(reason=str(error)) from None
        return json.dumps({"Result": compiled.matches(json.loads(self._get_param("Event") or "{}"))})

    _patch(EventsBackend, "put_events", put_events_refusing_non_objects)
    _patch(EventPattern, "load", classmethod(validated_load))
    _patch(EventPattern, "matches_event", matches_event)
    _patch(Rule, "send_to_targets", send_to_targets_as_aws)
    _patch(EventsHandler, "test_event_pattern", test_event_pattern)


def _patch_stepfunctions() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.asl.utils import boto_client
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication

    terminated = BaseExecutionWorkerCommunication.terminated

    def terminated_and_notify(self: Any) -> None:
        terminated(self)
        _notify("execution", self.execution.exec_arn)

    boto_client_for = lambda_eval_utils.boto_client_for
    clients: dict[tuple[str, str], Any] = {}
    made = threading.Lock()

    def cached_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        with made:  # boto3's default session is not safe to make clients from on several threads
            key = (region, service)
            if key not in clients:
                clients[key] = boto_client_for(region=region, service=service, state_credentials=state_credentials)
            return clients[key]

    parse = AmazonStateLanguageParser.__dict__["parse"].__func__
    # Evaluation keeps its state in each execution's Environment, not in the parsed program: executions
    # of one machine share it (the demo's 99 concurrent executions and the retry tests run on shared ones).
    parse_once = functools.lru_cache(maxsize=64)(parse)

    _patch(BaseExecutionWorkerCommunication, "terminated", terminated_and_notify)
    _patch(AmazonStateLanguageParser, "parse", staticmethod(parse_once))
    # The defining module, for what is imported later, and each service module that imported it already.
    services = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_"
    using = [sys.modules.get(services + name) for name in CLIENT_USING_SERVICES]
    for module in [boto_client, lambda_eval_utils, *[module for module in using if module is not None]]:
        _patch(module, "boto_client_for", cached_client_for)


def _patch_dynamodb() -> None:
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    class OneCopyPerTable:  # what moto's module sees as ``copy`` during one request
        def __init__(self) -> None:
            self.tables: dict[int, Any] = {}

        def deepcopy(self, value: Any, memo: Any = None) -> Any:
            if not isinstance(value, Table):
                return copy.deepcopy(value, memo)
            if id(value) not in self.tables:  # the table stays in the backend: its id is not reused
                self.tables[id(value)] = copy.deepcopy(value)
            return self.tables[id(value)]

    transact_write_items = models.DynamoDBBackend.transact_write_items

    def copying_once(backend: Any, transact_items: Any) -> Any:
        with SERVICE_LOCKS["dynamodb"]:
            models.copy = OneCopyPerTable()  # type: ignore[assignment]
            try:
                return transact_write_items(backend, transact_items)
            finally:
                models.copy = copy

    _patch(models.DynamoDBBackend, "transact_write_items", copying_once)


def _patch_jsonpath() -> None:
    import jsonpath_ng.ext
    from moto.stepfunctions.parser.asl.utils import json_path

    parse = functools.lru_cache(maxsize=1024)(jsonpath_ng.ext.parse)
    _patch(jsonpath_ng.ext, "parse", parse)  # EventBridge's input templates import it at each call
    _patch(json_path, "parse", parse)  # Step Functions' paths imported it once


def install(changed: Callable[[str, str], None] | None = None,
            deliver: Callable[[str, dict[str, Any], dict[str, Any]], bool] | None = None) -> None:
    """Apply every patch and plug in the runtime's hooks (call :func:`uninstall` after).

    Raises
    ------
    RuntimeError
        Under a moto other than :data:`MOTO_VERSION`, or when already installed.
    """
    import moto

    if moto.__version__ != MOTO_VERSION:
        raise RuntimeError(f"the embedded runtime patches moto {MOTO_VERSION}, not {moto.__version__}: "
                           "pin moto, or re-verify inferbus/runtime/moto_patches.py against the new version")
    if HOOKS._saved:
        raise RuntimeError("moto is already patched: one embedded pipeline at a time")
    HOOKS.changed, HOOKS.deliver = changed, deliver
    _patch_requests()
    _patch_sqs()
    _patch_events()
    _patch_stepfunctions()
    _patch_dynamodb()
    _patch_jsonpath()


def uninstall() -> None:
    """Undo every patch, in reverse order."""
    while HOOKS._saved:
        owner, name, original = HOOKS._saved.pop()
        if original is ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
    HOOKS.changed = HOOKS.deliver = None


def installed() -> bool:
    return bool(HOOKS._saved)


# -- reads that skip a request: history is read at every wait for quiescence --------------------

def _parser_executions() -> list[Any]:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    found = []
    for regions in stepfunctions_parser_backends.values():
        for backend in regions.values():
            for machine in list(backend.state_machines):
                found += list(getattr(machine, "executions", []))
    return found


def execution_history(arn: str) -> list[dict[str, Any]] | None:
    """An execution's history events, as boto3's ``get_execution_history`` gives them (None if unknown)."""
    for execution in _parser_executions():
        if execution.exec_arn == arn:
            worker = execution.exec_worker
            env = worker.env if worker is not None else None
            events = list(env.event_manager.get_event_history()) if env is not None else []
            return [event | {"timestamp": _timestamp(event["timestamp"])} for event in events]
    return None


def _timestamp(value: Any) -> datetime.datetime:
    """moto keeps ISO strings (``2026-12-03T15:11:38.586Z``); the API gives timezone-aware datetimes."""
    return value if isinstance(value, datetime.datetime) else datetime.datetime.fromisoformat(str(value))


def execution_status(arn: str) -> tuple[str, float]:
    """An execution's status and how long it ran, in seconds (``("UNKNOWN", 0.0)`` if moto has no such execution)."""
    for execution in _parser_executions():
        if execution.exec_arn == arn and execution.exec_status is not None:
            stop = execution.stop_date or datetime.datetime.now(tz=datetime.UTC)
            return execution.exec_status.value, (stop - execution.start_date).total_seconds()
    return "UNKNOWN", 0.0


def running_executions() -> list[str]:
    """The ARNs of every execution still running."""
    return [e.exec_arn for e in _parser_executions() if e.exec_status is not None and e.exec_status.value == "RUNNING"]


def _queue(queue_arn: str) -> Any:
    from moto.sqs.models import sqs_backends

    _, _, _, region, account, name = queue_arn.split(":", 5)
    return sqs_backends[account][region].queues.get(name)


def mark_managed(rule_arn: str, managed_by: str) -> None:
    """Mark a rule as managed by a service (``ManagedBy`` in ``ListRules``), as AWS marks an archive's
    rule: the runtime's own local-only rules are then no rule of the user's (PutRule cannot set it)."""
    from moto.events.models import events_backends

    _, _, _, region, account, resource = rule_arn.split(":", 5)
    bus_name, rule_name = resource.removeprefix("rule/").rsplit("/", 1) if resource.count("/") == 2 else ("default", resource[5:])
    events_backends[account][region].event_buses[bus_name].rules[rule_name].managed_by = managed_by


def receivable(queue_arn: str) -> bool:
    """Whether a ReceiveMessage could return something now (a visible message), without a request."""
    queue = _queue(queue_arn)
    return queue is not None and any(message.visible and not message.delayed for message in list(queue._messages))


def messages_on(queue_arn: str) -> list[dict[str, Any]]:
    """Every message on a queue, visible or in flight, as ReceiveMessage shapes them, without a request:
    a look that moves nothing. (A FIFO queue hands out one batch per message group until it is deleted,
    so receiving cannot show a group's later messages.)"""
    queue = _queue(queue_arn)
    if queue is None:
        return []
    looked = []
    for message in list(queue._messages):
        attributes = {"ApproximateReceiveCount": str(message.approximate_receive_count),
                      "SentTimestamp": str(message.sent_timestamp)}
        if message.group_id is not None:
            attributes["MessageGroupId"] = message.group_id
        looked.append({"MessageId": message.id, "Body": message.body, "Attributes": attributes,
                       "MessageAttributes": dict(message.message_attributes)})
    return looked


def queue_depth(queue_arn: str) -> int:
    """Messages on a queue, visible or in flight (what ``ApproximateNumberOf...`` add up to), without a request."""
    queue = _queue(queue_arn)
    return len(queue._messages) if queue is not None else 0
