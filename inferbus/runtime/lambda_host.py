"""Run a template's Lambda function in-process, from the source tree.

The handler is imported by the template's ``Handler`` property from the code root (what the
bundle's root is on Lambda: :class:`CodeRoot` makes its top-level packages importable) and
runs with ``LAMBDA_TASK_ROOT`` set to the task root (where its data files sit, as in the
bundle). Its environment is the template's, plus what the caller adds (:class:`HostConfig`).
What it prints (JSON logs and EMF metrics) is captured per function.

Handlers run one at a time in the whole process (:data:`INVOCATION_LOCK`): an event
source invokes on the caller's thread while Step Functions executions invoke on moto's
worker threads, and a running handler owns ``os.environ`` and ``sys.stdout``. The lock is
re-entrant, so a handler that invokes another function in-process does not deadlock; no
code that holds it may wait for another thread that needs it (nothing here does: a
handler's ``put_events`` only enqueues, executions are started and polled outside it).
"""

from __future__ import annotations

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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .specs import FunctionSpec

# Keys a handler's environment added to os.environ. They stay (with their last value) until
# the pipeline stops: botocore clients made on Step Functions' threads iterate os.environ
# (urllib's proxy lookup), and a key removed during that iteration makes it raise KeyError.
# Every key a handler reads is in its own environment, so a value left over is never read.
ADDED_TO_ENVIRONMENT: set[str] = set()
# What Lambda reports when it ends an invocation itself (HostConfig.service_failures maps
# exceptions that stand for these to them).
TIMED_OUT = ("Sandbox.Timedout", "Task timed out after {timeout_s}.00 seconds")
RUNTIME_EXITED = ("Runtime.ExitError", "Runtime exited unexpectedly")
# One handler at a time in the whole process: see the module docstring.
INVOCATION_LOCK = threading.RLock()


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
    """

    code_root: Path
    task_root: Path
    environment: Mapping[str, str] = field(default_factory=dict)
    service_failures: Mapping[str, tuple[str, str]] = field(default_factory=dict)


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
    """Stands in for ``sys.stdout`` while handlers run; keeps each JSON line it is given."""

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
    Step Functions tasks); ``waited_ms`` is how long it queued for :data:`INVOCATION_LOCK`
    (locally one handler runs at a time, so a Task's time in its state includes this)."""

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


@dataclass
class LocalFunction:
    spec: FunctionSpec
    host: HostConfig
    sink: OutputSink = field(default_factory=OutputSink)
    invocations: list[Invocation] = field(default_factory=list)
    overrides: dict[str, str] = field(default_factory=dict)
    _handler: Any = None

    @property
    def environment(self) -> dict[str, str]:
        """The environment the handler runs with: the template's, then :meth:`set_environment`'s."""
        return {**self.host.environment, **self.spec.environment, **self.overrides,
                "AWS_LAMBDA_FUNCTION_NAME": self.spec.name, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.spec.memory_mb), "LAMBDA_TASK_ROOT": str(self.host.task_root)}

    @property
    def handler(self) -> Any:
        """The handler object, as imported (``None`` before the first load)."""
        return self._handler

    def set_environment(self, **variables: str) -> None:
        """Override environment variables for every later invocation (the template is unchanged).

        As on Lambda after a configuration change, a handler that read a variable at import
        sees the new value only after a cold start: call :meth:`load` for one.

        Examples
        --------
        >>> pipeline.functions["ScoreFunction"].set_environment(FAULT_INJECTION="timeout")  # doctest: +SKIP
        """
        with INVOCATION_LOCK:  # never change it under a running handler
            self.overrides.update({key: str(value) for key, value in variables.items()})

    def _with_environment(self):  # noqa: ANN202
        return _EnvAndStdout(self.environment, self.sink)

    def load(self) -> None:
        """Import the handler fresh (a cold start), inside its environment."""
        module_name, _, attribute = self.spec.handler.rpartition(".")
        CodeRoot(self.host.code_root).install()
        with INVOCATION_LOCK, self._with_environment():
            sys.modules.pop(module_name, None)
            self._handler = getattr(importlib.import_module(module_name), attribute)

    def invoke(self, event: Any, *, trigger: str = "sqs") -> tuple[Any, Invocation]:
        """Call the handler; an exception is the invocation's error, as Lambda reports it.

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
        """
        queued = time.perf_counter()
        with INVOCATION_LOCK:
            waited_ms = (time.perf_counter() - queued) * 1000
            if self._handler is None:
                self.load()
            return self._invoke_locked(event, trigger, waited_ms)

    def _invoke_locked(self, event: Any, trigger: str, waited_ms: float) -> tuple[Any, Invocation]:
        context = LocalContext(self.spec)
        started = time.perf_counter()
        response, error, error_type, error_message, stack = None, None, None, None, []
        with self._with_environment():
            try:
                response = self._handler(event, context)
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
                self.sink.lines.append({"level": "ERROR", "errorType": error_type, "errorMessage": error_message,
                                        "stackTrace": stack, "requestId": context.aws_request_id})
        records = event.get("Records", []) if isinstance(event, dict) else []
        failures = response.get("batchItemFailures", []) if isinstance(response, dict) else []
        failed = [item["itemIdentifier"] for item in failures]
        invocation = Invocation(context.aws_request_id, len(records), failed, error, (time.perf_counter() - started) * 1000,
                                trigger, error_type, error_message, stack, waited_ms)
        self.invocations.append(invocation)
        return response, invocation

    @property
    def metrics(self) -> dict[str, list[float]]:
        """Every EMF metric value the function emitted, by metric name."""
        values: dict[str, list[float]] = {}
        for line in self.sink.lines:
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
        return [line for line in self.sink.lines if "_aws" not in line]


class _StdoutProxy(io.TextIOBase):
    """Process-wide stand-in for stdout. Powertools' Logger keeps the stream it saw at import,
    so handlers imported once keep writing here, and here forwards to the running function's sink.

    Only the thread running the handler writes to its sink: while an execution thread runs
    a handler, what another thread prints goes where stdout went before (``fallback``)."""

    target: OutputSink | None = None
    owner: int | None = None
    fallback: Any = None

    def write(self, text: str) -> int:
        if self.target is not None and threading.get_ident() == self.owner:
            return self.target.write(text)
        return (self.fallback or sys.__stdout__).write(text)


STDOUT_PROXY = _StdoutProxy()


class _EnvAndStdout:
    """Set the function's environment and route stdout to its sink, then restore both."""

    def __init__(self, environment: dict[str, str], sink: OutputSink) -> None:
        self.environment = environment
        self.sink = sink

    def __enter__(self) -> None:
        self._saved_env = {key: os.environ.get(key) for key in self.environment}
        os.environ.update(self.environment)
        self._saved_stdout = sys.stdout
        self._saved_proxy = (STDOUT_PROXY.target, STDOUT_PROXY.owner, STDOUT_PROXY.fallback)
        if sys.stdout is not STDOUT_PROXY:
            STDOUT_PROXY.fallback = sys.stdout
        STDOUT_PROXY.target, STDOUT_PROXY.owner = self.sink, threading.get_ident()
        sys.stdout = STDOUT_PROXY

    def __exit__(self, *exc: object) -> None:
        sys.stdout = self._saved_stdout
        STDOUT_PROXY.target, STDOUT_PROXY.owner, STDOUT_PROXY.fallback = self._saved_proxy
        for key, value in self._saved_env.items():
            if value is None:
                ADDED_TO_ENVIRONMENT.add(key)  # left in place: see ADDED_TO_ENVIRONMENT
            else:
                os.environ[key] = value


def remove_added_environment() -> None:
    """Remove what handlers' environments added; call once no other thread may run."""
    for key in ADDED_TO_ENVIRONMENT:
        os.environ.pop(key, None)
    ADDED_TO_ENVIRONMENT.clear()
