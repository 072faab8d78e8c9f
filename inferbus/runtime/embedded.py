"""The embedded pipeline: a synthesized template provisioned on moto, its handlers run in-process.

Step Functions executions run for real on moto's ASL interpreter, on its worker threads;
their Lambda tasks run the template's handlers in-process (:mod:`.lambda_adapter`). A
rule whose target is a state machine delivers through a local bridge queue
(:mod:`.bridge`). :meth:`EmbeddedPipeline.drain` runs everything until nothing moves.

The runtime knows AWS, not the application: it reads the template and resolves its
``Outputs`` as CloudFormation would, and finds resources by those values (a queue by URL,
a function by name or ARN). What is the application's own (where its code is, what an
injected fault stands for, what to expire after a failed invocation) is passed in.

Example
-------
>>> from inferbus.runtime import EmbeddedPipeline, HostConfig
>>> with EmbeddedPipeline(template, stack_name="App", host=HostConfig(code_root, task_root)) as pipeline:  # doctest: +SKIP
...     pipeline.put_events(entries)
...     pipeline.drain()
...     results = pipeline.tapped_events()
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
import warnings
from collections.abc import Sequence
from typing import Any

from .bridge import StateMachineBridge
from .event_source import AfterFailure, LocalEventSource
from .executions import ExecutionInfo, ExecutionTracker
from .lambda_adapter import LambdaAdapter
from .lambda_host import CodeRoot, HostConfig, LocalFunction, remove_added_environment
from .provision import provision
from .queue_ops import delete_messages, peek_messages, receive_all
from .resources import ACCOUNT, REGION
from .specs import Deployment, QueueInfo, StateMachineInfo

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
TAP_NAME = "local-tap"
PUT_EVENTS_LIMIT = 10  # entries per PutEvents request
MAX_DRAIN_ROUNDS = 10_000
DRAIN_TIMEOUT_S = 300.0
IDLE_POLL_S = 0.02  # how long drain sleeps when only executions on other threads are busy
# Step Functions executes ASL only with this (moto's default stores definitions and runs nothing).
MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}}
# moto's interpreter logs every failed execution as an ERROR with its parse tree; the failure
# is reported where it belongs, in executions() (error, cause), so only CRITICAL gets through.
MOTO_INTERPRETER_LOGGER = "moto.stepfunctions.parser"


class EmbeddedPipeline:
    """The inferbus stack on moto, in this process.

    Parameters
    ----------
    template
        A synthesized CloudFormation template.
    stack_name
        The stack's name (the prefix of generated physical names).
    host
        Where the functions' code is, and what the caller adds to their invocations.
    after_failure
        Run after every event-source invocation that failed as a whole, with its function;
        returns how many leases it expired (see :mod:`.event_source`).
    tap
        Also route every event on the bus to a local-only queue, so what the
        pipeline publishes can be read back (:meth:`tapped_events`). Default True.

    Attributes
    ----------
    session, events, sqs, stepfunctions
        A boto3 session inside the mock and its clients (answer a task token with
        ``pipeline.stepfunctions.send_task_success(taskToken=..., output=...)``).
    deployment
        What was provisioned (:class:`~.specs.Deployment`): the resolved stack ``outputs``,
        and what is cloud-only or partly local.
    functions
        Each Lambda function by logical id (:class:`~.lambda_host.LocalFunction`): its
        invocations, captured logs and metrics. ``functions[id].set_environment(NAME="value")``
        changes the environment of its later invocations (e.g. to switch on fault injection).
    event_sources, bridges
        The local SQS pollers and the state machine rule-target bridges.
    state_machines
        Each state machine by logical id (name, ARN, type, definition as substituted).

    Nested pipelines share one moto and are not supported: enter one at a time.
    """

    def __init__(self, template: dict[str, Any], *, stack_name: str, host: HostConfig,
                 after_failure: AfterFailure | None = None, tap: bool = True) -> None:
        self.template = template
        self.stack_name = stack_name
        self.host = host
        self.after_failure = after_failure
        self.tap = tap
        self.deployment: Deployment | None = None
        self.functions: dict[str, LocalFunction] = {}
        self.event_sources: list[LocalEventSource] = []
        self.bridges: list[StateMachineBridge] = []
        self._tap_url: str | None = None
        self._tapped: list[dict[str, Any]] = []
        self._jsonpath_parse: Any = None
        self._transact_write_items: Any = None
        self._adapter: LambdaAdapter | None = None
        self._tracker: ExecutionTracker | None = None

    def __enter__(self) -> EmbeddedPipeline:
        # Credentials first: no client may be made outside the mock.
        self._saved_env = {key: os.environ.get(key) for key in FAKE_CREDENTIALS}
        os.environ.update(FAKE_CREDENTIALS)
        from moto import mock_aws  # imported late: moto is large and only this path needs it

        self._mock = mock_aws(config=MOTO_CONFIG)
        self._mock.start()
        self._memoize_jsonpath()
        self._copy_tables_once_per_transaction()
        # An invocation that fails before it measures anything (an injected fault, a crash)
        # makes Powertools warn that it flushed no metrics: expected here, noise on a terminal.
        warnings.filterwarnings("ignore", message="No application metrics to publish", category=UserWarning)
        interpreter_log = logging.getLogger(MOTO_INTERPRETER_LOGGER)
        self._saved_log_level = interpreter_log.level
        interpreter_log.setLevel(logging.CRITICAL)
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _memoize_jsonpath(self) -> None:
        """Speed only: moto's EventBridge re-parses its default input template's JSONPath
        expressions for every target of every event (about 15 ms per delivery, most of a
        demo's time). Parsing is pure, so the parsed expressions are cached while we run."""
        import jsonpath_ng.ext

        self._jsonpath_parse = jsonpath_ng.ext.parse
        jsonpath_ng.ext.parse = functools.lru_cache(maxsize=1024)(self._jsonpath_parse)

    def _copy_tables_once_per_transaction(self) -> None:
        """Speed and memory only: moto's ``TransactWriteItems`` backs up a table (to roll back a
        cancelled transaction) with a deep copy once per item of the request, keeping the last,
        so a claim of 100 records copied the whole idempotency table 100 times and a run's time
        and memory grew with the square of its events. One copy per table per request is the
        same backup: the table does not change while it is being backed up."""
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

        original = models.DynamoDBBackend.transact_write_items
        one_at_a_time = threading.Lock()

        def transact_write_items(backend: Any, transact_items: Any) -> Any:
            with one_at_a_time:
                models.copy = OneCopyPerTable()  # type: ignore[assignment]
                try:
                    return original(backend, transact_items)
                finally:
                    models.copy = copy

        models.DynamoDBBackend.transact_write_items = transact_write_items
        self._transact_write_items = original

    def _start(self) -> None:
        import boto3

        self.session = boto3.session.Session(region_name=REGION)
        self.events = self.session.client("events")
        self.sqs = self.session.client("sqs")
        self.stepfunctions = self.session.client("stepfunctions")
        self.deployment = provision(self.template, self.session, stack_name=self.stack_name)
        for logical_id, spec in self.deployment.functions.items():
            self.functions[logical_id] = LocalFunction(spec, self.host)
        for source in self.deployment.event_sources:
            queue = self.deployment.queue_by_arn(source.queue_arn)
            self.event_sources.append(LocalEventSource(source, queue, self.functions[source.function_logical_id], self.sqs,
                                                       self.after_failure))
        for bridge in self.deployment.bridges:
            dead_letter = self.deployment.queue_by_arn(bridge.dead_letter_arn).url if bridge.dead_letter_arn else None
            self.bridges.append(StateMachineBridge(bridge, self.sqs, self.stepfunctions, dead_letter))
        self._tracker = ExecutionTracker(self.stepfunctions, self.deployment.state_machines)
        # Before any handler is imported: handlers make their clients from the default session.
        self._adapter = LambdaAdapter(self.functions)
        self._adapter.install()
        for function in self.functions.values():
            function.load()
        if self.tap:
            self._add_tap()

    def __exit__(self, *exc: object) -> None:
        try:
            if self._tracker is not None:
                self._tracker.stop_running()  # no worker thread may call AWS once the mock is gone
        finally:
            if self._adapter is not None:
                self._adapter.uninstall()
            self._mock.stop()
            remove_added_environment()
            CodeRoot(self.host.code_root).uninstall()
            if self._transact_write_items is not None:
                from moto.dynamodb import models

                models.DynamoDBBackend.transact_write_items = self._transact_write_items
            if self._jsonpath_parse is not None:
                import jsonpath_ng.ext

                jsonpath_ng.ext.parse = self._jsonpath_parse
            logging.getLogger(MOTO_INTERPRETER_LOGGER).setLevel(self._saved_log_level)
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    @property
    def bus_name(self) -> str:
        """The template's one event bus (a template with several must name one by output)."""
        assert self.deployment is not None
        (name,) = self.deployment.bus_names.values()
        return name

    @property
    def outputs(self) -> dict[str, str]:
        """The stack's ``Outputs``, resolved as CloudFormation would."""
        assert self.deployment is not None
        return self.deployment.outputs

    def _add_tap(self) -> None:
        self._tap_url = self.sqs.create_queue(QueueName=TAP_NAME)["QueueUrl"]
        tap_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{TAP_NAME}"
        self.events.put_rule(Name=TAP_NAME, EventBusName=self.bus_name, EventPattern=json.dumps({"account": [ACCOUNT]}))
        self.events.put_targets(Rule=TAP_NAME, EventBusName=self.bus_name, Targets=[{"Id": "tap", "Arn": tap_arn}])

    def put_events(self, entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send entries as a producer would (10 per PutEvents request); return those not accepted."""
        rejected = []
        for start in range(0, len(entries), PUT_EVENTS_LIMIT):
            chunk = entries[start : start + PUT_EVENTS_LIMIT]
            response = self.events.put_events(Entries=list(chunk))
            rejected += [entry for entry, result in zip(chunk, response["Entries"], strict=True) if result.get("ErrorCode")]
        return rejected

    def queue(self, url: str) -> QueueInfo:
        """The template's queue with this URL (as a stack output gives it)."""
        assert self.deployment is not None
        return self.deployment.queue_by_url(url)

    def peek(self, url: str) -> list[dict[str, Any]]:
        """The messages on a queue, left in place (visible again at once)."""
        return peek_messages(self.sqs, url)

    def function(self, name: str) -> LocalFunction:
        """The template's function with this name or ARN (as a stack output or a state machine names it)."""
        assert self.deployment is not None
        return self.functions[self.deployment.function_by_name(name).logical_id]

    def event_source(self, queue_url: str) -> LocalEventSource:
        """The local event source that drains the queue with this URL."""
        found = [source for source in self.event_sources if source.queue.url == queue_url]
        if not found:
            raise KeyError(f"no event source mapping reads {queue_url}")
        return found[0]

    @property
    def state_machines(self) -> dict[str, StateMachineInfo]:
        """The template's state machines by logical id (name, ARN, type, definition as substituted)."""
        assert self.deployment is not None
        return self.deployment.state_machines

    def pump(self) -> int:
        """Let every event source invoke once if its batch is ready, and start an execution for
        every event waiting on a bridge; return records and events handed over."""
        records = sum(invocation.records for source in self.event_sources if (invocation := source.pump()))
        self._collect_tap()
        return records + self._dispatch_bridges()

    def _dispatch_bridges(self) -> int:
        assert self._adapter is not None
        self._adapter.install()  # again, should anything have replaced boto3's default session
        return sum(bridge.dispatch() for bridge in self.bridges)

    def drain(self, *, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Run until nothing moves: every source queue and bridge empty, every execution finished
        or parked on a ``.waitForTaskToken`` task (a parked execution does not hold drain up).

        Executions publish events that fill queues and bridges again, so this loops; each
        round waits out partial batches' windows.

        Parameters
        ----------
        timeout_s
            Give up after this long (retry intervals and Wait states take real time locally).

        Raises
        ------
        RuntimeError
            Not quiescent within ``timeout_s`` or :data:`MAX_DRAIN_ROUNDS` rounds that moved
            something (events bouncing forever); says what still moves.
        """
        assert self._tracker is not None
        deadline = time.monotonic() + timeout_s
        self._tracker.watch_afresh()
        busy_rounds = 0
        while True:
            # Executions first: one that finished has already routed what it published.
            moving = self._tracker.unsettled()
            busy = self._dispatch_bridges() > 0
            for source in self.event_sources:
                busy |= source.pump(wait=True) is not None
            self._collect_tap()
            backlog = {source.queue.logical_id: n for source in self.event_sources if (n := source.backlog())}
            if not busy and not moving and not backlog:
                return
            busy_rounds += busy
            if time.monotonic() > deadline or busy_rounds > MAX_DRAIN_ROUNDS:
                limit = f"{timeout_s:g} s" if busy_rounds <= MAX_DRAIN_ROUNDS else f"{MAX_DRAIN_ROUNDS} busy rounds"
                raise RuntimeError(f"not quiescent after {limit}: executions still running {moving}, "
                                   f"messages left in {backlog}")
            if busy:
                self._tracker.watch_afresh()  # a handler that ran may have answered a task token
            else:
                time.sleep(IDLE_POLL_S)

    def executions(self, logical_id: str | None = None) -> list[ExecutionInfo]:
        """A snapshot of every execution (of one state machine, by logical id), oldest first.

        Each has its status, parsed input and output, error and cause, start and stop
        times, per-state timings from the history and whether it waits for a task token.
        Answer a waiting task with ``pipeline.stepfunctions.send_task_success(...)``.
        """
        assert self._tracker is not None
        return self._tracker.snapshot(logical_id)

    def _collect_tap(self) -> None:
        """Move what the tap queue holds into memory: moto's SQS slows down as a queue grows."""
        if self._tap_url is not None:
            messages = receive_all(self.sqs, self._tap_url)
            delete_messages(self.sqs, self._tap_url, messages)
            self._tapped += [json.loads(message["Body"]) for message in messages]

    def tapped_events(self) -> list[dict[str, Any]]:
        """Every event the bus carried since the last call, as EventBridge delivered it."""
        if self._tap_url is None:
            raise RuntimeError("the pipeline was started with tap=False")
        self._collect_tap()
        events, self._tapped = self._tapped, []
        return events

    def dead_letters(self) -> dict[str, list[dict[str, Any]]]:
        """Messages in each dead-letter queue, by queue logical id (left in place: a DLQ is only looked at)."""
        assert self.deployment is not None
        return {queue.logical_id: peek_messages(self.sqs, queue.url) for queue in self.deployment.dead_letter_queues}
