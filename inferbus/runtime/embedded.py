"""The embedded pipeline: synthesize, provision on moto, run handlers in-process, send, drain.

Step Functions executions run for real on moto's ASL interpreter, on its worker threads;
their Lambda tasks run the template's handlers in-process (:mod:`.lambda_adapter`). A
rule whose target is a state machine delivers through a local bridge queue
(:mod:`.bridge`). :meth:`EmbeddedPipeline.drain` runs everything until nothing moves.

Example
-------
>>> from inferbus.runtime import EmbeddedPipeline
>>> with EmbeddedPipeline() as pipeline:  # doctest: +SKIP
...     pipeline.put_events(entries)
...     pipeline.drain()
...     results = pipeline.tapped_events()
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
import warnings
from collections.abc import Sequence
from typing import Any

from .bridge import StateMachineBridge
from .event_source import LocalEventSource
from .executions import ExecutionInfo, ExecutionTracker
from .lambda_adapter import LambdaAdapter
from .lambda_host import LocalFunction, add_code_root_to_path, remove_added_environment
from .provision import Deployment, QueueInfo, StateMachineInfo, provision
from .queue_ops import delete_messages, peek_messages, receive_all
from .resources import ACCOUNT, REGION
from .template import synthesize

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
TAP_NAME = "inferbus-local-tap"
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
        A synthesized template; default, synthesize the app with default settings.
    tap
        Also route every event on the bus to a local-only queue, so what the
        pipeline publishes can be read back (:meth:`tapped_events`). Default True.

    Attributes
    ----------
    session, events, sqs, stepfunctions
        A boto3 session inside the mock and its clients (answer a task token with
        ``pipeline.stepfunctions.send_task_success(taskToken=..., output=...)``).
    deployment
        What was provisioned (:class:`~.provision.Deployment`), with what is cloud-only
        or partly local.
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

    def __init__(self, template: dict[str, Any] | None = None, *, tap: bool = True) -> None:
        self.template = template
        self.tap = tap
        self.deployment: Deployment | None = None
        self.functions: dict[str, LocalFunction] = {}
        self.event_sources: list[LocalEventSource] = []
        self.bridges: list[StateMachineBridge] = []
        self._tap_url: str | None = None
        self._tapped: list[dict[str, Any]] = []
        self._jsonpath_parse: Any = None
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

    def _start(self) -> None:
        import boto3

        self.session = boto3.session.Session(region_name=REGION)
        self.events = self.session.client("events")
        self.sqs = self.session.client("sqs")
        self.stepfunctions = self.session.client("stepfunctions")
        template = self.template if self.template is not None else synthesize()
        self.deployment = provision(template, self.session)
        for logical_id, spec in self.deployment.functions.items():
            self.functions[logical_id] = LocalFunction(spec)
        for source in self.deployment.event_sources:
            queue = self.deployment.queue_by_arn(source.queue_arn)
            self.event_sources.append(LocalEventSource(source, queue, self.functions[source.function_logical_id], self.sqs,
                                                       self.session.client("dynamodb")))
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
        assert self.deployment is not None
        (name,) = self.deployment.bus_names.values()
        return name

    def _add_tap(self) -> None:
        self._tap_url = self.sqs.create_queue(QueueName=TAP_NAME)["QueueUrl"]
        tap_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{TAP_NAME}"
        self.events.put_rule(Name=TAP_NAME, EventBusName=self.bus_name, EventPattern=json.dumps({"account": [ACCOUNT]}))
        self.events.put_targets(Rule=TAP_NAME, EventBusName=self.bus_name, Targets=[{"Id": "tap", "Arn": tap_arn}])

    def put_events(self, entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send entries as a producer would, through the handlers' own ``publish_events``
        (10 entries and 256 KB per call); return the entries that were not accepted."""
        add_code_root_to_path()
        from inferbus_lambda.publishing import publish_events

        return [entries[failure.index] for failure in publish_events(self.events, entries, max_attempts=1)]

    def queue(self, construct_id: str) -> QueueInfo:
        """The queue a construct made (``"InvalidEvents"`` -> ``InvalidEvents1A2B3C4D``; CDK appends 8 hex digits)."""
        assert self.deployment is not None
        (queue,) = [q for logical_id, q in self.deployment.queues.items() if logical_id[:-8] == construct_id]
        return queue

    def peek(self, construct_id: str) -> list[dict[str, Any]]:
        """The messages on a construct's queue, left in place (visible again at once)."""
        return peek_messages(self.sqs, self.queue(construct_id).url)

    def function(self, construct_id: str) -> LocalFunction:
        """The function a construct made (``"ImageClassifier"`` -> ``ImageClassifierFunction1A2B3C4D``)."""
        (function,) = [f for logical_id, f in self.functions.items() if logical_id.startswith(f"{construct_id}Function")]
        return function

    def event_source(self, construct_id: str) -> LocalEventSource:
        """The local event source that feeds the function ``construct_id`` made."""
        function = self.function(construct_id)
        (source,) = [source for source in self.event_sources if source.function is function]
        return source

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
