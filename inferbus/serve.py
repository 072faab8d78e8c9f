"""``inferbus serve``: the embedded pipeline as a long-running local endpoint for any AWS client.

moto's application (its ``server`` extra), served with keep-alive connections
(:class:`inferbus.twin_http.TwinServer`), answers HTTP requests on the port from the same
in-process state the pipeline runs on: an event put with the AWS CLI, boto3 in another
process or ``inferbus send`` is matched by the stack's rules, consumed by the in-process
handlers and workflows, and their results land on the bus, where a client's own rule and
queue can watch them. One line is printed per processed batch and per finished execution.
Requests are answered as AWS answers them, refusals included (``runtime/aws_limits.py``: the
limits enforced and not; the bus's resource policy, for which a client is an untagged user).
A web console at ``/_inferbus/`` shows and acts on the same state (:mod:`inferbus.console`), and
the stack's ingest endpoint is served at ``/_inferbus/ingest/`` (:mod:`inferbus.twin_http`).

Example
-------
    inferbus serve                       # http://localhost:4566, Ctrl-C stops it
    aws --endpoint-url http://localhost:4566 --region us-east-1 events put-events --entries file://entries.json
    open http://localhost:4566/_inferbus/   # the console
"""

from __future__ import annotations

import json
import queue
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

DEFAULT_PORT = 4566
LOOPBACK = "127.0.0.1"
# What a server that runs for days keeps of what happened: each function's last invocations (with
# their logs) and each state machine's last finished executions; everything else is forgotten.
RETAINED = 100
# How long it remembers an event's id to drop a duplicate (its claims) and keeps archived events for
# replays: AWS keeps claims for the template's lifetime (45 days by default), which under a steady
# load is memory without bound here (about 1.9 KB a claim in moto).
DEFAULT_RETENTION_S = 3600


class ServeError(RuntimeError):
    """The endpoint cannot start; the message says what to do."""


@dataclass(frozen=True)
class LogLine:
    """One line of the log: a processed batch or a finished execution."""

    kind: str  # "batch", "execution" or "delivery" (a rule's delivery of a client's event that failed)
    component: str
    detail: dict[str, Any]

    def line(self, as_json: bool) -> str:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        if as_json:
            return json.dumps({"time": stamp, "kind": self.kind, "component": self.component, **self.detail})
        fields = "  ".join(f"{key}={value}" for key, value in self.detail.items() if value is not None)
        return f"{stamp}  {self.kind:<9}  {self.component:<24}  {fields}"


def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def serve(*, port: int = DEFAULT_PORT, host: str = LOOPBACK, template: dict[str, Any] | None = None,
          as_json: bool = False, out: TextIO = sys.stdout, ready: Callable[[str], None] | None = None,
          until: Callable[[], bool] | None = None, retention_s: float = DEFAULT_RETENTION_S) -> None:
    """Run the pipeline behind an endpoint until Ctrl-C (or SIGTERM, or ``until()`` is true).

    Parameters
    ----------
    port, host
        Where to listen (default ``127.0.0.1:4566``).
    template
        A synthesized template; default, synthesize the app.
    as_json
        One JSON object per line instead of text.
    ready
        Called with the endpoint URL once clients may connect.
    retention_s
        How long claims and archived events are kept (``EmbeddedPipeline``'s ``retention_s``); the
        template's lifetime when it is shorter. Default one hour.

    Raises
    ------
    ServeError
        The port is taken.
    """
    from inferbus.model.names import INGEST_URL_OUTPUT, QUEUE_URL, UNROUTED_CHECK_ID, UNROUTED_CHECK_NAME

    from .console import CONSOLE_PATH, ConsoleApp, ConsoleState
    from .local import LocalPipeline
    from .template_cache import TemplateCache
    from .runtime.moto_patches import execution_status
    from .runtime.deliveries import DELIVERIES, DeliveryFailure
    from .runtime.provision import register_stack
    from .twin_http import INGEST_PATH, TwinRoutes, twin_server

    if not port_free(host, port):
        raise ServeError(f"port {port} is in use: stop what listens there or pass --port")
    lines: queue.Queue[LogLine] = queue.Queue()
    stopping = {"signal": False}

    def on_terminate(*_: object) -> None:
        stopping["signal"] = True

    previous = signal.signal(signal.SIGTERM, on_terminate) if _main_thread() else None
    # The tap feeds the console's recent events; with ``retain`` it keeps a window when nobody reads it.
    with LocalPipeline(template, retain=RETAINED, retention_s=retention_s, template_cache=TemplateCache()) as pipeline:
        # By event source: a kafka or rabbitmq consumer's reads a broker, not an SQS queue.
        named = {pipeline.consumer(c.name).source: c.name for c in pipeline.declarations.consumers}
        named[pipeline.event_source(pipeline.outputs[f"{UNROUTED_CHECK_ID}{QUEUE_URL}"])] = UNROUTED_CHECK_NAME

        def batch_done(source: Any, invocation: Any) -> None:
            lines.put(LogLine("batch", named.get(source, source.channel.name), {
                "records": invocation.records, "failed": len(invocation.failed_ids),
                "ms": round(invocation.duration_ms, 1), "error": invocation.error}))

        def execution_done(arn: str) -> None:
            try:
                component = pipeline.workflow_of(arn)
            except KeyError:
                component = arn.split(":")[-2]  # a state machine a client created
            status, seconds = execution_status(arn)
            lines.put(LogLine("execution", component, {"status": status, "ms": round(seconds * 1000, 1),
                                                        "name": arn.rsplit(":", 1)[-1]}))

        def delivery_failed(failure: DeliveryFailure) -> None:
            lines.put(LogLine("delivery", failure.rule_arn.rsplit("/", 1)[-1], {
                "event": failure.event_id, "failed": failure.reason}))

        for source in pipeline.event_sources:
            source.on_invocation = batch_done
        DELIVERIES.on_failure = delivery_failed
        pipeline.on_execution_end = execution_done
        url = f"http://{'localhost' if host == LOOPBACK else host}:{port}"
        ingest = _ingest_of(pipeline)
        if ingest is not None:
            pipeline.outputs[INGEST_URL_OUTPUT] = f"{url}{INGEST_PATH}"  # in AWS, the function URL
        region = pipeline.session.region_name
        state = ConsoleState(pipeline)
        # In front of moto's app: the console (/_inferbus/), then the twin's own routes (ingest, 404s).
        # describe-stacks answers with the outputs, as in AWS: the stack is made at the first CloudFormation call.
        stack = {"cloudformation": lambda: register_stack(pipeline.session, pipeline.stack_name, pipeline.outputs)}
        server = twin_server(lambda app: ConsoleApp(state, TwinRoutes(app, region=region, ingest=ingest,
                                                                           deliveries=DELIVERIES, before_first=stack),
                                                    host=host, port=port), host=host, port=port)
        server.start()
        pipeline.start()
        _print(out, as_json, {"kind": "ready", "endpoint": url, "console": url + CONSOLE_PATH,
                              "region": pipeline.session.region_name, "bus": pipeline.bus_name, "outputs": pipeline.outputs},
               f"inferbus serve: {url} (region {pipeline.session.region_name}, bus {pipeline.bus_name}), "
               f"console {url}{CONSOLE_PATH}; Ctrl-C stops")
        if ready is not None:
            ready(url)
        try:
            while not stopping["signal"] and not (until is not None and until()):
                try:
                    item = lines.get(timeout=0.2)
                except queue.Empty:
                    continue
                print(item.line(as_json), file=out, flush=True)
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()
            pipeline.stop()  # delivers what clients put before it stops
            DELIVERIES.on_failure = None
            while not lines.empty():
                print(lines.get().line(as_json), file=out, flush=True)
            _print(out, as_json, {"kind": "stopped"}, "inferbus serve: stopped")
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)


def _ingest_of(pipeline: Any) -> Any:
    """The ingest function as the twin's HTTP route calls it, or ``None`` when the template has none."""
    from inferbus.model.names import INGEST_FUNCTION_OUTPUT

    if INGEST_FUNCTION_OUTPUT not in pipeline.outputs:
        return None

    def ingest(path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        answer = pipeline.ingest(body, headers, path=path)
        payload = answer.get("body") or ""
        if answer.get("isBase64Encoded"):
            import base64

            return answer["statusCode"], answer.get("headers", {}), base64.b64decode(payload)
        return answer["statusCode"], answer.get("headers", {}), payload.encode() if isinstance(payload, str) else payload

    return ingest


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _print(out: TextIO, as_json: bool, record: dict[str, Any], text: str) -> None:
    print(json.dumps({"time": datetime.now(UTC).isoformat(timespec="milliseconds"), **record}) if as_json else text,
          file=out, flush=True)
