"""Run a template's Lambda functions in-process, from the source tree, many at once.

The handler is imported by the template's ``Handler`` property from the code root (what the
bundle's root is on Lambda: :class:`CodeRoot` makes its top-level packages importable) and
runs with ``LAMBDA_TASK_ROOT`` set to the task root (where its data files sit, as in the
bundle). Its environment is the template's, plus what the caller adds (:class:`HostConfig`).

Invocations run concurrently, each in an *execution environment* of its own function, as on
Lambda: an environment is one import of the handler module (its cold start), runs one
invocation at a time, and stays warm for the next. A function has at most its
``ReservedConcurrentExecutions`` environments (an ``Invoke`` beyond that is throttled, as
Lambda throttles it) and, locally, at most :attr:`HostConfig.max_environments` (an invocation
beyond that waits for one: ``Invocation.waited_ms``). Each invocation acts as the function's
template role (what a bus's resource policy sees, :mod:`.resource_policy`), sees its own
environment variables and has its own captured output, while others run: ``os.environ`` and
``sys.stdout`` are routed per invocation (:class:`InvocationEnviron`, :class:`_StdoutRouter`);
nothing is swapped for the whole process and there is no global lock. What a library keeps
process-wide (a ``logging.Logger`` by name) is shared by the functions in this process.
"""

from __future__ import annotations

import contextvars
import importlib
import importlib.abc
import importlib.machinery
import io
import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .resource_policy import acting_as
from .specs import FunctionSpec

# What Lambda reports when it ends an invocation itself (HostConfig.service_failures maps
# exceptions that stand for these to them).
TIMED_OUT = ("Sandbox.Timedout", "Task timed out after {timeout_s}.00 seconds")
RUNTIME_EXITED = ("Runtime.ExitError", "Runtime exited unexpectedly")
DEFAULT_MAX_ENVIRONMENTS = 4  # per function, locally: each holds its own models in memory
# Imports are not safe to run on two threads for one module name: cold starts take turns.
INIT_LOCK = threading.RLock()


class ThrottledError(RuntimeError):
    """An ``Invoke`` beyond the function's reserved concurrency (Lambda's ``TooManyRequestsException``)."""


@dataclass(frozen=True)
class HostConfig:
    """Where the functions' code is and what the caller adds to every invocation.

    Parameters
    ----------
    code_root
        The folder the handlers import from (a zip bundle's root).
    task_root
        ``LAMBDA_TASK_ROOT``: where the functions find their data files.
    environment
        Variables every function gets before its own (a function's template environment wins).
    service_failures
        Exception class name -> ``(errorType, errorMessage)``: exceptions that stand for the
        Lambda service ending an invocation (a timeout, a dead runtime), reported as Lambda
        reports those (``{timeout_s}`` in the message is the function's timeout).
    max_environments
        Most execution environments of one function locally (each a cold start holding its own
        models); Lambda would start more. Default 4.
    """

    code_root: Path
    task_root: Path
    environment: Mapping[str, str] = field(default_factory=dict)
    service_failures: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    max_environments: int = DEFAULT_MAX_ENVIRONMENTS


class CodeRoot(importlib.abc.MetaPathFinder):
    """Makes the top-level modules of a code root importable, as Lambda does for a bundle's root.

    Consulted after the regular import path, so installed packages win; removed again by
    :meth:`uninstall`.
    """

    def __init__(self, root: Path) -> None:
        self.root = str(root)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if path is not None:  # a submodule: its package's __path__ finds it
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.root])

    def install(self) -> None:
        if not any(isinstance(f, CodeRoot) and f.root == self.root for f in sys.meta_path):
            sys.meta_path.append(self)

    def uninstall(self) -> None:
        sys.meta_path[:] = [f for f in sys.meta_path if not (isinstance(f, CodeRoot) and f.root == self.root)]


class LocalContext:
    """The Lambda context object, with a deadline from the function's timeout."""

    def __init__(self, spec: FunctionSpec) -> None:
        self.function_name = spec.name
        self.function_version = "$LATEST"
        self.invoked_function_arn = spec.arn
        self.memory_limit_in_mb = spec.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{spec.name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + spec.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class OutputSink(io.TextIOBase):
    """What one invocation prints; keeps each JSON line it is given."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self._partial = ""

    def write(self, text: str) -> int:
        self._partial += text
        *complete, self._partial = self._partial.split("\n")
        for line in complete:
            if line.strip():
                try:
                    self.lines.append(json.loads(line))
                except json.JSONDecodeError:
                    self.lines.append({"message": line, "level": "PRINT"})
        return len(text)


@dataclass
class Invocation:
    """One call of a handler. ``error`` is ``"Type: message"`` of an unhandled exception;
    ``trigger`` is ``"sqs"`` (an event source mapping) or ``"invoke"`` (the Invoke API:
    Step Functions tasks); ``waited_ms`` is how long it waited for an execution environment
    (locally a function has at most :attr:`HostConfig.max_environments`); ``logs`` is what it
    printed (JSON lines)."""

    request_id: str
    records: int
    failed_ids: list[str]
    error: str | None
    duration_ms: float
    trigger: str = "sqs"
    error_type: str | None = None
    error_message: str | None = None
    stack_trace: list[str] = field(default_factory=list)
    waited_ms: float = 0.0
    logs: list[dict[str, Any]] = field(default_factory=list)


def batch_records(event: Any) -> list[Any]:
    """The records of an event source mapping's event: SQS's ``Records``, Kafka's ``records`` by topic-partition,
    Amazon MQ's ``rmqMessagesByQueue`` by queue."""
    if not isinstance(event, dict):
        return []
    if isinstance(event.get("rmqMessagesByQueue"), dict):
        return [message for messages in event["rmqMessagesByQueue"].values() for message in messages]
    if isinstance(event.get("records"), dict):
        return [record for partition in event["records"].values() for record in partition]
    return list(event.get("Records", []))


class LocalFunction:
    """One function of the template: its execution environments, invocations, logs and metrics.

    Parameters
    ----------
    spec
        The function, as provisioned.
    host
        Where its code is and what the caller adds.
    retain
        Keep only the last ``retain`` invocations, and what they and the cold starts among them
        printed (:attr:`invocations`, :attr:`lines`, :attr:`metrics`, :attr:`logs` read that
        window); default, keep everything (a bounded run reads it all back), which a long-running
        endpoint cannot afford.
    """

    def __init__(self, spec: FunctionSpec, host: HostConfig, *, retain: int | None = None) -> None:
        if retain is not None and retain < 1:
            raise ValueError(f"retain must be at least 1, got {retain}")
        self.spec = spec
        self.host = host
        self.invocations: deque[Invocation] = deque(maxlen=retain)
        self.overrides: dict[str, str] = {}
        self._lines: deque[list[dict[str, Any]]] = deque(maxlen=retain)  # one entry per invocation or cold start
        self._idle: list[Any] = []  # warm environments' handlers, the most recently used last
        self._environments = 0
        self._running = 0
        self._started = 0  # invocations started so far: the id of the next one
        self._running_ids: set[int] = set()
        self._changed = threading.Condition()
        self._wrappers: list[Any] = []  # handler -> handler, applied in order (add_handler_wrapper)
        self._wrapped: dict[Any, tuple[int, Any]] = {}  # environment's handler -> (wrappers applied, the result)
        reserved = spec.reserved_concurrency
        self.max_environments = min(host.max_environments, reserved) if reserved else host.max_environments

    @property
    def environment(self) -> dict[str, str]:
        """The environment the handler runs with: the template's, then :meth:`set_environment`'s."""
        return {**self.host.environment, **self.spec.environment, **self.overrides,
                "AWS_LAMBDA_FUNCTION_NAME": self.spec.name, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.spec.memory_mb), "LAMBDA_TASK_ROOT": str(self.host.task_root)}

    @property
    def handler(self) -> Any:
        """The handler of the warm environment used next (``None`` before the first cold start)."""
        with self._changed:
            return self._idle[-1] if self._idle else None

    @property
    def running(self) -> int:
        """Invocations running now."""
        return self._running

    def running_ids(self) -> frozenset[int]:
        """The ids of the invocations running now (ids count up from 0 as invocations start)."""
        with self._changed:
            return frozenset(self._running_ids)

    def set_environment(self, **variables: str) -> None:
        """Override environment variables for every later invocation (the template is unchanged).

        As on Lambda after a configuration change, a handler that read a variable at import
        sees the new value only after a cold start: call :meth:`load` for one.

        Examples
        --------
        >>> pipeline.functions["ScoreFunction"].set_environment(FAULT_INJECTION="timeout")  # doctest: +SKIP
        """
        self.overrides = {**self.overrides, **{key: str(value) for key, value in variables.items()}}

    def add_handler_wrapper(self, wrap: Any) -> None:
        """Decorate every execution environment's handler, warm now or started later, with ``wrap``
        (``handler -> handler``): how test doubles and fault injection reach a function without
        anything in its own code path. Each environment's handler is wrapped once; the handler
        module's attributes (``handler.runtime``) stay reachable through ``wrap``'s argument."""
        with self._changed:
            self._wrappers.append(wrap)

    def _decorated(self, handler: Any) -> Any:
        with self._changed:
            wrappers = list(self._wrappers)
            applied, decorated = self._wrapped.get(handler, (0, handler))
        if applied == len(wrappers):
            return decorated
        for wrap in wrappers[applied:]:
            decorated = wrap(decorated)
        with self._changed:
            self._wrapped[handler] = (len(wrappers), decorated)
        return decorated

    def _cold_start(self) -> Any:
        module_name, _, attribute = self.spec.handler.rpartition(".")
        CodeRoot(self.host.code_root).install()
        with INIT_LOCK, acting_as(self.spec.role_arn), invocation_context(self.environment, OutputSink()) as sink:
            sys.modules.pop(module_name, None)
            handler = getattr(importlib.import_module(module_name), attribute)
        self._keep(sink.lines)
        return handler

    def load(self) -> None:
        """A cold start now: a fresh import of the handler replaces every warm environment."""
        handler = self._cold_start()
        with self._changed:
            self._environments -= len(self._idle)
            self._idle = [handler]
            self._environments += 1

    def _take_environment(self, trigger: str) -> tuple[Any, float, int]:
        queued = time.perf_counter()
        with self._changed:
            reserved = self.spec.reserved_concurrency
            if trigger == "invoke" and reserved is not None and self._running >= reserved:
                raise ThrottledError(f"Rate Exceeded: {self.spec.name} runs its {reserved} reserved concurrent executions")
            while not self._idle and self._environments >= self.max_environments:
                self._changed.wait()
            invocation_id, self._started = self._started, self._started + 1
            self._running += 1
            self._running_ids.add(invocation_id)
            if self._idle:
                return self._idle.pop(), (time.perf_counter() - queued) * 1000, invocation_id
            self._environments += 1
        try:
            return self._cold_start(), (time.perf_counter() - queued) * 1000, invocation_id
        except BaseException:
            with self._changed:
                self._running -= 1
                self._running_ids.discard(invocation_id)
                self._environments -= 1
                self._changed.notify()
            raise

    def _release(self, handler: Any, invocation_id: int) -> None:
        with self._changed:
            self._idle.append(handler)
            self._running -= 1
            self._running_ids.discard(invocation_id)
            self._changed.notify()

    def _keep(self, lines: list[dict[str, Any]]) -> None:
        with self._changed:
            self._lines.append(lines)

    def invoke(self, event: Any, *, trigger: str = "sqs") -> tuple[Any, Invocation]:
        """Call the handler in a free execution environment; an exception is the invocation's error.

        Parameters
        ----------
        event
            The event, as the trigger would send it (any JSON value).
        trigger
            ``"sqs"`` or ``"invoke"``, recorded on the :class:`Invocation`.

        Returns
        -------
        tuple
            The handler's return value (``None`` on error) and the :class:`Invocation`.

        Raises
        ------
        ThrottledError
            An ``invoke`` while the function runs its reserved concurrency.
        """
        handler, waited_ms, invocation_id = self._take_environment(trigger)
        try:
            return self._invoke_in(self._decorated(handler), event, trigger, waited_ms)
        finally:
            self._release(handler, invocation_id)

    def _invoke_in(self, handler: Any, event: Any, trigger: str, waited_ms: float) -> tuple[Any, Invocation]:
        context = LocalContext(self.spec)
        started = time.perf_counter()
        response, error, error_type, error_message, stack = None, None, None, None, []
        with acting_as(self.spec.role_arn), invocation_context(self.environment, OutputSink()) as sink:
            try:
                response = handler(event, context)
            except BaseException as exc:  # a handler error fails the invocation, as on Lambda
                service_failure = self.host.service_failures.get(type(exc).__name__)
                if service_failure is None and not isinstance(exc, Exception):
                    raise  # KeyboardInterrupt, SystemExit: not the handler's to report
                if service_failure is None:
                    error_type, error_message = type(exc).__name__, str(exc)
                else:
                    error_type, error_message = service_failure[0], service_failure[1].format(timeout_s=self.spec.timeout_s)
                error = f"{error_type}: {error_message}"
                stack = traceback.format_exc().splitlines()
                # What the Lambda runtime logs for an unhandled error.
                sink.lines.append({"level": "ERROR", "errorType": error_type, "errorMessage": error_message,
                                   "stackTrace": stack, "requestId": context.aws_request_id})
        records = len(batch_records(event))
        failures = response.get("batchItemFailures", []) if isinstance(response, dict) else []
        failed = [item["itemIdentifier"] for item in failures]
        invocation = Invocation(context.aws_request_id, records, failed, error, (time.perf_counter() - started) * 1000,
                                trigger, error_type, error_message, stack, waited_ms, sink.lines)
        with self._changed:
            self._lines.append(sink.lines)
            self.invocations.append(invocation)
        return response, invocation

    @property
    def lines(self) -> list[dict[str, Any]]:
        """Every JSON line the function printed (of the invocations retained), invocation after invocation."""
        with self._changed:
            return [line for printed in self._lines for line in printed]

    @property
    def metrics(self) -> dict[str, list[float]]:
        """Every EMF metric value the function emitted, by metric name."""
        values: dict[str, list[float]] = {}
        for line in self.lines:
            aws = line.get("_aws")
            if not aws:
                continue
            for directive in aws.get("CloudWatchMetrics", []):
                for metric in directive.get("Metrics", []):
                    value = line.get(metric["Name"])
                    values.setdefault(metric["Name"], []).extend(value if isinstance(value, list) else [value])
        return values

    @property
    def logs(self) -> list[dict[str, Any]]:
        return [line for line in self.lines if "_aws" not in line]


@dataclass
class _Sandbox:
    """What one running invocation sees: its environment and where its output goes."""

    environ: dict[str, str]
    sink: OutputSink


_SANDBOX: contextvars.ContextVar[_Sandbox | None] = contextvars.ContextVar("inferbus_sandbox", default=None)


class InvocationEnviron(MutableMapping[str, str]):
    """Stands in for ``os.environ``: inside an invocation, that invocation's environment (the
    process's plus the function's); outside, the process's own."""

    def __init__(self, process: MutableMapping[str, str]) -> None:
        self.process = process

    def _target(self) -> MutableMapping[str, str]:
        sandbox = _SANDBOX.get()
        return sandbox.environ if sandbox is not None else self.process

    def __getitem__(self, key: str) -> str:
        return self._target()[key]

    def __setitem__(self, key: str, value: str) -> None:
        self._target()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._target()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._target()))

    def __len__(self) -> int:
        return len(self._target())

    def copy(self) -> dict[str, str]:
        return dict(self._target())


class _StdoutRouter(io.TextIOBase):
    """Stands in for ``sys.stdout``: inside an invocation, its sink; outside, the real stdout.
    Powertools' Logger keeps the stream it saw at import, so handlers write here for good."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback

    def write(self, text: str) -> int:
        sandbox = _SANDBOX.get()
        if sandbox is not None:
            return sandbox.sink.write(text)
        return self.fallback.write(text)

    def flush(self) -> None:
        if _SANDBOX.get() is None:
            self.fallback.flush()


class _Routing:
    """Installs the routers for as long as any pipeline runs (counted: nested uses share them)."""

    users = 0
    saved: tuple[Any, Any] | None = None
    lock = threading.Lock()


def install_routing() -> None:
    """Route ``os.environ`` and ``sys.stdout`` per invocation (call :func:`uninstall_routing` after)."""
    with _Routing.lock:
        _Routing.users += 1
        if _Routing.users == 1:
            _Routing.saved = (os.environ, sys.stdout)
            os.environ = InvocationEnviron(os.environ)  # type: ignore[assignment]
            sys.stdout = _StdoutRouter(sys.stdout)


def uninstall_routing() -> None:
    with _Routing.lock:
        _Routing.users -= 1
        if _Routing.users == 0 and _Routing.saved is not None:
            os.environ = _Routing.saved[0]  # type: ignore[assignment]
            if isinstance(sys.stdout, _StdoutRouter):
                sys.stdout = sys.stdout.fallback
            _Routing.saved = None


class invocation_context:  # noqa: N801 - used as a context manager
    """Run the block as one invocation: ``os.environ`` reads ``environment`` over the process's,
    and what it prints goes to ``sink`` (nested uses, a handler invoking another, stack)."""

    def __init__(self, environment: Mapping[str, str], sink: OutputSink) -> None:
        process = os.environ.process if isinstance(os.environ, InvocationEnviron) else os.environ
        self.sandbox = _Sandbox({**process, **environment}, sink)

    def __enter__(self) -> OutputSink:
        if not isinstance(os.environ, InvocationEnviron):
            raise RuntimeError("invocations need install_routing() first (EmbeddedPipeline does it)")
        if not isinstance(sys.stdout, _StdoutRouter):  # replaced since (a test runner's capture): route it too
            sys.stdout = _StdoutRouter(sys.stdout)
        self._token = _SANDBOX.set(self.sandbox)
        return self.sandbox.sink

    def __exit__(self, *exc: object) -> None:
        _SANDBOX.reset(self._token)
