"""Every change the embedded runtime makes to moto, in this one module, for moto 5.2.5 only.

Each patch either makes moto answer as AWS does where it does not, or removes a cost that
is moto's and not the pipeline's; none changes what a request returns otherwise.
``tests/functional/test_moto_patches.py`` fails when moto changes under any of them (its
version, or the signature of a function patched here).

Faithfulness:

- **Patterns**: a rule's pattern is validated and matched by ``event_patterns`` (AWS's
  documented semantics, the matcher the unrouted-events check runs in Lambda too) instead of moto's matcher, against the event as AWS matches it
  (``time`` as an ISO string, not moto's raw request time).
- **Disabled rules** deliver nothing (moto delivers anyway); each rule counts the events it
  matched (:func:`matched_events`, CloudWatch's ``MatchedEvents``; moto keeps no metric).
- **AWS's limits** (:mod:`.aws_limits`, which lists those enforced and those not): a JSON-protocol
  request AWS cannot read is a 400 ``SerializationException`` (moto: an HTML 500); ``PutEvents``
  takes 1-10 entries of at most 256 KB in all (else ``ValidationException``), and fails an entry
  whose ``Detail`` is not a JSON object, nests past 1,000 levels or holds an integer past 64 bits
  (``MalformedDetail``; moto accepts some and crashes on others).
- **Bus resource policies** (:mod:`.resource_policy`): each ``PutEvents`` is checked against
  the bus's policy for the caller: a local function acts as its template role, a Step Functions
  task as its state machine's role (moto stored the policy and never read it).
- **Delivered events** keep their ``account`` (moto's default input template drops it).
- **State machine targets** (moto raises ``NotImplementedError``) and the runtime's own
  local-only targets are handed to :data:`Hooks.deliver` in-process.
- ``TestEventPattern`` answers (moto's is a stub).
- A Lambda ``Invoke`` that reaches moto runs the template's function in-process (:data:`Hooks.invoke`):
  moto keeps no code for them, so a real client of ``inferbus serve`` got ``ResourceNotFoundException``.
- **Replays** take only the archived events whose time is in the window, and only to the rules in
  ``Destination.FilterArns`` when it is given (moto replays every archived event to every rule).

- **DynamoDB TTL**: items whose TTL attribute has passed are deleted (:func:`expire_items`, which
  the runtime calls every few seconds; moto records the TTL setting and never applies it).
- **An execution started without a name** is named with a UUID, as AWS does (moto names each ``None``).
- ``GetExecutionHistory`` pages its events as AWS does (``maxResults``, ``reverseOrder``, ``nextToken``;
  moto answered all of them, oldest first).
- **Step Functions errors** carry their code (``InvalidExecutionInput``: moto's parser answered an empty
  one), and ``SendTaskSuccess`` refuses an output that is not JSON (``InvalidOutput``), leaving the
  task waiting as AWS does (moto passed it on, and the execution failed reading it). A token of a task
  already closed is ``TaskTimedOut``, as in AWS (moto: ``InvalidToken``, as for a token never issued).
- **Atomic requests**: moto was written for one caller at a time; handlers now call it from
  many threads, so every request is processed under a lock, as each AWS call is atomic (a
  conditional write is checked and written at once): one for DynamoDB, whose state nothing
  else touches, one for the rest (a PutEvents writes to SQS in-process). Long polls
  (``ReceiveMessage`` with a wait, ``StartSyncExecution``) run outside, as they wait on others.

Cost:

- SQS receipt handles are drawn from one ``os.urandom`` read (moto drew each of 185 letters with
  ``random.choice``: a tenth of the server's CPU routing a burst to a queue and receiving it).
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
- moto's server listed its package's folders (a ``listdir`` and an ``isdir`` per service) to route
  each HTTP request (about a sixth of a PutEvents' time in ``inferbus serve``); the list is made once.
- A parsed pattern, a JSONPath expression, a DynamoDB condition expression's tokens, a state
  machine's parsed ASL and Step Functions' AWS clients are made once (moto re-parsed them, and
  built a boto3 client, for every event, every request, every execution and every task); DynamoDB's
  reserved words are a set (moto scanned a list of 573 for each attribute name).
- DynamoDB ``TransactWriteItems`` backed up a table (to roll back a cancelled transaction)
  with a deep copy once per item of the request, keeping the last: a claim of 100 records
  copied the whole idempotency table 100 times, and a run's time and memory grew with the
  square of its events. It now copies, before the request, only the items the request names
  (an undo log, put back if the transaction is cancelled): the same rollback, since nothing
  else writes the table while the request holds DynamoDB's lock, at a cost that no longer grows
  with the table. (A table with a stream is still copied whole, once per request, so that a
  rollback takes back its stream records too.)
- Every model instance moto made stayed in its class's ``instances_tracked`` for the life of the
  process (each DynamoDB item written, each execution with its history); the lists are now weak
  (:class:`WeakTracked`). ``StartExecution`` deep-copied the state machine for each execution; one
  snapshot per revision is shared (:class:`SnapshotPerRevision`).
- moto's Step Functions interpreter deep-copies a state's data (its input, result, the
  execution's context and each history event) several times per state with ``copy.deepcopy``,
  which was about two fifths of ``inferbus serve``'s CPU under a burst (a 384-float embedding
  copied float by float through deepcopy's memo). That data is JSON (dicts, lists, strings,
  numbers): :func:`copy_json` copies it the same way at a fraction of the cost (a long list of
  numbers, an embedding or an image's pixels, in one pass over its item types and a shallow copy)
  and hands anything else to ``copy.deepcopy``. A state's entered and exited history events write
  out its data as JSON from the data itself, not from a deep copy of it made for the purpose.
- ``PutEvents`` built each entry's event once per rule on the bus, matched or not (a parse of its
  ``Detail``, a deep copy and two clock reads for each of the 13 rules of the kit's template); the
  event is now built and matched once, and each rule it matches is handed its own copy, as before.
  An archive's target took the event through its input template (the event written out as JSON,
  then read back) only to name the archive; the event is archived as it was given, as before.
- moto's clock (``unix_time``, and ``unix_time_millis`` through it) read the time as a ``datetime``
  and subtracted the epoch from it, importing ``datetime.UTC`` on the way: 12.7 µs a read, and an
  SQS receive reads it about three times per message. It now reads ``time.time_ns`` (1 µs a read;
  the runtime's own patches read it too) and gives the same value: the time floored to the
  microsecond, as ``datetime.now`` does, in seconds.
  A time passed in is converted by moto as before.
- A response's member names: moto's serializer asked six alias providers which attribute of the
  object answering holds each member, for every member of every answer (:class:`PossibleKeysOnce`
  keeps each answer).
- A received SQS message is copied shallowly (:class:`ShallowMessageCopy`): moto deep-copied each
  one it handed out only to give the copy its own message attributes.
- moto's Step Functions parser imported ``moto.batch``'s package for one enum, and with it ``moto.ec2``,
  whose region table loads EC2's service model: 1.2 s of every start. The enum's module is loaded
  alone (:func:`load_batch_utils_alone`).
- moto's Step Functions interpreter ran the work of each Task, Parallel and Map state on a thread of
  its own, to stop waiting at the state's timeout; a state with no timeout of its own (waiting
  99,999,999 s) runs on its execution's thread instead, with the same frame, result and errors.
  There a Task's frame shares the state's input rather than a deep copy of it (its work only
  reads it); a Parallel or Map state's frame still gets its own copy.
- A FIFO queue's messages that are visible again leave its in-flight set before a receive
  (:func:`_release_visible_again`): moto released them one by one as its receive reached them and
  skipped a message whose group still had one in flight, so a group's batch back in the queue came
  out last message first.
- A ``ResultPath`` of field names (``$.a.b``) is set directly (:func:`result_path_by_fields`):
  jsonpath_ng walked the whole state after each update, value by value, for list placeholders
  such a path never makes (0.47 ms per Task on a scene's pixels).

Wake-ups: :data:`Hooks.changed` is called when a message may have become receivable on a
queue and when an execution ends, so the runtime waits on events instead of polling.

Marks: a message a caller hides for a while (``ChangeMessageVisibility`` above 0, a consumer's backoff)
remembers the receipt handle it was hidden with (:func:`hidden_on_purpose`), so the local poller
leaves it hidden instead of making it visible at once as it does other failed records.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import os
import re
import sys
import threading
import time
import uuid
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from event_patterns import PatternError, compile_pattern_text

from . import aws_limits, resource_policy
from .deliveries import DELIVERIES, DeliveryFailure
from .windows import RecentSet

MOTO_VERSION = "5.2.5"
REQUEST_LOCK = threading.RLock()
# DynamoDB's state is touched only by DynamoDB requests (no other service writes it in-process), so its
# requests queue on a lock of their own: a claim does not wait behind a PutEvents fanning out to queues.
SERVICE_LOCKS = {"dynamodb": threading.RLock()}
# Actions that wait on other callers inside the request: never under REQUEST_LOCK (an Invoke runs a handler,
# whose own requests take the lock in turn).
WAITING_ACTIONS = {"StartSyncExecution", "Invoke"}
HISTORY_PAGE = 100  # GetExecutionHistory's events per page when maxResults is not given (or 0), as in AWS
# The task tokens the interpreter issued lately: a closed task's token is TaskTimedOut, not InvalidToken.
ISSUED_TASK_TOKENS = RecentSet(keep=100_000)
ANSWERED_TASK_TOKENS = RecentSet(keep=100_000)
DROPPED_FROM_EVENTS = ("ingestion-time",)
# Step Functions service integrations that make their AWS clients with moto's boto_client_for.
CLIENT_USING_SERVICES = ("aws_sdk", "batch", "dynamodb", "ecs", "events", "glue", "sfn", "sns", "sqs", "unsupported")  # moto's bookkeeping, not part of an EventBridge event


@dataclass
class Hooks:
    """What the runtime plugs into the patched moto (one pipeline at a time).

    ``changed(kind, arn)``: ``kind`` is ``"queue"`` (a message may be receivable) or
    ``"execution"`` (one ended). ``deliver(rule_arn, target, event)`` takes a rule target moto
    cannot deliver to and returns True if it did; ``event`` is as EventBridge delivers it.
    ``invoke(function, invocation_type, body)`` answers a Lambda ``Invoke`` that reached moto
    (the in-process functions, :mod:`.lambda_adapter`), or returns None for moto to answer.
    """

    changed: Callable[[str, str], None] | None = None
    deliver: Callable[[str, dict[str, Any], dict[str, Any]], bool] | None = None
    # (function name or ARN, invocation type, body) -> (status, headers, body) of a Lambda Invoke that reached moto
    # (a real client of ``inferbus serve``, or a session other than boto3's default); None: moto answers it.
    invoke: Callable[[str, str, bytes], tuple[int, dict[str, str], bytes] | None] | None = None
    _saved: list[tuple[Any, str, Any]] = field(default_factory=list)


HOOKS = Hooks()
# The rule pattern a delivery on this thread has matched already (its own event, as as_matched shows it).
ALREADY_MATCHED = threading.local()
# Events each rule matched since install, by rule ARN: the twin of CloudWatch's MatchedEvents metric.
MATCHED_EVENTS: Counter[str] = Counter()


def _notify(kind: str, arn: str) -> None:
    if HOOKS.changed is not None:
        HOOKS.changed(kind, arn)


def _iso_time(value: Any) -> Any:
    if not isinstance(value, (int, float)):
        return value
    if value < 0:
        return _iso(value)
    # The second fromtimestamp would show (it rounds to the microsecond, half to even, first), written
    # once per second: the conversion was a tenth of the fan-out's time in a burst.
    fraction, whole = math.modf(value)
    return _iso_second(int(whole) + (round(fraction * 1e6) >= 1_000_000))


def _iso(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment, tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_iso_second = functools.lru_cache(maxsize=256)(_iso)  # a whole second's text: one per second of a burst


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
        if waits or (action == "PutEvents" and DELIVERIES.deferring()):  # it only reads; its deliveries come later
            return call_action(self)
        with SERVICE_LOCKS.get(getattr(self, "service_name", ""), REQUEST_LOCK):
            return call_action(self)

    dispatch = BaseResponse._dispatch

    def dispatch_readable(self: Any, request: Any, full_url: str | None = None, headers: Any = None) -> Any:
        json_protocol = "x-amz-target" in request.headers or "amz-json" in request.headers.get("content-type", "")
        if json_protocol and request.content_encoding != "gzip":  # a gzipped body is read by moto, unzipped
            try:
                aws_limits.check_json_request(request.get_data() or b"")
            except aws_limits.RequestRefused as refused:  # AWS's JSON error shape (botocore reads __type)
                return refused.status, {"Content-Type": "application/x-amz-json-1.1",
                                        "x-amzn-ErrorType": refused.code}, refused.body()
        return dispatch(self, request, full_url, headers)

    _patch(BaseResponse, "call_action", locked_call_action)
    _patch(BaseResponse, "_dispatch", dispatch_readable)
    # moto lists a response class's methods with inspect.getmembers for every request; a class's methods do not change.
    from moto.core import responses

    _patch(responses, "method_names_from_class", functools.lru_cache(maxsize=256)(responses.method_names_from_class))
    # moto's server lists its package folder (a listdir and an isdir per service) to route every request.
    from moto import backends

    modules = tuple(backends.list_of_moto_modules())
    _patch(backends, "list_of_moto_modules", lambda: modules)


def _long_poll(response: Any) -> bool:
    try:
        return int(response._get_param("WaitTimeSeconds") or 0) > 0
    except (TypeError, ValueError):
        return False


DEDUPLICATION_WINDOW_S = 300  # SQS FIFO's deduplication interval
HIDDEN_WITH = "_inferbus_hidden_with"  # a message's attribute: the receipt handle a caller last hid it (longer) with


RECEIPT_HANDLE_LENGTH = 185  # moto's: lowercase letters
_TO_LETTER = bytes(ord("a") + byte % 26 for byte in range(256))


def receipt_handle() -> str:
    """A new receipt handle in moto's format, from one read of ``os.urandom``.

    moto drew each of its 185 letters with ``random.choice``: a tenth of ``inferbus serve``'s
    CPU while it routed a burst of events to a queue and received them.
    """
    return os.urandom(RECEIPT_HANDLE_LENGTH).translate(_TO_LETTER).decode("ascii")


def _patch_sqs() -> None:
    from moto.sqs import models as sqs_models
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
        queue = self.get_queue(queue_name)
        if int(visibility_timeout) == 0:
            _notify("queue", queue.queue_arn)
        elif (message := _index(queue).by_handle.get(receipt_handle)) is not None:
            message.__dict__[HIDDEN_WITH] = receipt_handle  # hidden on purpose during this receipt (hidden_on_purpose)

    _patch(SQSBackend, "is_message_valid_based_on_retention_period", is_message_valid_based_on_retention_period)
    _patch(sqs_models, "deepcopy", ShallowMessageCopy(sqs_models.Message))
    _patch(sqs_models, "generate_receipt_handle", receipt_handle)
    _patch(Queue, "add_message", add_message_and_notify)
    _patch(SQSBackend, "change_message_visibility", change_visibility_and_notify)
    _patch_sqs_depth(Queue, SQSBackend)


class ShallowMessageCopy:
    """What moto's SQS module calls as ``deepcopy``: a message handed out by a receive is copied shallowly.

    moto deep-copies each message it hands out so as to give the copy only the message attributes asked
    for, which it does by giving the copy a new dict: every other value of the copy is only read, as the
    answer is written. The deep copy was 6-8 % of ``inferbus serve``'s CPU while a client drained a queue.
    Anything else (the pending FIFO groups, a template's properties) is deep-copied as before.
    """

    def __init__(self, message_class: type) -> None:
        self.message_class = message_class

    def __call__(self, value: Any, memo: Any = None) -> Any:
        import copy

        if type(value) is self.message_class:
            return copy.copy(value)
        return copy.deepcopy(value, memo)


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
        return _receivable_now(self.messages)

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


def _release_visible_again(queue: Any) -> None:
    """Take out of a FIFO queue's in-flight set every message that is visible again, before a receive.

    moto's receive does it lazily, message by message, as it walks the queue in order, and skips a
    message whose group still has one in flight. A group whose batch became visible again (failed
    records sent back, or their visibility timeout passed) then still looks in flight at its first
    messages, because its later ones are only released after them: the receive skipped 010 and 011
    and handed out 012 first. Released together first, the group's oldest message goes first, as in
    AWS. Same rule of visibility as moto's ``Message.visible``, with the clock read once.
    """
    now = time.time() * 1000.0
    for message in [message for message in queue.pending_messages if now > message.visible_at]:
        queue.pending_messages.discard(message)


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
        queue = self.get_queue(queue_name)
        if queue.fifo_queue and queue.pending_messages:
            _release_visible_again(queue)
        received = receive_message(self, queue_name, *args, **kwargs)
        index = _index(queue)
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


def _policy_of(bus: Any) -> dict[str, Any] | None:
    text = bus.policy  # moto keeps the statements PutPermission gave it, and writes them out again
    return _parsed_policy(text) if text else None


@functools.lru_cache(maxsize=16)
def _parsed_policy(text: str) -> dict[str, Any]:
    return json.loads(text)


def _session_role(access_key: str) -> str | None:
    """The role whose STS session ``access_key`` belongs to, as moto's STS handed it out (None: not a session)."""
    from moto.sts.models import sts_backends

    for regions in list(sts_backends.values()):
        for backend in list(regions.values()):
            assumed = backend.get_assumed_role_from_access_key(access_key)
            if assumed is not None:
                return str(assumed.role_arn)
    return None


def _policy_refusals(handler: Any, entries: list[dict[str, Any]]) -> list[dict[str, str] | None]:
    """Per entry, the error the bus's resource policy gives it for this caller (None: not denied)."""
    backend = handler.events_backend
    by_bus: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        by_bus.setdefault(backend._normalize_event_bus_arn(entry.get("EventBusName")), []).append(index)
    refusals: list[dict[str, str] | None] = [None] * len(entries)
    principal = None
    for bus_name, indexes in by_bus.items():
        bus = backend.event_buses.get(bus_name)
        policy = _policy_of(bus) if bus is not None else None
        if policy is None:
            continue
        if principal is None:
            principal = resource_policy.current_principal(handler.get_current_account(),
                                                          lambda: _session_role(handler.get_access_key()))
        statement = resource_policy.put_events_denial(
            policy, principal, sources=[str(entries[i].get("Source", "")) for i in indexes],
            detail_types=[str(entries[i].get("DetailType", "")) for i in indexes])
        if statement is None:
            continue
        about_source = any(key.lower() == "events:source" for keys in statement.get("Condition", {}).values() for key in keys)
        code = "NotAuthorizedForSourceException" if about_source else "AccessDeniedException"
        message = (f"User: {principal.arn} is not authorized to perform: events:PutEvents on resource: {bus.arn} "
                   f"with an explicit deny in a resource-based policy (statement {statement.get('Sid', '?')})")
        for index in indexes:
            refusals[index] = {"ErrorCode": code, "ErrorMessage": message}
    return refusals


def _patch_events() -> None:
    from moto.core.exceptions import JsonRESTError
    from moto.events.exceptions import InvalidEventPatternException, ValidationException
    from moto.events.models import EventPattern, EventsBackend, Rule
    from moto.events.responses import EventsHandler
    from moto.moto_api._internal import mock_random

    def put_events_as_aws(self: Any) -> str:
        entries = self._get_param("Entries")
        try:
            aws_limits.check_put_events_request(entries)
        except aws_limits.RequestRefused as refused:
            raise JsonRESTError(refused.code, refused.message) from None
        refusals = [aws_limits.detail_refusal(entry) for entry in entries]
        denials = _policy_refusals(self, entries)
        refusals = [refusal or denial for refusal, denial in zip(refusals, denials, strict=True)]
        kept = [entry for entry, refusal in zip(entries, refusals, strict=True) if refusal is None]
        answers = iter(self.events_backend.put_events(kept) if kept else [])
        results = [refusal or next(answers) for refusal in refusals]
        return json.dumps({"FailedEntryCount": sum("ErrorCode" in result for result in results), "Entries": results})

    load = EventPattern.__dict__["load"].__func__

    def validated_load(cls: Any, raw_pattern: str | None) -> Any:
        if raw_pattern:
            try:
                compile_pattern_text(raw_pattern)
            except PatternError as error:
                raise InvalidEventPatternException(reason=str(error)) from None
        return load(cls, raw_pattern)

    def matches_event(self: Any, event: dict[str, Any]) -> bool:
        if getattr(ALREADY_MATCHED, "pattern", None) is self:
            return True  # moto's send_to_targets asks again about the event deliver_matched was called for
        return _pattern_matches(self, as_matched(event))

    send_to_targets = Rule.send_to_targets

    def send_to_targets_as_aws(self: Any, original_event: dict[str, Any], transform_input: bool = True) -> None:
        if self.state == "DISABLED" or not self.event_pattern.matches_event(original_event):
            return
        deliver_matched(self, original_event, transform_input)

    def deliver_matched(self: Any, original_event: dict[str, Any], transform_input: bool) -> None:
        MATCHED_EVENTS[self.arn] += 1
        delivered = as_matched(original_event)
        plain, transformed = [], []
        for target in self.targets:
            if HOOKS.deliver is not None and HOOKS.deliver(self.arn, target, delivered):
                continue
            if transform_input and (archive := _archived_by(target)) is not None:
                self._send_to_events_archive(archive, original_event)
                continue
            if ":sqs:" in target["Arn"] and "InputTransformer" not in target:
                plain.append(target)  # delivered whole, as AWS does (moto's default template drops account)
            else:
                transformed.append(target)
        all_targets, matched_before = self.targets, getattr(ALREADY_MATCHED, "pattern", None)
        ALREADY_MATCHED.pattern = self.event_pattern
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
            ALREADY_MATCHED.pattern = matched_before  # a delivery may put to a bus, whose rules deliver in it

    def test_event_pattern(self: Any) -> Any:
        try:
            compiled = compile_pattern_text(self._get_param("EventPattern") or "")
        except PatternError as error:
            raise InvalidEventPatternException(reason=str(error)) from None
        return json.dumps({"Result": compiled.matches(json.loads(self._get_param("Event") or "{}"))})

    def put_events_parsed_once(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # moto's put_events, but moto built each entry's event once per rule on the bus, matched or not (13 rules in
        # the kit's template: 13 parses of its Detail, 13 deep copies, 26 clock reads per entry). Here the event is
        # built and matched once, and each rule it matches is handed a copy of its own made as moto made it.
        if len(events) > 10:
            raise ValidationException("1 validation error detected: Value '[PutEventsRequestEntry]' at 'entries' "
                                      "failed to satisfy constraint: Member must have length less than or equal to 10")
        entries: list[dict[str, Any]] = []
        taken: list[tuple[Any, dict[str, Any], str]] = []  # (bus, event, its Detail text) to deliver
        for event in events:
            missing = next((name for name in ("Source", "DetailType", "Detail") if not event.get(name)), None)
            if missing is not None:
                entries.append({"ErrorCode": "InvalidArgument",
                                "ErrorMessage": f"Parameter {missing} is not valid. Reason: {missing} is a required argument."})
                continue
            try:
                detail = json.loads(event["Detail"])
            except ValueError:
                entries.append({"ErrorCode": "MalformedDetail", "ErrorMessage": "Detail is malformed."})
                continue
            if not isinstance(detail, dict):
                warnings.warn(f"EventDetail should be of type dict - types such as {type(detail)} are ignored by AWS",
                              stacklevel=2)
            event_id = str(mock_random.uuid4())
            entries.append({"EventId": event_id})
            event_bus = self.describe_event_bus(self._normalize_event_bus_arn(event.get("EventBusName")))
            built = {"version": "0", "id": event_id, "detail-type": event["DetailType"], "source": event["Source"],
                     "account": self.account_id, "time": event.get("Time", unix_time()), "region": self.region_name,
                     "resources": event.get("Resources", []), "detail": detail, "ingestion-time": unix_time()}
            taken.append((event_bus, built, event["Detail"]))
        if DELIVERIES.deferring():
            if taken:
                DELIVERIES.defer(functools.partial(deliver_later, taken), len(taken))
        else:
            for event_bus, built, detail in taken:
                deliver_to_rules(event_bus, built, detail)
        return entries

    def deliver_to_rules(event_bus: Any, built: dict[str, Any], detail: str,
                         failures: list[DeliveryFailure] | None = None) -> None:
        matched = as_matched(built)
        for rule in list(event_bus.rules.values()):
            if rule.state != "DISABLED" and _pattern_matches(rule.event_pattern, matched):
                try:
                    deliver_matched(rule, {**built, "detail": json.loads(detail)}, True)
                except Exception as error:  # noqa: BLE001 - as EventBridge: one target's failure, the others still get it
                    if failures is None:  # in the request: the caller hears of it, as before
                        raise
                    failures.append(DeliveryFailure(built["id"], rule.arn, f"{type(error).__name__}: {error}"))

    def deliver_later(taken: list[tuple[Any, dict[str, Any], str]]) -> list[DeliveryFailure]:
        failures: list[DeliveryFailure] = []
        with REQUEST_LOCK:  # the lock the request would have held (the fan-out touches SQS and Step Functions)
            for event_bus, built, detail in taken:
                deliver_to_rules(event_bus, built, detail, failures)
        return failures

    _patch(EventsHandler, "put_events", put_events_as_aws)
    _patch(EventsBackend, "put_events", put_events_parsed_once)
    _patch(EventPattern, "load", classmethod(validated_load))
    _patch(EventPattern, "matches_event", matches_event)
    _patch(Rule, "send_to_targets", send_to_targets_as_aws)
    _patch(EventsHandler, "test_event_pattern", test_event_pattern)


# The input template of the target moto gives an archive's rule: it names the archive (ARN:uuid).
ARCHIVE_TEMPLATE = re.compile(r'\{"archive-arn": "(?P<arn>[^"]+)", "event": <aws\.events\.event\.json>, ')


def _archived_by(target: dict[str, Any]) -> str | None:
    """The archive (``name:uuid``) a rule target of moto's archives to, or None for any other target.

    moto fills that target's input template with the whole event as JSON and parses the result back, for
    every event archived, only to read the archive's ARN out of it: the event archived is the one given.
    """
    from moto.utilities.arns import parse_arn

    found = ARCHIVE_TEMPLATE.match((target.get("InputTransformer") or {}).get("InputTemplate") or "")
    arn = parse_arn(target["Arn"])
    if found is None or arn.service != "events" or arn.resource_type:
        return None
    return parse_arn(found["arn"]).resource_id


def _pattern_matches(pattern: Any, matched: dict[str, Any]) -> bool:
    """Whether a rule's ``EventPattern`` matches an event as AWS matches it (:func:`as_matched`)."""
    raw = pattern._raw_pattern
    return not raw or compile_pattern_text(raw).matches(matched)


def _epoch(value: Any) -> float:
    """A moto timestamp (epoch seconds, a number or its string; or ISO 8601) as epoch seconds."""
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    try:
        return float(value)
    except (TypeError, ValueError):
        return datetime.datetime.fromisoformat(str(value)).timestamp()


def _patch_replays() -> None:
    from moto.events.models import Replay, ReplayState, events_backends
    from moto.moto_api._internal import mock_random

    def replay_events_as_aws(self: Any, archive: Any) -> None:
        # AWS replays the events whose time (PutEvents' Time) falls in the window, to the rules in
        # Destination.FilterArns if given (StartReplay, API reference); moto replays every archived event to every rule.
        bus = events_backends[self.account_id][self.region].describe_event_bus(self.destination["Arn"].split("/")[-1])
        only = set(self.destination.get("FilterArns") or ())
        start, end = _epoch(self.event_start_time), _epoch(self.event_end_time)
        for event in list(archive.events):
            if not start <= _epoch(event.get("time", 0)) <= end:
                continue
            for rule in list(bus.rules.values()):
                if not only or rule.arn in only:
                    rule.send_to_targets(dict(event, **{"id": str(mock_random.uuid4()), "replay-name": self.name}),
                                         transform_input=False)
        self.state = ReplayState.COMPLETED
        self.end_time = unix_time()

    _patch(Replay, "replay_events", replay_events_as_aws)


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

    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service import (
        StateTaskService,
    )

    eval_execution = StateTaskService._eval_execution

    def eval_execution_as_role(self: Any, env: Any) -> None:
        # Each task runs on a thread of its own: the execution's role is read from its context object there.
        with resource_policy.acting_as(env.states.context_object.context_object_data["Execution"].get("RoleArn")):
            eval_execution(self, env)

    _patch(StateTaskService, "_eval_execution", eval_execution_as_role)

    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    start_execution = StepFunctionsParserBackend.start_execution

    def start_execution_named(self: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any) -> Any:
        # AWS names an execution started without a name with a UUID; moto names it "None" (every such one the same).
        return start_execution(self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)

    _patch(StepFunctionsParserBackend, "start_execution", start_execution_named)

    from moto.core.exceptions import AWSError
    from moto.stepfunctions.parser import api as parser_api

    # The parser's errors name their code in ``code`` (as LocalStack's do); moto's error type reads ``TYPE``, so a
    # client got ``"__type": null``: an InvalidExecutionInput with an empty error code.
    for error in list(vars(parser_api).values()):
        if (isinstance(error, type) and issubclass(error, AWSError) and error.TYPE is None
                and isinstance(error.__dict__.get("code"), str)):
            _patch(error, "TYPE", error.__dict__["code"])

    send_task_success = StepFunctionsParserBackend.send_task_success
    send_task_failure = StepFunctionsParserBackend.send_task_failure
    send_task_heartbeat = StepFunctionsParserBackend.send_task_heartbeat

    def _task_closed() -> Exception:
        return parser_api.TaskTimedOut("Task Timed Out: 'Provided task does not exist anymore'")

    def closed_tasks_time_out(answer: Callable[..., Any], closes: bool = True) -> Callable[..., Any]:
        # A token the interpreter issued whose task is closed (answered, or its execution ended) is TaskTimedOut in
        # AWS ("already been closed"). moto answered InvalidToken, as for a token it never issued, or, for a
        # failure sent after a success, took it again.
        def answered(self: Any, task_token: str, *args: Any, **kwargs: Any) -> Any:
            if task_token in ANSWERED_TASK_TOKENS:
                raise _task_closed()
            try:
                result = answer(self, task_token, *args, **kwargs)
            except parser_api.InvalidToken:
                if task_token in ISSUED_TASK_TOKENS:
                    raise _task_closed() from None
                raise
            if closes:
                ANSWERED_TASK_TOKENS.add(task_token)
            return result
        return answered

    def send_task_success_checked(self: Any, task_token: str, outcome: str) -> Any:
        # AWS refuses an output that is not JSON (InvalidOutput) and the task goes on waiting; moto handed it to the
        # execution, which then failed in the state reading it.
        try:
            json.loads(outcome)
        except (TypeError, ValueError) as error:
            raise parser_api.InvalidOutput(f"Invalid Output: '{error}'") from None
        return send_task_success(self, task_token, outcome)

    _patch(StepFunctionsParserBackend, "send_task_success", closed_tasks_time_out(send_task_success_checked))
    _patch(StepFunctionsParserBackend, "send_task_failure", closed_tasks_time_out(send_task_failure))
    _patch(StepFunctionsParserBackend, "send_task_heartbeat", closed_tasks_time_out(send_task_heartbeat, closes=False))

    from moto.stepfunctions.parser.asl.eval.states import ContextObject

    update_task_token = ContextObject.update_task_token

    def update_task_token_kept(self: Any) -> str:
        token = update_task_token(self)
        ISSUED_TASK_TOKENS.add(token)
        return str(token)

    _patch(ContextObject, "update_task_token", update_task_token_kept)

    from moto.core.responses import ActionResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def get_execution_history_paged(self: Any) -> Any:
        # moto answered every event, oldest first, whatever the request asked: AWS pages them (maxResults, default
        # 100; 0 means the default), newest first with reverseOrder, and hands a nextToken for the rest.
        events = list(self.stepfunction_backend.get_execution_history(self._get_param("executionArn"))["events"])
        if self._get_param("reverseOrder"):
            events.reverse()
        size = self._get_int_param("maxResults") or HISTORY_PAGE
        token = self._get_param("nextToken")
        if token is not None and not str(token).isdigit():
            raise parser_api.InvalidToken()
        start = int(token or 0)
        answer: dict[str, Any] = {"events": events[start:start + size]}
        if start + size < len(events):
            answer["nextToken"] = str(start + size)
        return ActionResult(answer)

    _patch(StepFunctionResponse, "get_execution_history", get_execution_history_paged)
    from moto.stepfunctions.parser import models as parser_models

    # moto deep-copies the state machine at every StartExecution as the execution's snapshot of its
    # definition: a copy per execution (memory for as long as the execution is kept, and CPU at each
    # start). One snapshot per revision is the same snapshot: an execution never changes it.
    _patch(parser_models, "copy", SnapshotPerRevision())
    _patch(BaseExecutionWorkerCommunication, "terminated", terminated_and_notify)
    _patch(AmazonStateLanguageParser, "parse", staticmethod(parse_once))
    # The defining module, for what is imported later, and each service module that imported it already.
    services = "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_"
    using = [sys.modules.get(services + name) for name in CLIENT_USING_SERVICES]
    for module in [boto_client, lambda_eval_utils, *[module for module in using if module is not None]]:
        _patch(module, "boto_client_for", cached_client_for)


def _patch_state_threads() -> None:
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import TimeoutSeconds
    from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task import StateTask

    evaluate_with_timeout = ExecutionState._evaluate_with_timeout

    def evaluate_on_this_thread(self: Any, env: Any) -> None:
        # moto runs the work of every Task, Parallel and Map state on a thread of its own, so as to stop waiting for
        # it once the state's timeout has passed: a thread started and a wake-up per state (about 4 per event in a
        # burst). A state with no timeout of its own waits 99,999,999 s, that is to the end of its work whatever
        # happens: it runs here instead, on the execution's thread, with the same frame, result and errors.
        timeout = self.timeout
        if type(timeout) is not TimeoutSeconds or timeout.timeout_seconds != TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS:
            evaluate_with_timeout(self, env)
            return
        timeout.eval(env=env)
        env.stack.pop()
        frame = env.open_frame()
        frame.states.reset(input_value=state_input(env))  # reset copies it: moto's get_input() copied it first too
        # A Task's work only reads the state's input (what its parameters select is copied), so its frame shares
        # the items; a Parallel or Map state's gets its own copy, as moto made for every state.
        frame.stack = list(env.stack) if isinstance(self, StateTask) else copy_json(env.stack)
        outputs: list[Any] = []
        failure: Exception | None = None
        try:
            self._eval_execution(frame)
            outputs.extend(frame.stack)
        except Exception as error:  # raised once the frame is closed, as moto's thread hands it back
            failure = error
        frame.set_ended()
        env.close_frame(frame)
        if failure is not None:
            raise failure
        output = outputs.pop()
        env.stack.append(output)
        if not self._is_language_query_jsonpath():
            env.states.set_result(output)
        if self.assign_decl:
            self.assign_decl.eval(env=env)
        if self.result_selector:
            self.result_selector.eval(env=env)
        if self.result_path:
            self.result_path.eval(env)
        else:
            env.states.reset(input_value=env.stack.pop())

    _patch(ExecutionState, "_evaluate_with_timeout", evaluate_on_this_thread)


# Values a JSON copy shares instead of copying: immutable, as deepcopy itself returns them.
_SHARED_AS_IS = frozenset({str, int, float, bool, type(None), bytes, datetime.datetime, datetime.date})
FLAT_LIST_MIN = 32  # below it, checking every item's type first costs more than copying item by item


def state_input(env: Any) -> Any:
    """A state's input as moto's ``States.get_input()`` returns it, without its deep copy: for readers that
    neither keep nor change it (writing it out as JSON, or a ``reset`` that copies it again)."""
    return env.states._states_data["input"]


def copy_json(value: Any, memo: Any = None) -> Any:
    """A deep copy of a JSON value (dicts, lists, immutable scalars); anything else via ``copy.deepcopy``.

    The same result as ``copy.deepcopy`` for the data Step Functions passes between states (which
    JSON parsing made, so no value in it is shared by two containers or contains itself), without
    deepcopy's per-object memo and dispatch. A ``dict`` or ``list`` subclass is not plain JSON: it is
    deep-copied as before.
    """
    kind = type(value)
    if kind in _SHARED_AS_IS:
        return value
    if kind is dict:
        return {key: item if type(item) in _SHARED_AS_IS else copy_json(item) for key, item in value.items()}
    if kind is list:
        # A long list of numbers (an embedding, an image's pixels): one pass over the item types in C, then a
        # shallow copy, which is a deep one when every item is immutable. Measured: 1.5x faster from 32 items.
        if len(value) >= FLAT_LIST_MIN and type(value[0]) in _SHARED_AS_IS and set(map(type, value)) <= _SHARED_AS_IS:
            return value.copy()
        return [item if type(item) in _SHARED_AS_IS else copy_json(item) for item in value]
    import copy

    return copy.deepcopy(value, memo)


class JsonValueCopy:
    """What a module of moto's Step Functions interpreter sees as ``copy``: :func:`copy_json` as its deepcopy."""

    deepcopy = staticmethod(copy_json)


# The interpreter's modules that deep-copy state data (each does ``import copy`` and calls ``copy.deepcopy``).
_ASL = "moto.stepfunctions.parser.asl."
STATE_DATA_COPIERS = tuple(_ASL + name for name in (
    "eval.states", "eval.environment", "eval.event.event_manager", "component.common.string.string_expression",
    "component.common.path.result_path", "component.state.exec.execute_state",
    "component.state.exec.state_parallel.state_parallel", "component.state.exec.state_map.state_map",
    "component.state.exec.state_task.service.state_task_service",
    "component.intrinsic.function.statesfunction.json_manipulation.json_merge"))


def _patch_state_data_copies() -> None:
    import importlib

    from moto.stepfunctions.parser.api import (HistoryEventExecutionDataDetails, StateEnteredEventDetails,
                                               StateExitedEventDetails)
    from moto.stepfunctions.parser.asl.component.state.state import CommonStateField
    from moto.stepfunctions.parser.asl.utils.encoding import to_json_str

    for name in STATE_DATA_COPIERS:
        _patch(importlib.import_module(name), "copy", JsonValueCopy)

    # A state's entered and exited history events wrote out a deep copy of its input: the same text from the input.
    def entered_details(self: Any, env: Any) -> Any:
        return StateEnteredEventDetails(name=self.name, input=to_json_str(state_input(env), separators=(",", ":")),
                                        inputDetails=HistoryEventExecutionDataDetails(truncated=False))

    def exited_details(self: Any, env: Any) -> Any:
        details = StateExitedEventDetails(name=self.name, output=to_json_str(state_input(env), separators=(",", ":")),
                                          outputDetails=HistoryEventExecutionDataDetails(truncated=False))
        assigned_variables = env.variable_store.get_assigned_variables()
        env.variable_store.reset_tracing()
        if assigned_variables:
            details["assignedVariables"] = assigned_variables
            details["assignedVariablesDetails"] = {"truncated": False}
        return details

    _patch(CommonStateField, "_get_state_entered_event_details", entered_details)
    _patch(CommonStateField, "_get_state_exited_event_details", exited_details)


class SnapshotPerRevision:
    """What moto's Step Functions module sees as ``copy``: one deep copy per state machine revision.

    The key is the machine and what an update changes (its definition, role, update date); the
    copy's memo is moto's (its executions left out, its backend shared).
    """

    def __init__(self) -> None:
        self.snapshots: dict[int, tuple[tuple[Any, ...], Any]] = {}
        self.lock = threading.Lock()

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        import copy

        revision = (getattr(value, "definition", None), getattr(value, "roleArn", None),
                    getattr(value, "update_date", None), getattr(value, "revision_id", None))
        with self.lock:
            kept = self.snapshots.get(id(value))
            if kept is not None and kept[0] == revision:
                return kept[1]
            snapshot = copy.deepcopy(value, memo)
            self.snapshots[id(value)] = (revision, snapshot)  # a deleted machine's id may return: keyed by revision too
            return snapshot


# AWS deletes an item whose TTL attribute is a Number of epoch seconds in the past, but not one more
# than five years in the past (taken for milliseconds or a mistake).
TTL_IGNORED_AFTER_S = 5 * 365 * 86_400


def expire_items(now_s: float | None = None) -> int:
    """Delete every DynamoDB item whose time to live has passed, as DynamoDB's TTL does; return how many.

    moto records a table's TTL setting and never deletes an item by it, so claims and idempotency
    records stayed for as long as the process lived. DynamoDB deletes expired items in the
    background "within a few days"; the runtime calls this every :data:`TTL_SWEEP_S` s. As in AWS,
    an expired item not yet deleted is still read, a non-Number attribute or one more than five
    years past is never expired, and a table with TTL disabled keeps everything.
    """
    from moto.dynamodb.models import dynamodb_backends

    now = time.time() if now_s is None else now_s
    deleted = 0
    with SERVICE_LOCKS["dynamodb"]:
        for regions in dynamodb_backends.values():
            for backend in regions.values():
                for table in list(backend.tables.values()):
                    ttl = getattr(table, "ttl", {}) or {}
                    attribute = ttl.get("AttributeName")
                    if ttl.get("TimeToLiveStatus") != "ENABLED" or not attribute:
                        continue
                    for hash_value, held in list(table.items.items()):
                        items = list(held.items()) if table.has_range_key else [(None, held)]
                        for range_value, item in items:
                            if _expired(item, attribute, now):
                                table.delete_item(hash_value, range_value)
                                deleted += 1
    return deleted


def _expired(item: Any, attribute: str, now: float) -> bool:
    value = item.attrs.get(attribute)
    if value is None or value.type != "N":
        return False
    try:
        expires = float(value.value)
    except (TypeError, ValueError):
        return False
    return now - TTL_IGNORED_AFTER_S <= expires < now


class WeakTracked:
    """A model class's ``instances_tracked`` that does not keep its instances alive.

    moto appends every instance of every model (``BaseModel``) to its class's list and never
    removes one, for its ``/moto-api/data.json`` and S3's reset: every DynamoDB item written
    (each put, update and transaction makes new ones), every Step Functions execution with its
    history and its machine's copy, for the life of the process. Here the list holds weak
    references: what the backends still hold is listed, what they let go of is freed.
    """

    def __init__(self, instances: Iterable[Any] = ()) -> None:
        self.refs: list[Callable[[], Any]] = []
        self.pruned_at = 64
        for instance in instances:
            self.append(instance)

    def append(self, instance: Any) -> None:
        try:
            self.refs.append(weakref.ref(instance))
        except TypeError:  # a class without weak references: kept, as moto keeps it
            self.refs.append(lambda kept=instance: kept)
        if len(self.refs) >= 2 * self.pruned_at:
            self.refs = [ref for ref in self.refs if ref() is not None]
            self.pruned_at = max(64, len(self.refs))

    def __iter__(self) -> Iterator[Any]:
        return iter([instance for ref in list(self.refs) if (instance := ref()) is not None])

    def __len__(self) -> int:
        return sum(1 for ref in list(self.refs) if ref() is not None)


def _patch_model_tracking() -> None:
    from moto.core.common_models import BaseModel

    def tracked_weakly(cls: Any, *args: Any, **kwargs: Any) -> Any:
        instance = object.__new__(cls)
        tracked = cls.__dict__.get("instances_tracked")
        if not isinstance(tracked, WeakTracked):  # moto's reset puts a plain list back
            tracked = WeakTracked(tracked or ())
            cls.instances_tracked = tracked
        tracked.append(instance)
        return instance

    _patch(BaseModel, "__new__", staticmethod(tracked_weakly))


def _patch_dynamodb() -> None:
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    class OneCopyPerTable:  # what moto's module sees as ``copy`` during one request on a table with a stream
        def __init__(self) -> None:
            self.tables: dict[int, Any] = {}

        def deepcopy(self, value: Any, memo: Any = None) -> Any:
            if not isinstance(value, Table):
                return copy.deepcopy(value, memo)
            if id(value) not in self.tables:  # the table stays in the backend: its id is not reused
                self.tables[id(value)] = copy.deepcopy(value)
            return self.tables[id(value)]

    class LiveTables:  # what moto's module sees as ``copy`` when the undo log rolls back: its "backup" is the table
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    transact_write_items = models.DynamoDBBackend.transact_write_items

    def undo_logged(backend: Any, transact_items: Any) -> Any:
        with SERVICE_LOCKS["dynamodb"]:
            undo = _undo_log(backend, transact_items)
            models.copy = OneCopyPerTable() if undo is None else LiveTables()  # type: ignore[assignment]
            try:
                return transact_write_items(backend, transact_items)
            except Exception:
                for table, hash_value, range_value, before in reversed(undo or []):
                    _put_back(table, hash_value, range_value, before)
                raise
            finally:
                models.copy = copy

    _patch(models.DynamoDBBackend, "transact_write_items", undo_logged)


def _patch_condition_expressions() -> None:
    from collections import deque

    from moto.dynamodb.comparisons import ConditionExpressionParser
    from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords

    lex = ConditionExpressionParser._lex_condition_expression

    @functools.lru_cache(maxsize=256)
    def lexed(expression: str) -> tuple[Any, ...]:
        return tuple(lex(ConditionExpressionParser(expression, None, None)))

    def lexed_once(self: Any) -> Any:
        # moto lexes a condition expression (compiling six regular expressions per token) at every parse, twice per
        # conditional PutItem (once to validate, once to write) and once per item of a TransactWriteItems: about half
        # of a parse's time. The tokens depend on the text alone and are immutable; each parse consumes its own deque.
        return deque(lexed(self.condition_expression))

    _patch(ConditionExpressionParser, "_lex_condition_expression", lexed_once)
    # moto looks each attribute name up in a list of DynamoDB's 573 reserved words; every reader tests membership.
    _patch(ReservedKeywords, "KEYWORDS", frozenset(ReservedKeywords._get_reserved_keywords()))  # the loader; no cache set


UndoEntry = tuple[Any, Any, Any, Any]  # (table, hash key, range key or None, the item before, or None)


def _undo_log(backend: Any, transact_items: list[dict[str, Any]]) -> list[UndoEntry] | None:
    """A copy of each item the transaction may write, taken before it runs (None: back up whole tables,
    as moto does: a table has a stream, whose records a rollback of the whole table takes back too)."""
    import copy

    from moto.dynamodb.models.dynamo_type import DynamoType

    undo: list[UndoEntry] = []
    for request in transact_items:
        if len(request) != 1:
            continue  # moto refuses it before it writes anything
        op_type, op = next(iter(request.items()))
        table = backend.tables.get(op.get("TableName")) if isinstance(op, dict) else None
        if table is None:
            continue
        if table.stream_shard is not None:
            return None
        key = op.get("Item" if op_type == "Put" else "Key") or {}
        if table.hash_key_attr not in key or (table.range_key_attr is not None and table.range_key_attr not in key):
            continue  # refused before anything is written
        try:
            hash_value = DynamoType(key[table.hash_key_attr])
            range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr is not None else None
        except (AttributeError, TypeError, ValueError, IndexError):
            return None  # a key moto will refuse: let it, with the whole-table backup
        undo.append((table, hash_value, range_value, copy.deepcopy(table.get_item(hash_value, range_value))))
    return undo


def _put_back(table: Any, hash_value: Any, range_value: Any, before: Any) -> None:
    items = table.items[hash_value] if range_value is not None else table.items
    key = range_value if range_value is not None else hash_value
    if before is None:
        items.pop(key, None)
    else:
        items[key] = before


def _patch_jsonpath() -> None:
    import jsonpath_ng.ext
    from moto.stepfunctions.parser.asl.utils import json_path

    parse = functools.lru_cache(maxsize=1024)(jsonpath_ng.ext.parse)
    _patch(jsonpath_ng.ext, "parse", parse)  # EventBridge's input templates import it at each call
    _patch(json_path, "parse", parse)  # Step Functions' paths imported it once
    from moto.stepfunctions.parser.asl.component.common.path import result_path

    # A ResultPath built jsonpath_ng's parser (a yacc table) for every state it ran: 5 % of serve's CPU in a burst.
    _patch(result_path, "parse", functools.lru_cache(maxsize=1024)(result_path.parse))
    _patch(result_path.ResultPath, "_eval_body", result_path_by_fields(result_path.ResultPath._eval_body))


@functools.lru_cache(maxsize=1024)
def field_chain(path: str) -> tuple[str, ...] | None:
    """The field names of a ResultPath that names only fields (``$``, ``$.a``, ``$.a.b``), as jsonpath_ng
    parses it; ``None`` for any other path (an index, a wildcard, a filter).

    >>> field_chain("$.tokens.words"), field_chain("$"), field_chain("$.items[0]"), field_chain("$.*")
    (('tokens', 'words'), (), None, None)
    """
    from jsonpath_ng import parse
    from jsonpath_ng.jsonpath import Child, Fields, Root

    names: list[str] = []
    node = parse(path)
    while type(node) is Child:
        field = node.right
        if type(field) is not Fields or len(field.fields) != 1 or field.fields[0] == "*":
            return None
        names.append(field.fields[0])
        node = node.left
    return tuple(reversed(names)) if type(node) is Root else None


def result_path_by_fields(evaluate: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """moto's ``ResultPath`` evaluation, with the common case (a path of field names into objects) done directly.

    jsonpath_ng's ``update_or_create`` sets the field, creating missing objects on the way, then walks the
    whole state to take out its placeholders for lists it may have created, item by item (an image's pixels
    at every Task). A path of fields creates no list, so the walk finds nothing: here the field is set
    without it. Any other path, or one that meets a value other than an object on the way (jsonpath_ng
    then leaves the input as it was), goes to moto's evaluation.
    """

    def by_fields(self: Any, env: Any) -> None:
        names = field_chain(self.result_path_src) if self.result_path_src is not None else None
        if names is None or not _objects_along(state_input(env), names):
            evaluate(self, env)
            return
        state = env.states.get_input()  # moto's own copy of the input, which the output becomes
        result = copy_json(env.stack.pop())
        if not names:
            env.stack.append(result)
            return
        target = state
        for name in names[:-1]:
            target = target.setdefault(name, {})
        target[names[-1]] = result
        env.stack.append(state)

    return by_fields


def _objects_along(state: Any, names: tuple[str, ...]) -> bool:
    """Whether every value on the path's way to its last field is an object or missing (then made one)."""
    for name in names[:-1]:
        if type(state) is not dict:
            return False
        state = state.get(name, {})
    return type(state) is dict or not names


UNIX_EPOCH = datetime.datetime(1970, 1, 1)  # naive, as moto's utcfromtimestamp(0)


def unix_time(dt: datetime.datetime | None = None) -> float:
    """moto's ``unix_time``: seconds since the epoch of ``dt``, or of now, without building a ``datetime`` for now.

    Now is the clock floored to the microsecond (what ``datetime.now`` gives), in moto's own arithmetic
    (whole days, then seconds and microseconds), so the float is the one moto computed.
    """
    if dt:
        delta = dt - UNIX_EPOCH
        days, seconds, micro = delta.days, delta.seconds, delta.microseconds
    else:
        days, seconds = divmod(time.time_ns() // 1000, 86_400_000_000)
        seconds, micro = divmod(seconds, 1_000_000)
    return (days * 86_400) + (seconds + (micro / 1e6))


def _patch_response_keys() -> None:
    from moto.core.serialize import AttributePicker, XFormedAttributePicker

    for picker in (AttributePicker, XFormedAttributePicker):
        _patch(picker, "get_possible_keys", PossibleKeysOnce(picker.__dict__["get_possible_keys"]))


class PossibleKeysOnce:
    """moto's ``get_possible_keys`` of a response serializer's attribute picker, each answer kept.

    To write each member of an answer, moto asks six alias providers which attribute names of the
    object may hold it, building each provider and the name's snake_case form every time: a tenth of
    a request's time in ``inferbus serve``, for an answer that depends only on the picker, the
    object's class, the member's name and its shape (with the structure moto hangs it under). An
    object with a ``Meta`` of its own, or a class that makes attributes up (``__getattr__``), is
    asked every time as before.
    """

    LIMIT = 20_000  # distinct (picker, class, member, shape) seen: the models moto answers with are finite

    def __init__(self, original: Callable[..., Any]) -> None:
        self.original = original
        self.kept: dict[tuple[Any, ...], tuple[str, ...]] = {}

    def __get__(self, picker: Any, owner: type | None = None) -> Any:
        return self if picker is None else functools.partial(self, picker)

    def __call__(self, picker: Any, context: Any) -> Any:
        obj, shape = context.obj, context.shape
        kind = type(obj)
        if hasattr(kind, "__getattr__") or "Meta" in getattr(obj, "__dict__", ()):
            return self.original(picker, context)
        key = (type(picker), tuple(picker.alias_providers), kind, obj.__class__, context.key, shape,
               getattr(shape, "parent", None))
        keys = self.kept.get(key)
        if keys is None:
            keys = tuple(self.original(picker, context))
            if len(self.kept) >= self.LIMIT:
                self.kept.clear()
            self.kept[key] = keys
        return keys


def _patch_clock() -> None:
    from moto.core import utils

    original = utils.unix_time
    # The modules that read the clock and are loaded by now (a module loaded later reads moto's, as correct),
    # and moto's own module, where unix_time_millis reads it.
    for name, module in list(sys.modules.items()):
        if (name == "moto" or name.startswith("moto.")) and getattr(module, "unix_time", None) is original:
            _patch(module, "unix_time", unix_time)


# moto.batch's plain modules that its Step Functions parser imports; neither imports anything of moto.batch's package.
BATCH_MODULES_ALONE = ("exceptions", "utils")


def load_batch_utils_alone() -> None:
    """Load ``moto.batch.utils`` (and the exceptions it imports) without running ``moto.batch``'s package.

    moto's Step Functions parser imports ``moto.batch.utils`` for one enum (``JobStatus``, of its Batch
    task). Importing it ran ``moto/batch/__init__``, which imports ``moto.batch.models`` and so ``moto.ec2``,
    whose region table loads EC2's service model as it is imported: 1.2 s of every start of the twin, for
    a service the kit never calls. The two modules are loaded from moto's own files under their own names,
    so the parser finds them; a later ``import moto.batch`` (a template with Batch) runs the package as
    before and reuses them. Idempotent; a no-op once ``moto.batch`` is imported.
    """
    import importlib.util

    import moto

    if "moto.batch" in sys.modules:
        return
    folder = os.path.join(os.path.dirname(moto.__file__), "batch")
    for name in BATCH_MODULES_ALONE:
        qualified = f"moto.batch.{name}"
        if qualified in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(qualified, os.path.join(folder, f"{name}.py"))
        if spec is None or spec.loader is None:
            return  # moto moved them: importing the parser then runs the package, as moto does
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[qualified]
            raise


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
    MATCHED_EVENTS.clear()
    load_batch_utils_alone()
    _patch_requests()
    _patch_model_tracking()
    _patch_sqs()
    _patch_events()
    _patch_replays()
    _patch_stepfunctions()
    _patch_state_data_copies()
    _patch_state_threads()
    _patch_dynamodb()
    _patch_condition_expressions()
    _patch_jsonpath()
    _patch_clock()
    _patch_response_keys()
    _patch_lambda_invoke()


def _patch_lambda_invoke() -> None:
    from moto.awslambda.responses import LambdaResponse

    invoke = LambdaResponse.invoke

    def invoke_local(self: Any) -> Any:
        # moto keeps no code of the template's functions (they run in-process): an Invoke that reaches moto (a
        # real client of the twin's endpoint, or another session's client) runs them as the adapter does.
        answered = None
        if HOOKS.invoke is not None:
            function = self.path.rsplit("/", 2)[-2]
            answered = HOOKS.invoke(function, self.headers.get("X-Amz-Invocation-Type") or "RequestResponse",
                                    self.body if isinstance(self.body, bytes) else (self.body or "").encode())
        if answered is None:
            return invoke(self)
        status, headers, body = answered
        return status, {**headers, "status": str(status)}, body  # moto's server takes the status from this header

    _patch(LambdaResponse, "invoke", invoke_local)


def uninstall() -> None:
    """Undo every patch, in reverse order."""
    while HOOKS._saved:
        owner, name, original = HOOKS._saved.pop()
        if original is ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, original)
    HOOKS.changed = HOOKS.deliver = HOOKS.invoke = None


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


def running_execution_events() -> dict[str, list[dict[str, Any]]]:
    """Every running execution's history events as moto keeps them, by ARN, in one pass and not copied: to read only.

    For the wait for quiescence, which looks at every running execution whenever something moves: moto's own
    read (``EventManager.get_event_history``) deep-copies the whole history, and looking an ARN up scans every
    execution, so that wait cost the square of the executions running, on the caller's thread (a sixth of the
    demo's main-thread samples). Events are appended, never changed, so a copy of the list under moto's lock
    is a consistent view.
    """
    found: dict[str, list[dict[str, Any]]] = {}
    for execution in _parser_executions():
        if execution.exec_status is None or execution.exec_status.value != "RUNNING":
            continue
        manager = _event_manager(execution)
        if manager is None:
            found[execution.exec_arn] = []
            continue
        with manager._mutex:
            found[execution.exec_arn] = list(manager._history_event_list)
    return found


def _event_manager(execution: Any) -> Any:
    """Where moto keeps an execution's history (None before its worker has an environment)."""
    worker = execution.exec_worker
    env = worker.env if worker is not None else None
    return env.event_manager if env is not None else None


def execution_history(arn: str) -> list[dict[str, Any]] | None:
    """An execution's history events, as boto3's ``get_execution_history`` gives them (None if unknown)."""
    for execution in _parser_executions():
        if execution.exec_arn == arn:
            manager = _event_manager(execution)
            events = list(manager.get_event_history()) if manager is not None else []
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


def matched_events(rule_arn: str) -> int:
    """How many events a rule has matched since the runtime was installed (its MatchedEvents)."""
    return MATCHED_EVENTS[rule_arn]

def forget_finished_executions(keep: int, may_forget: Callable[[str], bool] = lambda arn: True) -> list[str]:
    """Keep each state machine's running executions, its last ``keep`` finished ones and those ``may_forget``
    refuses (by ARN: their end not told yet); forget the rest.

    moto keeps every execution it ran, with its history, for as long as the process lives (and scans
    them all to start, list or answer a task token), and every worker thread it started; a
    long-running endpoint keeps a window instead, and only the threads still running.
    Returns the ARNs of those forgotten.
    """
    from moto.stepfunctions.parser import utils
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    # moto appends every worker thread an execution starts (one per execution, per Parallel branch,
    # per task-token wait) to this module-level list and never removes one: each ended thread kept its
    # objects (about 6 threads and 20 KB per execution). Nothing reads the list.
    utils.TMP_THREADS[:] = [thread for thread in list(utils.TMP_THREADS) if thread.is_alive()]
    forgotten: list[str] = []
    with REQUEST_LOCK:  # a StartExecution appends under it
        for regions in stepfunctions_parser_backends.values():
            for backend in regions.values():
                for machine in list(backend.state_machines):
                    executions = getattr(machine, "executions", None)
                    if not executions:
                        continue
                    finished = [e for e in executions if e.exec_status is not None and e.exec_status.value != "RUNNING"
                                and may_forget(e.exec_arn)]
                    gone = {id(e): e.exec_arn for e in finished[: max(0, len(finished) - keep)]}
                    if gone:
                        executions[:] = [e for e in executions if id(e) not in gone]
                        forgotten.extend(gone.values())
    return forgotten


def forget_old_events(keep: int, archived_after_s: float | None = None, deleted_before: float | None = None) -> int:
    """Keep the last ``keep`` events of each bus archive and receipt handles of each queue's deleted messages.

    moto keeps both without end (an archive its events for replays, as AWS does for its retention
    days; a queue its deleted messages' handles, so that a second delete succeeds). With
    ``archived_after_s`` (epoch seconds) an archive also forgets the events before it, oldest first
    (by their ``time``, what a replay selects on; the archive is in arrival order, so it stops at the
    first event in the window); with ``deleted_before`` (``time.monotonic()``) a queue also forgets the
    handles of messages deleted before it (a second delete after that is refused, as AWS refuses an
    expired handle). Returns how many archived events were forgotten.
    """
    from moto.events.models import events_backends
    from moto.sqs.models import sqs_backends

    forgotten = 0
    with REQUEST_LOCK:
        for regions in events_backends.values():
            for backend in regions.values():
                for archive in backend.archives.values():
                    excess = max(len(archive.events) - keep, 0)
                    if archived_after_s is not None:
                        while excess < len(archive.events) and \
                                _epoch(archive.events[excess].get("time", 0)) < archived_after_s:
                            excess += 1
                    if excess > 0:
                        del archive.events[:excess]
                        forgotten += excess
        for regions in sqs_backends.values():
            for backend in regions.values():
                for queue in backend.queues.values():
                    if not isinstance(queue.deleted_messages, RecentSet):
                        queue.deleted_messages = RecentSet(queue.deleted_messages, keep=keep)
                    if deleted_before is not None:
                        queue.deleted_messages.forget_before(deleted_before)
    return forgotten


def _sqs_backend(queue_arn: str) -> tuple[Any, str]:
    """The SQS backend that holds a queue, and the queue's name."""
    from moto.sqs.models import sqs_backends

    _, _, _, region, account, name = queue_arn.split(":", 5)
    return sqs_backends[account][region], name


def _queue(queue_arn: str) -> Any:
    backend, name = _sqs_backend(queue_arn)
    return backend.queues.get(name)


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
    return queue is not None and any(True for _ in _receivable_now(list(queue._messages)))


def _receivable_now(messages: Iterable[Any]) -> Iterator[Any]:
    """The messages that are visible and not delayed, as moto's ``Message.visible`` and ``delayed`` decide, with the
    clock read once: those properties read it (a datetime subtraction) twice per message, which a poller's check of
    a queue with many messages in flight made a few per cent of serve's CPU. The clock is ``time.time``: moto's
    ``unix_time_millis`` reads the same one through a datetime and its subtraction from the epoch, itself 1.5 % of
    serve's samples under a burst (each poller looks at its queue whenever anything moves)."""
    now = time.time() * 1000.0
    return (message for message in messages if now > message.visible_at and not now < message.delayed_until)


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


def hidden_on_purpose(queue_arn: str, receipt_handles: list[str]) -> set[str]:
    """Of ``receipt_handles``, those whose message was hidden for a while by a ``ChangeMessageVisibility``
    with that very handle (a consumer's backoff during that receipt), without a request."""
    queue = _queue(queue_arn)
    if queue is None:
        return set()
    index = _index(queue)
    return {handle for handle in receipt_handles
            if (message := index.by_handle.get(handle)) is not None and message.__dict__.get(HIDDEN_WITH) == handle}


# What ReceiveMessage with AttributeNames=["All"] returns of every message, and of one that has them.
_RECEIVED_ATTRIBUTES = (("SenderId", "sender_id"), ("SentTimestamp", "sent_timestamp"),
                        ("ApproximateReceiveCount", "approximate_receive_count"),
                        ("ApproximateFirstReceiveTimestamp", "approximate_first_receive_timestamp"))
_RECEIVED_IF_SET = (("MessageDeduplicationId", "deduplication_id"), ("MessageGroupId", "group_id"))


def receive_in_process(queue_arn: str, count: int) -> list[dict[str, Any]]:
    """``ReceiveMessage`` of up to ``count`` messages with every attribute and message attribute, without a request.

    The same receive as the API's (moto's backend applies the queue's visibility timeout, its redrive
    policy and FIFO's message groups), answered as botocore parses moto's response to
    ``AttributeNames=["All"], MessageAttributeNames=["All"]``, under the lock every request holds. For
    Lambda's poller of an event source, which is AWS's own and not a caller of the SQS API: its receives
    went through botocore and moto's HTTP layer, a quarter of the server's CPU for events routed to a queue.

    Raises
    ------
    botocore.exceptions.ClientError
        ``AWS.SimpleQueueService.NonExistentQueue`` for a queue that no longer exists, as the API answers.
    """
    backend, name = _sqs_backend(queue_arn)
    with SERVICE_LOCKS.get("sqs", REQUEST_LOCK):  # the lock an SQS request holds
        queue = backend.queues.get(name)
        if queue is None:
            raise _no_such_queue("ReceiveMessage")
        messages = backend.receive_message(name, count, 0, queue.visibility_timeout, ["All"])
        return [_as_received(message) for message in messages]


def start_execution_in_process(state_machine_arn: str, name: str, execution_input: str) -> str:
    """``StartExecution`` without a request; returns the execution's ARN.

    For EventBridge delivering to a state machine target, which is AWS's own and not a caller of the
    Step Functions API: the same backend call as the API's (name idempotency, the input's JSON check,
    a snapshot of the machine), under the lock a Step Functions request holds. Its requests went through
    botocore and moto's HTTP-shaped dispatch, four fifths of the cost of each start.

    Raises
    ------
    botocore.exceptions.ClientError
        With the code and message the API answers (``ExecutionAlreadyExists``, ``StateMachineDoesNotExist``,
        ``InvalidExecutionInput``, ``InvalidArn``...).
    """
    from botocore.exceptions import ClientError
    from moto.core.exceptions import JsonRESTError
    from moto.stepfunctions.responses import get_backend

    parts = state_machine_arn.split(":")
    if len(parts) < 7 or parts[5] != "stateMachine":
        raise ClientError({"Error": {"Code": "InvalidArn", "Message": f"Invalid Arn: '{state_machine_arn}'"}},
                          "StartExecution")
    with SERVICE_LOCKS.get("stepfunctions", REQUEST_LOCK):  # the lock a Step Functions request holds
        try:
            execution = get_backend(parts[4], parts[3]).start_execution(state_machine_arn, name, execution_input)
        except JsonRESTError as error:  # moto's parser errors lose their code (the API answers ""): the class names it
            raise ClientError({"Error": {"Code": error.error_type or type(error).__name__, "Message": error.message}},
                              "StartExecution") from None
    return execution.execution_arn


def _as_received(message: Any) -> dict[str, Any]:
    received: dict[str, Any] = {"MessageId": message.id, "ReceiptHandle": message.receipt_handle,
                                "MD5OfBody": message.body_md5, "Body": message.body}
    if message.message_attributes:
        received["MessageAttributes"] = message.message_attributes
        received["MD5OfMessageAttributes"] = message.attribute_md5
    attributes = {key: str(getattr(message, name)) for key, name in _RECEIVED_ATTRIBUTES}
    attributes |= {key: value for key, name in _RECEIVED_IF_SET if (value := getattr(message, name)) is not None}
    if trace := (message.system_attributes or {}).get("AWSTraceHeader", {}).get("StringValue"):
        attributes["AWSTraceHeader"] = trace
    if message.sequence_number is not None:
        attributes["SequenceNumber"] = message.sequence_number
    received["Attributes"] = attributes
    return received


def delete_in_process(queue_arn: str, receipt_handles: Iterable[str]) -> None:
    """Delete received messages by their handles without a request, as ``DeleteMessageBatch`` does.

    A handle that no longer deletes anything (its message moved to a dead-letter queue, or the queue
    was purged) is left out, as that request's ``Failed`` entries are.
    """
    from moto.sqs.exceptions import ReceiptHandleIsInvalid

    backend, name = _sqs_backend(queue_arn)
    with SERVICE_LOCKS.get("sqs", REQUEST_LOCK):
        if name not in backend.queues:
            raise _no_such_queue("DeleteMessageBatch")
        for handle in receipt_handles:
            try:
                backend.delete_message(name, handle)
            except ReceiptHandleIsInvalid:
                continue


def _no_such_queue(operation: str) -> Exception:
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": "AWS.SimpleQueueService.NonExistentQueue", "Type": "Sender",
                                  "Message": "The specified queue does not exist."}}, operation)


def queue_depth(queue_arn: str) -> int:
    """Messages on a queue, visible or in flight (what ``ApproximateNumberOf...`` add up to), without a request."""
    queue = _queue(queue_arn)
    return len(queue._messages) if queue is not None else 0
