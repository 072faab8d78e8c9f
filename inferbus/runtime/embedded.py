"""The embedded pipeline: a synthesized template provisioned on moto, its handlers run in-process.

Step Functions executions run for real on moto's ASL interpreter, on its worker threads;
their Lambda tasks run the template's handlers in-process (:mod:`.lambda_adapter`),
concurrently (:mod:`.lambda_host`). A rule whose target is a state machine delivers through
an in-process bridge (:mod:`.bridge`). Every change to moto is in :mod:`.moto_patches`.

Started (:meth:`EmbeddedPipeline.start`, as ``inferbus serve`` and the demo run it), the
pipeline moves by itself: each event source polls on its own thread and invokes up to its
``MaximumConcurrency`` batches at once, and bridged events start their executions as they
arrive, all woken by events, not by polling sleeps. Not started, nothing moves until
:meth:`EmbeddedPipeline.pump` (one step, on the caller's thread: for a test that steps through
deliveries) or :meth:`EmbeddedPipeline.drain` (starts it, waits until nothing moves, stops it).

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

import json
import logging
import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from . import moto_patches, resource_policy
from .activity import Activity
from .bridge import StateMachineBridge
from .channels import LocalChannel, SqsChannel
from .deliveries import DELIVERIES
from .event_source import AfterFailure, LocalEventSource
from .executions import ExecutionInfo, ExecutionTracker
from .lambda_adapter import LambdaAdapter
from .status_changes import StatusChanges
from .lambda_host import CodeRoot, HostConfig, LocalFunction, install_routing, uninstall_routing
from .pipes import LocalPipe
from .provision import FIFO_SUFFIX, provision
from .queue_ops import peek_messages
from .resources import ACCOUNT, REGION
from .specs import BridgeSpec, Deployment, EventSourceSpec, KafkaMappingSpec, QueueInfo, StateMachineInfo

LOGGER = logging.getLogger(__name__)
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}
TAP_NAME = "local-tap"
TAP_MANAGED_BY = "inferbus.local"  # its ManagedBy, as an AWS service marks the rules it makes for you
PUT_EVENTS_LIMIT = 10  # entries per PutEvents request
DRAIN_TIMEOUT_S = 300.0
KAFKA_BOOTSTRAP_VARIABLE = "INFERBUS_KAFKA_BOOTSTRAP_SERVERS"  # a real broker for the Kafka mappings (default: a mock)
TRIM_EVERY_S = 1.0  # with ``retain``: how often what is kept is trimmed to its window
KEPT_PER_RETAINED = 100  # archived events and deleted receipt handles kept per retained invocation
# What a claims function reads as its claims' lifetime (``ClaimsEnvironment``): capped by ``retention_s``.
CLAIM_LIFETIME_VARIABLE = "IDEMPOTENCY_TTL_SECONDS"
TTL_SWEEP_S = 5.0  # while started: how often DynamoDB items past their time to live are deleted (AWS: within days)
IDLE_POLL_S = 0.05  # drain re-checks this often when nothing signals (an execution parking on a token)
CHECK_EVERY_S = 0.02  # and, while things move, at most this often
TAP_ARN = f"arn:aws:events:{REGION}:{ACCOUNT}:local-tap"  # a local-only target: what the tap rule delivers to
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
        ``after_failure(function, messages, failed_at_ms)``: run when records an event source's
        invocation failed are about to be visible again; returns how many leases it expired
        (see :mod:`.event_source`).
    tap
        Also route every event on the bus to a local-only queue, so what the
        pipeline publishes can be read back (:meth:`tapped_events`). Default True.
    retain
        Keep only a window of what has happened, for a pipeline that runs without end
        (``inferbus serve``): each function's last ``retain`` invocations and their logs, and
        each state machine's running executions and its last ``retain`` finished ones, and the
        tap's last ``retain`` events while nobody reads it. Bounded the same way, ``retain`` × 100
        of what is small: the events in the bus archive, each queue's receipt handles of deleted
        messages (kept so that a second delete succeeds) and each state machine target's names of
        executions started (so that a duplicate starts nothing). Trimmed at most once a second.
        Default, keep everything (the demo, chaos and the tests read it all back).
    retention_s
        How long the twin remembers what only serves to recognise an event that comes back, for a
        pipeline that runs without end: each claims function's claim lifetime is capped at it (its
        ``IDEMPOTENCY_TTL_SECONDS``; the template's is what AWS keeps, 45 days by default: as long as
        an event can come back), so that the TTL sweep frees claims after it, and the bus archive
        keeps only the events of that window, so that a replay never resends an event whose claim
        has expired; the handles of deleted messages and the names of executions started are
        forgotten after it too. A duplicate within the window is dropped as before; an event that
        comes back later (a dead-letter redrive) is taken as new, as AWS takes one after the claim
        lifetime. Nothing waiting in a queue is dropped. Default, the template's lifetimes.

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
        The local pollers (SQS queues, and Kafka topics on ``kafka_bootstrap_servers``: librdkafka's
        mock cluster, or the broker ``INFERBUS_KAFKA_BOOTSTRAP_SERVERS`` names) and the state machine
        rule-target bridges.
    activity
        Signalled whenever something may have moved (:class:`~.activity.Activity`).
    on_execution_end
        Called with an execution's ARN when it ends (on the execution's thread).
    state_machines
        Each state machine by logical id (name, ARN, type, definition as substituted).

    Nested pipelines share one moto and are not supported: enter one at a time.
    """

    def __init__(self, template: dict[str, Any], *, stack_name: str, host: HostConfig,
                 after_failure: AfterFailure | None = None, tap: bool = True, retain: int | None = None,
                 retention_s: float | None = None) -> None:
        if retain is not None and retain < 1:
            raise ValueError(f"retain must be at least 1, got {retain}")
        if retention_s is not None and retention_s < 1:
            raise ValueError(f"retention_s must be at least 1 s, got {retention_s}")
        self.template = template
        self.retain = retain
        self.retention_s = retention_s
        self._trimmed_at = time.monotonic()
        self.stack_name = stack_name
        self.host = host
        self.after_failure = after_failure
        self.tap = tap
        self.deployment: Deployment | None = None
        self.functions: dict[str, LocalFunction] = {}
        self.event_sources: list[LocalEventSource] = []
        self.kafka_bootstrap_servers: str | None = None  # the local Kafka cluster, once a Kafka mapping needs one
        self._kafka_cluster: Any = None  # keeps the mock cluster alive
        self.bridges: list[StateMachineBridge] = []
        self.pipes: list[LocalPipe] = []
        self.activity = Activity()
        self._wakeups_of_queue: dict[str, list[Activity]] = {}  # an SQS queue's ARN: its pollers' wake-ups
        self._bridge_of: dict[tuple[str, str], StateMachineBridge] = {}
        self._tapped: list[dict[str, Any]] = []
        self._tapping = False
        self._adapter: LambdaAdapter | None = None
        self._tracker: ExecutionTracker | None = None
        self._dispatcher: threading.Thread | None = None
        self._stopping = threading.Event()
        self._mock: Any = None
        self.on_execution_end: Callable[[str], None] | None = None
        self.status_changes: StatusChanges | None = None

        self._trim_lock = threading.Lock()

    def __enter__(self) -> EmbeddedPipeline:
        # Credentials first: no client may be made outside the mock.
        self._saved_env = {key: os.environ.get(key) for key in FAKE_CREDENTIALS}
        os.environ.update(FAKE_CREDENTIALS)
        from moto import mock_aws  # imported late: moto is large and only this path needs it

        self._mock = mock_aws(config=MOTO_CONFIG)
        self._mock.start()
        moto_patches.install(changed=self._changed, deliver=self._deliver)
        install_routing()
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

    def _start(self) -> None:
        import boto3

        self.session = boto3.session.Session(region_name=REGION)
        self.events = self.session.client("events")
        self.sqs = self.session.client("sqs")
        self.stepfunctions = self.session.client("stepfunctions")
        self.deployment = provision(self.template, self.session, stack_name=self.stack_name)
        resource_policy.ROLE_TAGS.clear()
        resource_policy.ROLE_TAGS.update(self.deployment.role_tags)
        for logical_id, spec in self.deployment.functions.items():
            self.functions[logical_id] = LocalFunction(spec, self.host, retain=self.retain)
            self._cap_claim_lifetime(self.functions[logical_id])
        for source in self.deployment.event_sources:
            channel = self._channel(source)
            # A poller of an SQS queue wakes when its queue changes, not at every change of every queue and
            # execution (n pollers woken per message: the cost grew with the components declared). Other
            # channels are not watched here: their pollers wake at every change, as before.
            wakeup = Activity() if isinstance(channel, SqsChannel) else None
            self.event_sources.append(LocalEventSource(source, channel, self.functions[source.function_logical_id],
                                                       self.after_failure, self.activity, wakeup))
            if wakeup is not None:
                self._wakeups_of_queue.setdefault(source.queue_arn, []).append(wakeup)
        for bridge in self.deployment.bridges:
            self._add_bridge(bridge)
        machines = self.deployment.state_machines.values()
        subscribers = {machine.arn: (machine.log_group_arn, [self.functions[s.function_logical_id]
                                                             for s in self.deployment.log_subscriptions
                                                             if s.log_group_arn == machine.log_group_arn])
                       for machine in machines if machine.type == "EXPRESS" and machine.log_group_arn
                       and machine.log_level != "OFF"}
        self.status_changes = StatusChanges(self.events, self.stepfunctions,
                                            [machine.arn for machine in machines if machine.type == "STANDARD"],
                                            {arn: found for arn, found in subscribers.items() if found[1]})
        for pipe in self.deployment.pipes:
            self.pipes.append(LocalPipe(pipe, self.deployment.queue_by_arn(pipe.source_arn),
                                        self.deployment.queue_by_arn(pipe.target_arn), self.sqs))
        self._tracker = ExecutionTracker(self.stepfunctions, self.deployment.state_machines)
        # Before any handler is imported: handlers make their clients from the default session.
        self._adapter = LambdaAdapter(self.functions)
        self._adapter.install()
        for function in self.functions.values():
            function.load()
        if self.tap:
            self._add_tap()

    def _cap_claim_lifetime(self, function: LocalFunction) -> None:
        lifetime = function.spec.environment.get(CLAIM_LIFETIME_VARIABLE)
        if self.retention_s is None or not str(lifetime).isdigit():  # none, or not a number: the function says why
            return
        capped = min(int(lifetime), math.ceil(self.retention_s))
        if capped != int(lifetime):
            function.set_environment(**{CLAIM_LIFETIME_VARIABLE: str(capped)})

    def _channel(self, source: EventSourceSpec) -> LocalChannel:
        """The channel a mapping reads: its SQS queue on moto, a Kafka topic on the local cluster, or an Amazon MQ
        queue on the local RabbitMQ."""
        assert self.deployment is not None
        if source.kafka is not None:
            return self._kafka_channel(source.kafka)
        if source.amazon_mq:
            from .rabbitmq import RabbitMqChannel  # pika only for a template that reads a broker

            (queue,) = source.queues
            return RabbitMqChannel(queue, source.virtual_host, source.queue_arn)
        return SqsChannel(self.deployment.queue_by_arn(source.queue_arn), self.sqs)

    def _add_bridge(self, spec: BridgeSpec) -> StateMachineBridge:
        assert self.deployment is not None
        dead_letter = self.deployment.queue_by_arn(spec.dead_letter_arn).url if spec.dead_letter_arn else None
        remember = self.retain * KEPT_PER_RETAINED if self.retain is not None else None
        bridge = StateMachineBridge(spec, self.sqs, dead_letter, remember)
        self.bridges.append(bridge)
        self._bridge_of[(spec.rule_arn, spec.target_id)] = bridge
        return bridge

    def _changed(self, kind: str, arn: str) -> None:
        if kind == "execution" and self.status_changes is not None:
            self.status_changes.ended(arn)  # before the wake-up: the dispatcher must find it
        self.activity.changed()
        if kind == "queue":
            for wakeup in self._wakeups_of_queue.get(arn, ()):
                wakeup.changed()
        if kind == "execution" and self.on_execution_end is not None:
            self.on_execution_end(arn)
        self._trim_if_due()

    def _trim_if_due(self) -> None:
        if self.retain is None and self.retention_s is None:
            return
        with self._trim_lock:
            due = time.monotonic() - self._trimmed_at >= TRIM_EVERY_S  # a trim scans what is kept: not at each change
            if due:
                self._trimmed_at = time.monotonic()
        if due:
            self._trim()

    def _trim(self) -> None:
        """Forget what falls out of the windows (``retain``, ``retention_s``)."""
        archived_after = time.time() - self.retention_s if self.retention_s is not None else None
        if self.retain is None:
            moto_patches.forget_old_events(sys.maxsize, archived_after)
            return
        if self.status_changes is None:
            moto_patches.forget_finished_executions(self.retain)
        else:  # an execution whose end is not told yet stays, for the dispatcher to read back
            self.status_changes.forgotten(moto_patches.forget_finished_executions(self.retain, self.status_changes.told))
        before = time.monotonic() - self.retention_s if self.retention_s is not None else None
        moto_patches.forget_old_events(self.retain * KEPT_PER_RETAINED, archived_after, before)
        if before is not None:
            for bridge in self.bridges:
                bridge.forget_started_before(before)
        if len(self._tapped) > self.retain:  # the tap, when nobody reads it: the console lists the last few
            self._tapped = self._tapped[-self.retain:]  # a new list: one a reader already took stays whole

    def _deliver(self, rule_arn: str, target: dict[str, Any], event: dict[str, Any]) -> bool:
        """Take a rule's delivery to a target moto cannot deliver to (called inside PutEvents: only queue it)."""
        if target["Arn"] == TAP_ARN:
            self._tapped.append(event)
            return True
        if ":states:" not in target["Arn"]:
            return False
        bridge = self._bridge_of.get((rule_arn, target["Id"]))
        if bridge is None:  # a rule a client added (inferbus serve): deliver the whole event, as AWS does
            bridge = self._add_bridge(BridgeSpec("", rule_arn.rsplit("/", 1)[-1], rule_arn, target["Id"], target["Arn"],
                                                 target.get("Input"), None, None))
        bridge.offer(event)
        self.activity.changed()
        return True

    def _kafka_channel(self, spec: KafkaMappingSpec) -> LocalChannel:
        """A Kafka mapping's topic on the one local cluster: librdkafka's mock, or the broker
        ``INFERBUS_KAFKA_BOOTSTRAP_SERVERS`` names; what the mapping gives up goes to its on-failure queue."""
        from .kafka import KafkaChannel, mock_cluster

        if self.kafka_bootstrap_servers is None:
            configured = os.environ.get(KAFKA_BOOTSTRAP_VARIABLE)
            self.kafka_bootstrap_servers, self._kafka_cluster = (configured, None) if configured else mock_cluster()
        failure_queue = self.deployment.queue_by_arn(spec.on_failure_arn) if spec.on_failure_arn else None

        def on_failure(record: dict[str, Any]) -> None:
            if failure_queue is not None:
                self.sqs.send_message(QueueUrl=failure_queue.url, MessageBody=json.dumps(record))

        return KafkaChannel(spec.topic, spec.group_id, bootstrap_servers=self.kafka_bootstrap_servers,
                            starting_position=spec.starting_position, event_source_arn=spec.cluster_arn,
                            max_retry_attempts=spec.max_retry_attempts if spec.max_retry_attempts >= 0 else 10,
                            on_failure=on_failure)

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
            for source in self.event_sources:
                source.channel.close()  # a broker's connection; what it still held goes back to its queue
            if self._tracker is not None:
                self._tracker.stop_running()  # no worker thread may call AWS once the mock is gone
        finally:
            if self._adapter is not None:
                self._adapter.uninstall()
            moto_patches.uninstall()
            resource_policy.ROLE_TAGS.clear()
            if self._mock is not None:
                self._mock.stop()
            uninstall_routing()
            CodeRoot(self.host.code_root).uninstall()
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
        """A local-only rule matching every event on the bus, delivered into memory (no queue between)."""
        rule = self.events.put_rule(Name=TAP_NAME, EventBusName=self.bus_name, EventPattern=json.dumps({"account": [ACCOUNT]}))
        moto_patches.mark_managed(rule["RuleArn"], TAP_MANAGED_BY)  # not a rule of the user's: the unrouted check skips it
        self.events.put_targets(Rule=TAP_NAME, EventBusName=self.bus_name, Targets=[{"Id": "tap", "Arn": TAP_ARN}])
        self._tapping = True

    def put_events(self, entries: Sequence[dict[str, Any]], *, as_role: str | None = None) -> list[dict[str, Any]]:
        """Send entries as a producer would (10 per PutEvents request); return those not accepted.

        Parameters
        ----------
        as_role
            The ARN of a role of the template to put them as (what a session of that role would:
            a bus policy may reserve a source to it); default, as a client of the account with no role.
        """
        rejected = []
        for start in range(0, len(entries), PUT_EVENTS_LIMIT):
            chunk = entries[start : start + PUT_EVENTS_LIMIT]
            with resource_policy.acting_as(as_role):
                response = self.events.put_events(Entries=list(chunk))
            rejected += [entry for entry, result in zip(chunk, response["Entries"], strict=True) if result.get("ErrorCode")]
        return rejected

    def queue(self, url: str) -> QueueInfo:
        """The template's queue with this URL (as a stack output gives it)."""
        assert self.deployment is not None
        return self.deployment.queue_by_url(url)

    def peek(self, url: str) -> list[dict[str, Any]]:
        """The messages on a queue, left in place (visible again at once)."""
        try:
            queue = self.queue(url)
        except KeyError:  # not the template's: a look by receiving
            return peek_messages(self.sqs, url)
        return self._look(queue)

    def function(self, name: str) -> LocalFunction:
        """The template's function with this name or ARN (as a stack output or a state machine names it)."""
        assert self.deployment is not None
        return self.functions[self.deployment.function_by_name(name).logical_id]

    def event_source(self, queue_url: str) -> LocalEventSource:
        """The local event source that drains the queue with this URL."""
        found = [source for source in self.event_sources
                 if isinstance(source.channel, SqsChannel) and source.queue.url == queue_url]
        if not found:
            raise KeyError(f"no event source mapping reads {queue_url}")
        return found[0]

    @property
    def state_machines(self) -> dict[str, StateMachineInfo]:
        """The template's state machines by logical id (name, ARN, type, definition as substituted)."""
        assert self.deployment is not None
        return self.deployment.state_machines

    # -- moving: started in the background, or one step at a time -----------------------------

    @property
    def started(self) -> bool:
        return self._dispatcher is not None

    def start(self) -> None:
        """Let the pipeline move by itself until :meth:`stop`: every event source polls and invokes
        concurrently, every bridged event starts its execution as it arrives."""
        if self._dispatcher is not None:
            return
        assert self._adapter is not None
        self._adapter.install()  # again, should anything have replaced boto3's default session
        self._stopping.clear()
        DELIVERIES.start()
        for source in self.event_sources:
            source.start()
        self._dispatcher = threading.Thread(target=self._dispatch_forever, name="bridges", daemon=True)
        self._dispatcher.start()

    def stop(self) -> None:
        """Stop moving: pollers stop (running batches finish); executions already started go on."""
        if self._dispatcher is None:
            return
        DELIVERIES.stop()  # first: what clients put is delivered before the pollers stop
        self._stopping.set()
        self.activity.changed()
        self._dispatcher.join()
        self._dispatcher = None
        for source in self.event_sources:
            source.stop()

    def _dispatch_forever(self) -> None:
        swept_at = time.monotonic()
        while not self._stopping.is_set():
            seen = self.activity.generation
            if time.monotonic() - swept_at >= TTL_SWEEP_S:
                swept_at = time.monotonic()
                moto_patches.expire_items()
            try:
                moved = self._dispatch_bridges()
            except Exception:  # one bad hand-over must not stop every later one: the twin would stall silently
                LOGGER.exception("the dispatcher could not hand an event or an execution's end over; it goes on")
                moved = 0
            if not moved:
                self.activity.wait(seen, 1.0)

    def pump(self) -> int:
        """One step on this thread: every event source invokes once if its batch is ready, and every
        bridged event starts its execution; return records and events handed over (0 when started:
        the pipeline moves by itself)."""
        if self.started:
            return 0
        records = sum(invocation.records for source in self.event_sources if (invocation := source.pump()))
        return records + self._dispatch_bridges()

    def _dispatch_bridges(self) -> int:
        changes = self.status_changes.dispatch() if self.status_changes is not None else 0
        return changes + sum(bridge.dispatch() for bridge in self.bridges) + sum(pipe.dispatch() for pipe in self.pipes)

    def _queued(self) -> tuple[dict[str, int], int]:
        """Source queues' backlog, and batches or bridged events still being handed over."""
        handing = (sum(bridge.waiting for bridge in self.bridges) + sum(source.busy for source in self.event_sources)
                   + sum(pipe.waiting for pipe in self.pipes))
        handing += self.status_changes.waiting if self.status_changes is not None else 0
        handing += DELIVERIES.pending
        backlog = {(source.queue.logical_id if isinstance(source.channel, SqsChannel) else source.spec.logical_id): n
                   for source in self.event_sources if (n := source.backlog())}
        return backlog, handing

    def drain(self, *, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Run until nothing moves: every source queue and bridge empty, every batch done, every
        execution finished or parked on a ``.waitForTaskToken`` task (a parked execution does not
        hold drain up). Starts the pipeline for the time it takes if it was not started.

        Parameters
        ----------
        timeout_s
            Give up after this long (retry intervals and Wait states take real time locally).

        Raises
        ------
        RuntimeError
            Not quiescent within ``timeout_s``; says what still moves.
        """
        assert self._tracker is not None
        deadline = time.monotonic() + timeout_s
        self._tracker.watch_afresh()
        started_here = not self.started
        self.start()
        try:
            while True:
                seen = self.activity.generation
                backlog, handing = self._queued()
                # Running executions are looked at (every one's history) only once nothing else moves.
                moving = self._tracker.unsettled() if not backlog and not handing else []
                if not moving and not backlog and not handing and self.activity.generation == seen:
                    return  # (and nothing moved while it looked: a step between two looks is not missed)
                if time.monotonic() > deadline:
                    moving = moving or self._tracker.unsettled()
                    raise RuntimeError(f"not quiescent after {timeout_s:g} s: executions still running {moving}, "
                                       f"messages left in {backlog}, {handing} batches or events being handed over")
                if self.activity.wait(seen, IDLE_POLL_S):
                    self._tracker.watch_afresh()  # a handler that ran may have answered a task token
                    time.sleep(CHECK_EVERY_S)  # the check reads every running execution's history: not at every change
        finally:
            if started_here:
                self.stop()

    def executions(self, logical_id: str | None = None) -> list[ExecutionInfo]:
        """A snapshot of every execution (of one state machine, by logical id), oldest first.

        Each has its status, parsed input and output, error and cause, start and stop
        times, per-state timings from the history and whether it waits for a task token.
        Answer a waiting task with ``pipeline.stepfunctions.send_task_success(...)``.
        """
        assert self._tracker is not None
        return self._tracker.snapshot(logical_id)

    def tapped_events(self) -> list[dict[str, Any]]:
        """Every event the bus carried since the last call, as EventBridge delivered it."""
        if not self._tapping:
            raise RuntimeError("the pipeline was started with tap=False")
        events, self._tapped = self._tapped, []  # one swap: a delivery on another thread lands in one list or the other
        return events

    def dead_letters(self) -> dict[str, list[dict[str, Any]]]:
        """Messages in each dead-letter queue, by queue logical id (left in place: a DLQ is only looked at)."""
        assert self.deployment is not None
        return {queue.logical_id: self._look(queue) for queue in self.deployment.dead_letter_queues}

    def _look(self, queue: QueueInfo) -> list[dict[str, Any]]:
        """A queue's messages, left in place: received and released, or, on a FIFO queue (which hands out one
        batch per message group at a time), read in-process."""
        if queue.name.endswith(FIFO_SUFFIX):
            return moto_patches.messages_on(queue.arn)
        return peek_messages(self.sqs, queue.url)
