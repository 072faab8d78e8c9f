"""inferbus on the embedded runtime: the runtime knows AWS; this module adds what is inferbus's.

- where the code is (``functions/``, the bundle's root) and its data (``models/`` under the
  repository root, ``LAMBDA_TASK_ROOT``);
- what inferbus's injected faults stand for (a timeout, a dead runtime: reported as Lambda
  reports them; the faults themselves are wrapped around a function by :mod:`inferbus.chaos.faults`);
- what to expire when an invocation fails as a whole (its idempotency claims, :mod:`.claims`);
- how to find each declared component: by the stack outputs its declaration names.

Example
-------
>>> with LocalPipeline() as pipeline:  # doctest: +SKIP
...     consumer = pipeline.consumer("image-classifier")
...     pipeline.put_events(entries)
...     pipeline.drain()
...     consumer.function.invocations
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferbus.model.declarations import Pipeline
from inferbus.model.names import (
    DEAD_LETTER_QUEUE_URL,
    EVENT_BUS_NAME_OUTPUT,
    FUNCTION_NAME,
    INGEST_FUNCTION_OUTPUT,
    INVALID_EVENTS_OUTPUT,
    QUEUE_URL,
    SOURCE_TAG,
    STATE_MACHINE_ARN,
)
from inferbus.model.settings import InferbusSettings

from .chaos.faults import InjectedCrash, InjectedTimeout
from .claims import expire_claims_of
from .runtime import RUNTIME_EXITED, TIMED_OUT, EmbeddedPipeline, HostConfig, LocalFunction, StateMachineInfo
from .runtime.event_source import LocalEventSource
from .runtime.function_url import function_url_event
from .template_cache import TemplateCache

REPO_ROOT = Path(__file__).resolve().parents[1]
HOST = HostConfig(
    code_root=REPO_ROOT / "functions",
    task_root=REPO_ROOT,
    environment={
        "POWERTOOLS_TRACE_DISABLED": "true",  # no X-Ray daemon locally
        "POWERTOOLS_DEV": "false",
    },
    service_failures={InjectedTimeout.__name__: TIMED_OUT, InjectedCrash.__name__: RUNTIME_EXITED},
)


@dataclass(frozen=True)
class LocalConsumer:
    """A declared consumer, running: its function, the poller that feeds it, its queues."""

    name: str
    function: LocalFunction
    source: LocalEventSource
    queue_url: str
    dead_letter_queue_url: str


class LocalPipeline(EmbeddedPipeline):
    """The inferbus stack on moto, in this process, with its components found by declaration.

    Parameters
    ----------
    template
        A synthesized template; default, synthesize the app (``settings``, ``overrides``).
    settings
        Its settings (the stack name comes from them); default, the defaults.
    overrides
        Component settings to synthesize with (``{"image-classifier.batch_size": 10}``).
    pipeline
        The declarations; default, ``pipeline/``.
    tap
        Read back every event on the bus (:meth:`tapped_events`). Default True.
    retain
        Keep only a window of invocations and finished executions (see :class:`EmbeddedPipeline`);
        default, everything.
    retention_s
        Remember claims and archived events only this long (see :class:`EmbeddedPipeline`); default,
        the template's lifetimes.
    template_cache
        Without ``template``: keep the synthesized template there, and take it back while nothing it
        comes from changed (:class:`~inferbus.template_cache.TemplateCache`); ``template_kept`` says which.
        Default, synthesize every time.
    """

    def __init__(self, template: dict[str, Any] | None = None, *, settings: InferbusSettings | None = None,
                 overrides: dict[str, Any] | None = None, pipeline: Pipeline | None = None, tap: bool = True,
                 retain: int | None = None, retention_s: float | None = None,
                 template_cache: TemplateCache | None = None) -> None:
        from pipeline import load_pipeline

        self.settings = settings or InferbusSettings()
        self.declarations = pipeline or load_pipeline()
        self.template_kept = False
        if template is None:
            declared = {"settings": self.settings, "pipeline": self.declarations, "overrides": overrides}
            if template_cache is None:
                template = self._synthesize(declared)
            else:
                template, self.template_kept = template_cache.template(declared, lambda: self._synthesize(declared))
        super().__init__(template, stack_name=self.settings.staged(self.settings.stack_name), host=HOST,
                         after_failure=self._expire_claims, tap=tap, retain=retain,
                         retention_s=retention_s)
        self._dynamodb: Any = None
        self.seeded: dict[str, int] = {}  # state table -> items its seed wrote at start

    @staticmethod
    def _synthesize(declared: dict[str, Any]) -> dict[str, Any]:
        from .runtime.preload import preload_in_background
        from .template import synthesize

        preload_in_background()  # while Node synthesizes: the runtime's slowest imports
        return synthesize(declared["settings"], overrides=declared["overrides"], pipeline=declared["pipeline"])

    def _start(self) -> None:
        from .state_seed import seed_tables

        super()._start()
        names = {table.name: self.outputs[table.output_key] for table in self.declarations.state_tables}
        self.seeded = seed_tables(self.session.client("dynamodb"), self.declarations.state_tables, names, REPO_ROOT)

    def state_table_name(self, name: str) -> str:
        """The physical name of the declared state table ``name``."""
        for table in self.declarations.state_tables:
            if table.name == name:
                return self.outputs[table.output_key]
        raise KeyError(f"no state table named {name!r} (declared: {', '.join(t.name for t in self.declarations.state_tables)})")

    def _expire_claims(self, function: LocalFunction, messages: list[dict[str, Any]], failed_at_ms: int) -> int:
        if self._dynamodb is None:
            self._dynamodb = self.session.client("dynamodb")
        return expire_claims_of(self._dynamodb, function.spec.environment, messages, failed_at_ms)

    # -- the shared core -----------------------------------------------------------------------

    @property
    def bus_name(self) -> str:
        return self.outputs[EVENT_BUS_NAME_OUTPUT]

    def producer_role(self, source: str) -> str:
        """The ARN of the role the bus policy reserves ``source`` to (its ``inferbus-source`` tag, from the template).

        ``pipeline.put_events(entries, as_role=pipeline.producer_role(source))`` puts a result as its producer would.
        """
        assert self.deployment is not None
        roles = [arn for arn, tags in self.deployment.role_tags.items() if tags.get(SOURCE_TAG) == source]
        if not roles:
            raise KeyError(f"no role of the template carries {SOURCE_TAG}={source}: the bus reserves no such source")
        return roles[0]

    @property
    def invalid_events_url(self) -> str:
        """Where events that break their contract wait, with the reason."""
        return self.outputs[INVALID_EVENTS_OUTPUT]

    def ingest(self, body: bytes | str | None, headers: dict[str, str], *, path: str = "/events") -> dict[str, Any]:
        """POST ``body`` to the HTTP ingest endpoint, as its function URL would; return the HTTP answer
        (``statusCode``, ``headers``, ``body``). The URL and its IAM auth are cloud-only."""
        function = self.function(self.outputs[INGEST_FUNCTION_OUTPUT])
        response, invocation = function.invoke(function_url_event("POST", path, headers, body), trigger="invoke")
        if invocation.error:
            return {"statusCode": 502, "headers": {}, "body": json.dumps({"error": invocation.error})}
        return response

    def invalid_events(self) -> list[dict[str, Any]]:
        """What the invalid-events queue holds (left in place), each message's body parsed."""
        return [json.loads(message["Body"]) for message in self.peek(self.invalid_events_url)]

    # -- declared components -------------------------------------------------------------------

    def consumer(self, name: str) -> LocalConsumer:
        """The declared consumer ``name``, running."""
        declaration = self.declarations.component(name)
        function = self.function(self.outputs[declaration.output_key(FUNCTION_NAME)])
        queue_url = self.outputs.get(declaration.output_key(QUEUE_URL), "")  # none: it reads a broker (kafka, rabbitmq)
        source = (self.event_source(queue_url) if queue_url
                  else next(source for source in self.event_sources if source.function is function))
        return LocalConsumer(name, function, source, queue_url, self.outputs.get(declaration.output_key(DEAD_LETTER_QUEUE_URL), ""))

    def state_machine(self, workflow: str) -> StateMachineInfo:
        """The state machine of the declared workflow ``workflow``."""
        arn = self.outputs[self.declarations.component(workflow).output_key(STATE_MACHINE_ARN)]
        return next(machine for machine in self.state_machines.values() if machine.arn == arn)

    def task_function(self, workflow: str, stem: str) -> LocalFunction:
        """The function the workflow's ASL invokes as ``${<stem>FunctionArn}`` (``"Accept"`` included)."""
        machine = self.state_machine(workflow)
        return self.function(machine.substitutions[f"{stem}FunctionArn"])

    def workflow_of(self, state_machine_arn: str) -> str:
        """The declared workflow a state machine (or one of its executions' ARNs) belongs to."""
        for workflow in self.declarations.workflows:
            arn = self.outputs[workflow.output_key(STATE_MACHINE_ARN)]
            if state_machine_arn == arn or state_machine_arn.startswith(arn.replace(":stateMachine:", ":execution:") + ":"):
                return workflow.name
        raise KeyError(f"{state_machine_arn} belongs to no declared workflow")

    def route_queue_url(self, name: str) -> str:
        """The queue the declared route ``name`` fills."""
        return self.outputs[self.declarations.component(name).output_key(QUEUE_URL)]

    def review_queue_url(self, workflow: str) -> str:
        """The queue people read for the declared workflow ``workflow``."""
        declaration = self.declarations.component(workflow)
        key = getattr(declaration, "review_queue_output", None)
        if key is None:
            raise KeyError(f"workflow {workflow} declares no review queue")
        return self.outputs[key]

