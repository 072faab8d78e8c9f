"""The embedded pipeline: synthesize, provision on moto, run handlers in-process, send, drain.

Example
-------
>>> from inferbus.runtime import EmbeddedPipeline
>>> with EmbeddedPipeline() as pipeline:  # doctest: +SKIP
...     pipeline.put_events(entries)
...     pipeline.drain()
...     results = pipeline.tapped_events()
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from .event_source import LocalEventSource
from .lambda_host import LocalFunction, add_code_root_to_path
from .provision import Deployment, provision
from .queue_ops import delete_messages, receive_all, release_messages
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


class EmbeddedPipeline:
    """The inferbus stack on moto, in this process.

    Parameters
    ----------
    template
        A synthesized template; default, synthesize the app with default settings.
    tap
        Also route every event on the bus to a local-only queue, so what the
        pipeline publishes can be read back (:meth:`tapped_events`). Default True.
    """

    def __init__(self, template: dict[str, Any] | None = None, *, tap: bool = True) -> None:
        self.template = template
        self.tap = tap
        self.deployment: Deployment | None = None
        self.functions: dict[str, LocalFunction] = {}
        self.event_sources: list[LocalEventSource] = []
        self._tap_url: str | None = None

    def __enter__(self) -> EmbeddedPipeline:
        # Credentials first: no client may be made outside the mock.
        self._saved_env = {key: os.environ.get(key) for key in FAKE_CREDENTIALS}
        os.environ.update(FAKE_CREDENTIALS)
        from moto import mock_aws  # imported late: moto is large and only this path needs it

        self._mock = mock_aws()
        self._mock.start()
        import boto3

        self.session = boto3.session.Session(region_name=REGION)
        self.events = self.session.client("events")
        self.sqs = self.session.client("sqs")
        template = self.template if self.template is not None else synthesize()
        self.deployment = provision(template, self.session)
        for logical_id, spec in self.deployment.functions.items():
            self.functions[logical_id] = LocalFunction(spec)
        for source in self.deployment.event_sources:
            queue = self.deployment.queue_by_arn(source.queue_arn)
            self.event_sources.append(LocalEventSource(source, queue, self.functions[source.function_logical_id], self.sqs))
        for function in self.functions.values():
            function.load()
        if self.tap:
            self._add_tap()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mock.stop()
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

    def pump(self) -> int:
        """Let every event source invoke once if its batch is ready; return records handed over."""
        return sum(invocation.records for source in self.event_sources if (invocation := source.pump()))

    def drain(self) -> None:
        """Deliver until every source queue is empty (successes deleted, failures in DLQs)."""
        for _ in range(MAX_DRAIN_ROUNDS):
            busy = False
            for source in self.event_sources:
                busy |= source.pump(wait=True) is not None
            if not busy and all(source.backlog() == 0 for source in self.event_sources):
                return
        raise RuntimeError(f"queues not drained after {MAX_DRAIN_ROUNDS} rounds")

    def tapped_events(self) -> list[dict[str, Any]]:
        """Every event the bus carried since the last call, as EventBridge delivered it."""
        if self._tap_url is None:
            raise RuntimeError("the pipeline was started with tap=False")
        messages = receive_all(self.sqs, self._tap_url)
        delete_messages(self.sqs, self._tap_url, messages)
        return [json.loads(message["Body"]) for message in messages]

    def dead_letters(self) -> dict[str, list[dict[str, Any]]]:
        """Messages in each dead-letter queue, by queue logical id (left in place: a DLQ is only looked at)."""
        assert self.deployment is not None
        result: dict[str, list[dict[str, Any]]] = {}
        for queue in self.deployment.dead_letter_queues:
            result[queue.logical_id] = receive_all(self.sqs, queue.url)
            release_messages(self.sqs, queue.url, result[queue.logical_id])
        return result
