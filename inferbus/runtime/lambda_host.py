"""Run a template's Lambda function in-process, from the source tree.

The handler is imported by the template's ``Handler`` property with ``functions/`` on
``sys.path`` (the bundle root on Lambda) and the repository root as ``LAMBDA_TASK_ROOT``
(where ``models/`` sits, as it does in the bundle). Its environment is the template's.
What it prints (Powertools JSON logs and EMF metrics) is captured per function.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import sys
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .provision import FunctionSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS_DIR = REPO_ROOT / "functions"
LOCAL_ENV = {
    "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
    "LAMBDA_TASK_ROOT": str(REPO_ROOT),
    "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon locally
    "POWERTOOLS_DEV": "false",
}


def add_code_root_to_path() -> None:
    """Make ``functions/`` importable, as the bundle root is on Lambda."""
    if str(FUNCTIONS_DIR) not in sys.path:
        sys.path.insert(0, str(FUNCTIONS_DIR))


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
    request_id: str
    records: int
    failed_ids: list[str]
    error: str | None
    duration_ms: float


@dataclass
class LocalFunction:
    spec: FunctionSpec
    sink: OutputSink = field(default_factory=OutputSink)
    invocations: list[Invocation] = field(default_factory=list)
    _handler: Any = None

    def _environment(self) -> dict[str, str]:
        return {**LOCAL_ENV, **self.spec.environment, "AWS_LAMBDA_FUNCTION_NAME": self.spec.name,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.spec.memory_mb)}

    def _with_environment(self):  # noqa: ANN202
        return _EnvAndStdout(self._environment(), self.sink)

    def load(self) -> None:
        """Import the handler fresh (a cold start), inside its environment."""
        module_name, _, attribute = self.spec.handler.rpartition(".")
        add_code_root_to_path()
        with self._with_environment():
            sys.modules.pop(module_name, None)
            self._handler = getattr(importlib.import_module(module_name), attribute)

    def invoke(self, event: dict[str, Any]) -> tuple[dict[str, Any] | None, Invocation]:
        """Call the handler; an exception is the invocation's error, as Lambda reports it."""
        if self._handler is None:
            self.load()
        context = LocalContext(self.spec)
        started = time.perf_counter()
        response, error = None, None
        with self._with_environment():
            try:
                response = self._handler(event, context)
            except Exception as exc:  # noqa: BLE001 - a handler error fails the invocation, as on Lambda
                error = f"{type(exc).__name__}: {exc}"
                # What the Lambda runtime logs for an unhandled error.
                self.sink.lines.append({"level": "ERROR", "errorType": type(exc).__name__, "errorMessage": str(exc),
                                        "stackTrace": traceback.format_exc().splitlines(), "requestId": context.aws_request_id})
        failed = [item["itemIdentifier"] for item in (response or {}).get("batchItemFailures", [])]
        invocation = Invocation(context.aws_request_id, len(event.get("Records", [])), failed, error,
                                (time.perf_counter() - started) * 1000)
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
    so handlers imported once keep writing here, and here forwards to the running function's sink."""

    target: OutputSink | None = None

    def write(self, text: str) -> int:
        return (self.target or sys.__stdout__).write(text)


STDOUT_PROXY = _StdoutProxy()


class _EnvAndStdout:
    """Set the function's environment and route stdout to its sink, then restore both."""

    def __init__(self, environment: dict[str, str], sink: OutputSink) -> None:
        self.environment = environment
        self.sink = sink

    def __enter__(self) -> None:
        self._saved_env = {key: os.environ.get(key) for key in self.environment}
        os.environ.update(self.environment)
        self._saved_stdout, self._saved_target = sys.stdout, STDOUT_PROXY.target
        STDOUT_PROXY.target = self.sink
        sys.stdout = STDOUT_PROXY

    def __exit__(self, *exc: object) -> None:
        sys.stdout, STDOUT_PROXY.target = self._saved_stdout, self._saved_target
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
